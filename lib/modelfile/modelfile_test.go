package modelfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
)

var mini struct {
	once sync.Once
	b    []byte
	err  error
}

// miniModel is the generated mini whisper model (the one whisper.cpp loads
// in the other packages' tests), in memory.
func miniModel(t *testing.T) []byte {
	t.Helper()
	mini.once.Do(func() {
		var b bytes.Buffer
		mini.err = testmodel.Write(&b, testmodel.Mini, 1)
		mini.b = b.Bytes()
	})
	if mini.err != nil {
		t.Fatal(mini.err)
	}
	return mini.b
}

func read(b []byte) (Info, error) { return Read(bytes.NewReader(b), int64(len(b))) }

// vadHeader is the start of a Silero VAD file as whisper.cpp's converter
// writes it: magic, type, version; what Inspect reads.
func vadHeader() []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	w(uint32(Magic))
	w(int32(len("silero-16k")))
	b.WriteString("silero-16k")
	w([]int32{6, 2, 0})
	return b.Bytes()
}

// vadOrder is the order convert-silero-vad-to-ggml.py writes the tensors in.
var vadOrder = []string{
	"_model.encoder.0.reparam_conv.weight", "_model.encoder.0.reparam_conv.bias",
	"_model.encoder.1.reparam_conv.weight", "_model.encoder.1.reparam_conv.bias",
	"_model.encoder.2.reparam_conv.weight", "_model.encoder.2.reparam_conv.bias",
	"_model.encoder.3.reparam_conv.weight", "_model.encoder.3.reparam_conv.bias",
	"_model.decoder.rnn.weight_ih", "_model.decoder.rnn.weight_hh",
	"_model.decoder.rnn.bias_ih", "_model.decoder.rnn.bias_hh",
	"_model.decoder.decoder.2.weight", "_model.decoder.decoder.2.bias",
	"_model.stft.forward_basis_buffer",
}

// vadFile is a whole Silero VAD file in the converter's layout, with zero
// weights; edit(name, &typ, &dims) may change a tensor's header.
func vadFile(edit func(name string, typ *int32, dims *[]int32)) []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.Write(vadHeader())
	w(vadHParams)
	for _, name := range vadOrder {
		t := vadTensors[name]
		typ, dims := t.typ, slices.Clone(t.dims)
		if edit != nil {
			edit(name, &typ, &dims)
		}
		w([]int32{int32(len(dims)), int32(len(name)), typ})
		w(dims)
		b.WriteString(name)
		n := int64(1)
		for _, d := range dims {
			n *= int64(d)
		}
		b.Write(make([]byte, n*typeSizes[typ].bytes))
	}
	return b.Bytes()
}

func TestWhisperModel(t *testing.T) {
	info, err := read(miniModel(t))
	if err != nil {
		t.Fatalf("Read(mini model) = %v", err)
	}
	if info.Kind != KindWhisper || info.Whisper.Multilingual() || info.Tensors != 65 {
		t.Errorf("Read(mini model) = %+v (%s), want an English-only whisper model with 65 tensors", info, info.Describe())
	}
	if got, want := info.Describe(), "whisper model (English-only, f16)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	// The same file with a multilingual vocabulary size.
	b := bytes.Clone(miniModel(t))
	binary.LittleEndian.PutUint32(b[4:], 51865)
	if info, err := read(b); err != nil || !info.Whisper.Multilingual() {
		t.Errorf("Read(n_vocab 51865) = %+v, %v; want multilingual", info, err)
	}
}

// A file cut anywhere is refused: inside the magic as not ggml, anywhere
// after it as truncated (or, where the cut leaves a header that cannot be,
// as a bad header). The cut points sweep the header, the vocabulary, the
// tensors, and the exact end of each of the last tensors.
func TestTruncated(t *testing.T) {
	full := miniModel(t)
	var cuts []int
	for i := 0; i < 64; i++ {
		cuts = append(cuts, i)
	}
	for c := 64; c < len(full); c += len(full)/997 + 1 {
		cuts = append(cuts, c)
	}
	cuts = append(cuts, len(full)-1)
	for _, c := range cuts {
		_, err := read(full[:c])
		switch {
		case c < 4:
			if !errors.Is(err, ErrNotGGML) {
				t.Errorf("Read(first %d bytes) = %v, want ErrNotGGML", c, err)
			}
		case !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadHeader):
			t.Errorf("Read(first %d of %d bytes) = %v, want ErrTruncated", c, len(full), err)
		}
	}
	// Every cut at a tensor boundary (whole tensors missing) is found by
	// the count.
	rd := &reader{r: bytes.NewReader(full), size: int64(len(full))}
	if _, err := Read(rd.r, rd.size); err != nil {
		t.Fatal(err)
	}
	rd.r.Seek(4, 0)
	rd.pos = 4
	nv, _ := rd.i32()
	if _, err := rd.whisper(nv); err != nil {
		t.Fatal(err)
	}
	if len(rd.ends) != 65 || rd.ends[64] != int64(len(full)) {
		t.Fatalf("walked %d tensors ending at %v, want 65 ending at %d", len(rd.ends), rd.ends[len(rd.ends)-1:], len(full))
	}
	for _, end := range rd.ends[:64] {
		if _, err := read(full[:end]); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "of the 65 tensors") {
			t.Errorf("Read(cut after a tensor at byte %d) = %v, want the tensor count", end, err)
		}
	}
}

func TestNotAModel(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrNotGGML, "the file is empty"},
		{"html", []byte("<!DOCTYPE html><html><body>Not Found</body></html>"), ErrNotGGML, `"<!DOCTYPE html><"`},
		{"binary", []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0}, ErrNotGGML, "7f 45 4c 46"},
		{"magic only", []byte{0x6c, 0x6d, 0x67, 0x67}, ErrTruncated, "header"},
	}
	for _, tt := range tests {
		_, err := read(tt.data)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Read = %v, want %v mentioning %s", tt.name, err, tt.want, tt.msg)
		}
	}
	// Hyper-parameters no whisper model has.
	for _, tc := range []struct {
		off int
		v   uint32
	}{
		{4, 12},       // n_vocab
		{4 + 4*9, 81}, // n_mels
		{4 + 4*2, 63}, // n_audio_state not divisible by the heads
		{4 + 4*6, 32}, // n_text_state != n_audio_state
		{4 + 4*4, 0},  // no encoder layer
	} {
		b := bytes.Clone(miniModel(t))
		binary.LittleEndian.PutUint32(b[tc.off:], tc.v)
		if _, err := read(b); !errors.Is(err, ErrBadHeader) {
			t.Errorf("Read(%d at byte %d) = %v, want ErrBadHeader", tc.v, tc.off, err)
		}
	}
}

func TestVAD(t *testing.T) {
	if n := len(vadFile(nil)); n != 885098 {
		t.Fatalf("the generated VAD file is %d bytes, want 885098 as the published ones", n)
	}
	info, err := read(vadHeader())
	if err != nil || info.Kind != KindVAD || info.VAD.Type != "silero-16k" || info.VAD.Version != "6.2.0" {
		t.Fatalf("Read(VAD header) = %+v, %v", info, err)
	}
	info, err = read(vadFile(nil))
	if err != nil || info.Kind != KindVAD || info.VAD.Type != "silero-16k" || info.VAD.Version != "6.2.0" {
		t.Fatalf("Read(VAD file) = %+v, %v", info, err)
	}
	dir := t.TempDir()
	vad := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	whisper := filepath.Join(dir, "ggml-mini.bin")
	os.WriteFile(vad, vadFile(nil), 0o644)
	os.WriteFile(whisper, miniModel(t), 0o644)
	if _, err := CheckVAD(vad); err != nil {
		t.Errorf("CheckVAD(VAD file) = %v", err)
	}
	_, err = CheckWhisper(vad)
	if want := vad + " is a Silero VAD model (silero-16k 6.2.0), not a whisper model — fetch one with yaz-fetch-model base.en"; !errors.Is(err, ErrWrongKind) || err.Error() != want {
		t.Errorf("CheckWhisper(VAD file) = %v", err)
	}
	if _, err := CheckVAD(whisper); !errors.Is(err, ErrWrongKind) {
		t.Errorf("CheckVAD(whisper file) = %v, want ErrWrongKind", err)
	}
	if _, err := CheckWhisper(whisper); err != nil {
		t.Errorf("CheckWhisper(whisper file) = %v", err)
	}
}

func TestMissingAndMessages(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ggml-tiny.en.bin")
	_, err := Inspect(p)
	if !errors.Is(err, ErrMissing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Inspect(missing) = %v, want ErrMissing and fs.ErrNotExist", err)
	}
	_, err = CheckWhisper(p)
	if want := "model not found: " + p + " — fetch one with yaz-fetch-model tiny.en"; err == nil || err.Error() != want || !errors.Is(err, ErrMissing) {
		t.Errorf("CheckWhisper(missing) = %v, want %q", err, want)
	}
	if _, err := Inspect(dir); !errors.Is(err, ErrNotGGML) {
		t.Errorf("Inspect(a folder) = %v, want ErrNotGGML", err)
	}
	cut := filepath.Join(dir, "ggml-base.en.bin")
	os.WriteFile(cut, miniModel(t)[:len(miniModel(t))/2], 0o644)
	if _, err := CheckWhisper(cut); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "fetch it again with yaz-fetch-model base.en") {
		t.Errorf("CheckWhisper(truncated) = %v", err)
	}
	for path, want := range map[string]string{
		"/m/ggml-tiny.en.bin":           "tiny.en",
		"/m/ggml-large-v3-q5_0.bin":     "large-v3-q5_0",
		"/m/model.bin":                  "base.en",
		"/m/ggml-.bin":                  "base.en",
		"/m/ggml-silero-v6.2.0.bin":     "base.en",
		"ggml-small.bin":                "small",
		"/m/ggml-medium.en.bin.partial": "base.en",
	} {
		if got := FetchName(path); got != want {
			t.Errorf("FetchName(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestCheckVADWhole: CheckVAD accepts a whole VAD file and refuses, with
// one line that names the file, everything whisper.cpp 1.9.1 would crash
// or abort on or run with garbage: a file cut anywhere, other
// hyper-parameters, an unknown, doubled, reshaped or retyped tensor, bytes
// after the end, a whisper model, a header alone.
func TestCheckVADWhole(t *testing.T) {
	good := vadFile(nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "ggml-silero-v5.1.2.bin")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if info, err := CheckVAD(path); err != nil || info.Kind != KindVAD || info.Bytes != int64(len(good)) {
		t.Fatalf("CheckVAD(whole file) = %+v, %v", info, err)
	}
	if _, err := CheckVADData(path, good); err != nil {
		t.Fatalf("CheckVADData(whole file) = %v", err)
	}
	bad := func(name string, b []byte, want error) {
		t.Helper()
		_, err := CheckVADData(path, b)
		if !errors.Is(err, want) {
			t.Errorf("%s: CheckVADData = %v, want %v", name, err, want)
			return
		}
		if msg := err.Error(); !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
			t.Errorf("%s: message %q does not name the file on one line", name, msg)
		}
	}
	// Cut at every byte of the header and the tensor headers, and every
	// 997th byte of the data.
	for n := 0; n < len(good); n++ {
		if n > 2000 && n%997 != 0 {
			continue
		}
		want := ErrTruncated
		if n < 4 {
			want = ErrNotGGML
		}
		if _, err := CheckVADData(path, good[:n]); err == nil || (n >= 8 && !errors.Is(err, want) && !errors.Is(err, ErrBadHeader)) {
			t.Fatalf("cut at byte %d: CheckVADData = %v, want %v", n, err, want)
		}
	}
	bad("cut in the last tensor", good[:len(good)-1], ErrTruncated)
	bad("header only", vadHeader(), ErrTruncated)
	bad("bytes after the end", append(slices.Clone(good), 0, 0, 0, 0), ErrBadHeader)
	for i := range vadHParams {
		b := slices.Clone(good)
		off := len(vadHeader()) + 4*i
		binary.LittleEndian.PutUint32(b[off:], uint32(vadHParams[i]+1))
		bad(fmt.Sprintf("hyper-parameter %d", i), b, ErrBadHeader)
	}
	bad("f32 where f16", vadFile(func(n string, typ *int32, _ *[]int32) {
		if n == "_model.encoder.0.reparam_conv.weight" {
			*typ = 0
		}
	}), ErrBadHeader)
	bad("other shape", vadFile(func(n string, _ *int32, dims *[]int32) {
		if n == "_model.decoder.rnn.weight_ih" {
			*dims = []int32{512, 128}
		}
	}), ErrBadHeader)
	bad("five dimensions", vadFile(func(n string, _ *int32, dims *[]int32) {
		if n == "_model.decoder.rnn.bias_ih" {
			*dims = []int32{512, 1, 1, 1, 1}
		}
	}), ErrBadHeader)
	renamed := bytes.Replace(slices.Clone(good), []byte("_model.decoder.rnn.bias_hh"), []byte("_model.decoder.rnn.bias_xx"), 1)
	bad("unknown tensor", renamed, ErrBadHeader)
	twice := bytes.Replace(slices.Clone(good), []byte("_model.decoder.rnn.bias_hh"), []byte("_model.decoder.rnn.bias_ih"), 1)
	bad("a tensor twice", twice, ErrBadHeader)

	whisper := filepath.Join(dir, "ggml-mini.bin")
	os.WriteFile(whisper, miniModel(t), 0o644)
	_, err := CheckVAD(whisper)
	if want := whisper + " is a whisper model (English-only, f16), not a Silero VAD model — fetch one with yaz-fetch-model silero-v5.1.2"; !errors.Is(err, ErrWrongKind) || err.Error() != want {
		t.Errorf("CheckVAD(whisper model) = %v, want %q", err, want)
	}
	missing := filepath.Join(dir, "none.bin")
	if _, err := CheckVAD(missing); !errors.Is(err, ErrMissing) || err.Error() != "VAD model not found: "+missing+" — fetch one with yaz-fetch-model silero-v5.1.2" {
		t.Errorf("CheckVAD(missing) = %v", err)
	}
	if _, err := CheckVAD(dir); !errors.Is(err, ErrNotGGML) || !strings.Contains(err.Error(), dir+" is not a regular file") {
		t.Errorf("CheckVAD(a folder) = %v", err)
	}
}

// FuzzCheckVADData: no input makes the VAD walk panic, and what it accepts
// is exactly the size of a whole model.
func FuzzCheckVADData(f *testing.F) {
	good := vadFile(nil)
	f.Add(good[:200])
	f.Add(vadHeader())
	f.Add(good[:len(vadHeader())+4*len(vadHParams)+40])
	f.Fuzz(func(t *testing.T, b []byte) {
		// The fuzzer mutates the start of a model; the tensor data after
		// it is the good file's.
		data := append(slices.Clone(b), good[min(len(b), len(good)):]...)
		info, err := CheckVADData("fuzz.bin", data)
		if err == nil && (info.Kind != KindVAD || len(data) != len(good)) {
			t.Errorf("accepted %d bytes as %+v", len(data), info)
		}
	})
}

var pmini struct {
	once sync.Once
	b    []byte
	err  error
}

// parakeetModel is the generated parakeet-mini model (the one whisper.cpp
// loads in the other packages' tests), in memory.
func parakeetModel(t *testing.T) []byte {
	t.Helper()
	pmini.once.Do(func() {
		var b bytes.Buffer
		pmini.err = testmodel.Write(&b, testmodel.ParakeetMini, 1)
		pmini.b = b.Bytes()
	})
	if pmini.err != nil {
		t.Fatal(pmini.err)
	}
	return pmini.b
}

func TestParakeetModel(t *testing.T) {
	info, err := read(parakeetModel(t))
	if err != nil {
		t.Fatalf("Read(parakeet-mini) = %v", err)
	}
	// 12 subsampling + 2 layers × 29 + embedding + 2 LSTM layers × 3 + 6 joint.
	if info.Kind != KindParakeet || info.Parakeet == nil || info.Tensors != 83 || info.Parakeet.NAudioCtx != 5000 {
		t.Errorf("Read(parakeet-mini) = %+v, want a Parakeet model with 83 tensors", info)
	}
	if got, want := info.Describe(), "Parakeet TDT model (1024 tokens, f16)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	h, _ := testmodel.ParakeetTDT06B.ParakeetHparams()
	big := Info{Kind: KindParakeet, Parakeet: &Parakeet{NVocab: h.NVocab, NAudioState: h.NAudioState, NAudioLayer: h.NAudioLayer, Ftype: h.Ftype}}
	if got, want := big.Describe(), "Parakeet TDT model (0.6B, 8192 tokens, f16)"; got != want {
		t.Errorf("Describe(0.6B) = %q, want %q", got, want)
	}
}

// A Parakeet file cut anywhere is refused as truncated (or, where the cut
// leaves a header that cannot be, as a bad header), never taken for a
// model; so is one missing whole tensors at the end.
func TestParakeetTruncated(t *testing.T) {
	full := parakeetModel(t)
	var cuts []int
	for i := 4; i < 80; i++ {
		cuts = append(cuts, i)
	}
	for c := 80; c < len(full); c += len(full)/1499 + 1 {
		cuts = append(cuts, c)
	}
	cuts = append(cuts, len(full)-1)
	for _, c := range cuts {
		if _, err := read(full[:c]); !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadHeader) {
			t.Errorf("Read(first %d of %d bytes) = %v, want ErrTruncated", c, len(full), err)
		}
	}
	// The last tensor (joint.joint_net.2.bias: 1024+5+1 floats) cut off whole.
	last := 4*3 + 4 + len("joint.joint_net.2.bias") + 4*1030
	if _, err := read(full[:len(full)-last]); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "82 of the 83 tensors") {
		t.Errorf("Read(without the last tensor) = %v, want the tensor count", err)
	}
}

// Header fields no Parakeet model has are refused with the field named;
// n_audio_ctx 0 (a converter that left it out) says why it matters.
func TestParakeetBadHeader(t *testing.T) {
	for _, tc := range []struct {
		field int // index of the int32 after the magic
		v     uint32
		msg   string
	}{
		{1, 0, "cannot allocate a state"},
		{3, 7, "heads"},           // 64 not divisible by 7
		{4, 0, "encoder"},         // no layer
		{9, 0, "subsampling"},     // no channel
		{13, 0, "durations"},      // no duration
		{6, 1 << 20, "ftype"},     // ftype
		{0, 1 << 30, "n_vocab"},   // n_vocab
		{12, 99, "prediction"},    // 99 LSTM layers
		{1, 3, "n_audio_ctx 3"},   // too small to hold a frame
		{14, 0, "tokens a frame"}, // n_max_tokens
	} {
		b := bytes.Clone(parakeetModel(t))
		binary.LittleEndian.PutUint32(b[4+4*tc.field:], tc.v)
		_, err := read(b)
		if !errors.Is(err, ErrBadHeader) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Read(field %d = %d) = %v, want ErrBadHeader mentioning %q", tc.field, tc.v, err, tc.msg)
		}
	}
}

// CheckSpeech takes either engine's model and nothing else; CheckWhisper
// still takes only whisper. A whisper file named like a Parakeet one and the
// reverse are told by their content.
func TestCheckSpeech(t *testing.T) {
	dir := t.TempDir()
	whisperAsParakeet := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-f16.bin")
	parakeetAsWhisper := filepath.Join(dir, "ggml-base.en.bin")
	vad := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	os.WriteFile(whisperAsParakeet, miniModel(t), 0o644)
	os.WriteFile(parakeetAsWhisper, parakeetModel(t), 0o644)
	os.WriteFile(vad, vadFile(nil), 0o644)
	if info, err := CheckSpeech(whisperAsParakeet); err != nil || info.Kind != KindWhisper {
		t.Errorf("CheckSpeech(whisper named like Parakeet) = %+v, %v; want a whisper model", info, err)
	}
	if info, err := CheckSpeech(parakeetAsWhisper); err != nil || info.Kind != KindParakeet {
		t.Errorf("CheckSpeech(Parakeet named like whisper) = %+v, %v; want a Parakeet model", info, err)
	}
	_, err := CheckSpeech(vad)
	if want := vad + " is a Silero VAD model (silero-16k 6.2.0), not a whisper or Parakeet model — fetch one with yaz-fetch-model base.en"; !errors.Is(err, ErrWrongKind) || err.Error() != want {
		t.Errorf("CheckSpeech(VAD) = %v, want %q", err, want)
	}
	_, err = CheckWhisper(parakeetAsWhisper)
	if !errors.Is(err, ErrWrongKind) || !strings.Contains(err.Error(), "is a Parakeet TDT model (1024 tokens, f16), not a whisper model") {
		t.Errorf("CheckWhisper(Parakeet) = %v, want ErrWrongKind naming the Parakeet model", err)
	}
	cut := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-q8_0.bin")
	os.WriteFile(cut, parakeetModel(t)[:len(parakeetModel(t))/3], 0o644)
	if _, err := CheckSpeech(cut); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "fetch it again with yaz-fetch-model parakeet-tdt-0.6b-v3-q8_0") {
		t.Errorf("CheckSpeech(truncated Parakeet) = %v", err)
	}
	zero := filepath.Join(dir, "zero-ctx.bin")
	b := bytes.Clone(parakeetModel(t))
	binary.LittleEndian.PutUint32(b[8:], 0)
	os.WriteFile(zero, b, 0o644)
	if _, err := CheckSpeech(zero); !errors.Is(err, ErrBadHeader) || !strings.Contains(err.Error(), "n_audio_ctx 0: the file must give the audio context") {
		t.Errorf("CheckSpeech(zero n_audio_ctx) = %v", err)
	}
}
