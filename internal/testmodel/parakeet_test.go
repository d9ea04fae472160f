package testmodel_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testmodel"
)

const defaultParakeetCLI = "/root/.cache/yazses/whisper.cpp-1.9.1/build/bin/parakeet-cli"

// parakeetCLI returns whisper.cpp's Parakeet CLI: $YAZ_PARAKEET_CLI (set by
// the Makefile and scripts/env.sh), else the path `make setup` builds. A
// missing binary fails the test rather than skipping it.
func parakeetCLI(t *testing.T) string {
	t.Helper()
	path := os.Getenv("YAZ_PARAKEET_CLI")
	if path == "" {
		path = defaultParakeetCLI
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("parakeet-cli not found at %s (set YAZ_PARAKEET_CLI or run `make setup`): %v", path, err)
	}
	return path
}

func TestParakeetHparams(t *testing.T) {
	// NVIDIA's parakeet-tdt-0.6b-v3 model card and NeMo config, as the
	// converter writes them (n_audio_ctx 5000).
	want := testmodel.ParakeetHparams{NVocab: 8192, NAudioCtx: 5000, NAudioState: 1024, NAudioHead: 8, NAudioLayer: 24,
		NMels: 128, Ftype: 1, NFFT: 512, SubsamplingFactor: 8, NSubsamplingChannels: 256, NConvKernel: 9,
		NPredDim: 640, NPredLayers: 2, NTDTDurations: 5, NMaxTokens: 10}
	got, err := testmodel.ParakeetTDT06B.ParakeetHparams()
	if err != nil || got != want {
		t.Errorf("ParakeetTDT06B.ParakeetHparams() = %+v, %v; want %+v", got, err, want)
	}
	for _, s := range testmodel.ParakeetSizes() {
		if !s.Parakeet() {
			t.Errorf("%v.Parakeet() = false", s)
		}
		if _, err := s.Hparams(); err == nil {
			t.Errorf("%v.Hparams() succeeded for a Parakeet size", s)
		}
		if got, err := testmodel.ParseSize(s.String()); err != nil || got != s {
			t.Errorf("ParseSize(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, s := range testmodel.Sizes() {
		if _, err := s.ParakeetHparams(); err == nil || s.Parakeet() {
			t.Errorf("%v: a whisper size passes for a Parakeet one", s)
		}
	}
}

// parakeetFile is a parsed Parakeet file.
type parakeetFile struct {
	H         testmodel.ParakeetHparams
	MelRows   int32
	MelCols   int32
	Window    []float32
	Durations []uint32
	Pieces    []string
	Tensors   []ptensor
}

type ptensor struct {
	Name string
	Type int32
	Ne   []int32
}

// parseParakeet reads a Parakeet file the way src/parakeet.cpp's loader
// does, checking that every byte is accounted for.
func parseParakeet(t *testing.T, b []byte) parakeetFile {
	t.Helper()
	r := bytes.NewReader(b)
	le := binary.LittleEndian
	rd := func(v any) {
		t.Helper()
		if err := binary.Read(r, le, v); err != nil {
			t.Fatalf("read at byte %d: %v", len(b)-r.Len(), err)
		}
	}
	var magic uint32
	rd(&magic)
	if magic != 0x67676d6c {
		t.Fatalf("magic %#x", magic)
	}
	var p parakeetFile
	rd(&p.H)
	rd(&p.MelRows)
	rd(&p.MelCols)
	if _, err := r.Seek(int64(p.MelRows)*int64(p.MelCols)*4, io.SeekCurrent); err != nil {
		t.Fatal(err)
	}
	var nw int32
	rd(&nw)
	p.Window = make([]float32, nw)
	rd(p.Window)
	p.Durations = make([]uint32, p.H.NTDTDurations)
	rd(p.Durations)
	var nv int32
	rd(&nv)
	for range nv {
		var n uint32
		rd(&n)
		s := make([]byte, n)
		rd(s)
		p.Pieces = append(p.Pieces, string(s))
	}
	for r.Len() > 0 {
		var hdr [3]int32
		rd(&hdr)
		ne := make([]int32, hdr[0])
		rd(ne)
		name := make([]byte, hdr[1])
		rd(name)
		elems := int64(1)
		for _, d := range ne {
			elems *= int64(d)
		}
		size := map[int32]int64{0: 4, 1: 2}[hdr[2]]
		if size == 0 {
			t.Fatalf("tensor %s has type %d", name, hdr[2])
		}
		if _, err := r.Seek(elems*size, io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
		if r.Len() < 0 {
			t.Fatalf("tensor %s runs past the end", name)
		}
		p.Tensors = append(p.Tensors, ptensor{Name: string(name), Type: hdr[2], Ne: ne})
	}
	return p
}

// TestParakeetFormat checks the parakeet-mini file against what
// src/parakeet.cpp's loader reads: the header, a 257-bin mel filterbank,
// NeMo's 400-sample window, the durations, a vocabulary of distinct pieces
// with <unk> first, and exactly the tensors the loader creates (12 for the
// subsampling stage, 29 per encoder layer, 1 + 3 per prediction layer, 6
// for the joint network), f16 where the loader uses the file's type and f32
// elsewhere.
func TestParakeetFormat(t *testing.T) {
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.ParakeetMini, 3); err != nil {
		t.Fatal(err)
	}
	p := parseParakeet(t, b.Bytes())
	h, _ := testmodel.ParakeetMini.ParakeetHparams()
	if p.H != h {
		t.Errorf("header %+v, want %+v", p.H, h)
	}
	if p.MelRows != h.NMels || p.MelCols != h.NFFT/2+1 {
		t.Errorf("mel filters %d×%d, want %d×%d", p.MelRows, p.MelCols, h.NMels, h.NFFT/2+1)
	}
	if len(p.Window) != 400 || p.Window[0] != 0 || math.Abs(float64(p.Window[200]-1)) > 1e-4 {
		t.Errorf("window of %d samples, want a 400-sample Hann window", len(p.Window))
	}
	if diff := cmp.Diff([]uint32{0, 1, 2, 3, 4}, p.Durations); diff != "" {
		t.Errorf("durations (-want +got):\n%s", diff)
	}
	if len(p.Pieces) != int(h.NVocab) || p.Pieces[0] != "<unk>" {
		t.Fatalf("%d pieces starting %q, want %d starting <unk>", len(p.Pieces), p.Pieces[:1], h.NVocab)
	}
	seen := map[string]bool{}
	starts := 0
	for i, s := range p.Pieces {
		if seen[s] || s == "" {
			t.Errorf("piece %d %q is empty or repeated", i, s)
		}
		seen[s] = true
		if strings.HasPrefix(s, "\u2581") {
			starts++
		}
	}
	if starts < len(p.Pieces)/2 {
		t.Errorf("%d of %d pieces start a word, want most", starts, len(p.Pieces))
	}
	if want := 12 + 29*int(h.NAudioLayer) + 1 + 3*int(h.NPredLayers) + 6; len(p.Tensors) != want {
		t.Errorf("%d tensors, want %d", len(p.Tensors), want)
	}
	byName := map[string]ptensor{}
	for _, tn := range p.Tensors {
		if _, dup := byName[tn.Name]; dup {
			t.Errorf("tensor %s twice", tn.Name)
		}
		byName[tn.Name] = tn
	}
	s, c, v := h.NAudioState, h.NSubsamplingChannels, h.NVocab
	for _, w := range []ptensor{
		{"encoder.pre_encode.out.weight", 1, []int32{(h.NMels / 8) * c, s}},
		{"encoder.pre_encode.conv.0.weight", 0, []int32{3, 3, 1, c}},
		{"encoder.pre_encode.conv.6.bias", 0, []int32{1, 1, c, 1}},
		{"encoder.layers.1.feed_forward2.linear1.weight", 1, []int32{s, 4 * s}},
		{"encoder.layers.1.conv.depthwise_conv.weight", 0, []int32{h.NConvKernel, s}},
		{"encoder.layers.0.conv.batch_norm.num_batches_tracked", 0, []int32{}},
		{"encoder.layers.0.self_attn.pos_bias_u", 0, []int32{s / h.NAudioHead, h.NAudioHead}},
		{"encoder.layers.0.norm_out.bias", 0, []int32{s}},
		{"decoder.prediction.embed.weight", 1, []int32{h.NPredDim, v + 1}},
		{"decoder.prediction.dec_rnn.lstm.weight_hh_l1", 1, []int32{h.NPredDim, 4 * h.NPredDim}},
		{"decoder.prediction.dec_rnn.lstm.bias_h_l1", 0, []int32{4 * h.NPredDim}},
		{"joint.enc.weight", 1, []int32{s, h.NPredDim}},
		{"joint.joint_net.2.weight", 1, []int32{h.NPredDim, v + h.NTDTDurations + 1}},
		{"joint.joint_net.2.bias", 0, []int32{v + h.NTDTDurations + 1}},
	} {
		if diff := cmp.Diff(w, byName[w.Name]); diff != "" {
			t.Errorf("tensor %s (-want +got):\n%s", w.Name, diff)
		}
	}
}

func TestParakeetDeterministic(t *testing.T) {
	sum := func(seed int64) string {
		h := sha256.New()
		if err := testmodel.Write(h, testmodel.ParakeetMini, seed); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", h.Sum(nil))
	}
	a, b, c := sum(1), sum(1), sum(2)
	if a != b {
		t.Error("the same seed wrote different bytes")
	}
	if a == c {
		t.Error("different seeds wrote the same bytes")
	}
}

// TestParakeetCLI loads the generated model into whisper.cpp's own
// parakeet-cli and transcribes real speech: the file loads, inference ends
// normally, and the shaped joint network prints a few words a second (not
// none, not one at every frame), more than one distinct word. The words are
// random and not checked.
func TestParakeetCLI(t *testing.T) {
	cli, wav := parakeetCLI(t), jfkWAV(t)
	model := filepath.Join(t.TempDir(), "parakeet.bin")
	if err := testmodel.WriteFile(model, testmodel.ParakeetMini, 1); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cli, "-m", model, "-t", "2", wav)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("parakeet-cli: %v\nstderr:\n%s", err, tail(stderr.String(), 40))
	}
	for _, bad := range []string{"GGML_ASSERT", "error", "failed"} {
		if strings.Contains(stderr.String(), bad) {
			t.Errorf("parakeet-cli stderr contains %q:\n%s", bad, tail(stderr.String(), 40))
		}
	}
	words := strings.Fields(stdout.String())
	distinct := map[string]bool{}
	for _, w := range words {
		distinct[w] = true
	}
	// jfk.wav is 11 s: 138 encoder frames of 80 ms.
	if len(words) < 5 || len(words) > 60 || len(distinct) < 3 {
		t.Errorf("parakeet-cli printed %d words (%d distinct) for 11 s of speech, want a few a second: %q",
			len(words), len(distinct), stdout.String())
	}
}
