package testmodel_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/yazses/yazses/internal/testmodel"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    testmodel.Size
		wantErr bool
	}{
		{"mini", testmodel.Mini, false},
		{"tiny", testmodel.Tiny, false},
		{"tiny.en", testmodel.TinyEn, false},
		{"TINY.EN", testmodel.TinyEn, false},
		{"base.en", testmodel.BaseEn, false},
		{"base", 0, true},
		{"", 0, true},
		{"tinyen", 0, true},
	}
	for _, tt := range tests {
		got, err := testmodel.ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, s := range testmodel.Sizes() {
		got, err := testmodel.ParseSize(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSize(%v.String()) = %v, %v; want %v", s, got, err, s)
		}
	}
}

func TestHparams(t *testing.T) {
	// The real checkpoints' dimensions (OpenAI's model cards, ggml headers).
	tests := []struct {
		size testmodel.Size
		want testmodel.Hparams
	}{
		{testmodel.TinyEn, testmodel.Hparams{NVocab: 51864, NAudioCtx: 1500, NAudioState: 384, NAudioHead: 6, NAudioLayer: 4,
			NTextCtx: 448, NTextState: 384, NTextHead: 6, NTextLayer: 4, NMels: 80, Ftype: 1}},
		{testmodel.Tiny, testmodel.Hparams{NVocab: 51865, NAudioCtx: 1500, NAudioState: 384, NAudioHead: 6, NAudioLayer: 4,
			NTextCtx: 448, NTextState: 384, NTextHead: 6, NTextLayer: 4, NMels: 80, Ftype: 1}},
		{testmodel.BaseEn, testmodel.Hparams{NVocab: 51864, NAudioCtx: 1500, NAudioState: 512, NAudioHead: 8, NAudioLayer: 6,
			NTextCtx: 448, NTextState: 512, NTextHead: 8, NTextLayer: 6, NMels: 80, Ftype: 1}},
		{testmodel.SmallEn, testmodel.Hparams{NVocab: 51864, NAudioCtx: 1500, NAudioState: 768, NAudioHead: 12, NAudioLayer: 12,
			NTextCtx: 448, NTextState: 768, NTextHead: 12, NTextLayer: 12, NMels: 80, Ftype: 1}},
		{testmodel.Mini, testmodel.Hparams{NVocab: 51864, NAudioCtx: 1500, NAudioState: 64, NAudioHead: 2, NAudioLayer: 2,
			NTextCtx: 448, NTextState: 64, NTextHead: 2, NTextLayer: 1, NMels: 80, Ftype: 1}},
		// large-v3-turbo: large-v3's encoder (128 mel bins, the 100-language
		// vocabulary) with 4 decoder layers (ggml-large-v3-turbo.bin's header).
		{testmodel.LargeV3Turbo, testmodel.Hparams{NVocab: 51866, NAudioCtx: 1500, NAudioState: 1280, NAudioHead: 20, NAudioLayer: 32,
			NTextCtx: 448, NTextState: 1280, NTextHead: 20, NTextLayer: 4, NMels: 128, Ftype: 1}},
	}
	for _, tt := range tests {
		got, err := tt.size.Hparams()
		if err != nil {
			t.Fatalf("%v.Hparams(): %v", tt.size, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%v.Hparams() mismatch (-want +got):\n%s", tt.size, diff)
		}
	}
	if _, err := testmodel.Size(99).Hparams(); err == nil {
		t.Error("Size(99).Hparams() succeeded, want an error")
	}
}

func TestWriteDeterministic(t *testing.T) {
	sum := func(seed int64) [32]byte {
		h := sha256.New()
		if err := testmodel.Write(h, testmodel.Mini, seed); err != nil {
			t.Fatalf("Write(mini, %d): %v", seed, err)
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		return s
	}
	a, b, c := sum(1), sum(1), sum(2)
	if a != b {
		t.Errorf("Write(mini, 1) twice gave different bytes: %x, %x", a, b)
	}
	if a == c {
		t.Errorf("Write(mini, 1) and Write(mini, 2) gave the same bytes %x", a)
	}

	// WriteFile writes exactly what Write writes.
	path := filepath.Join(t.TempDir(), "m.bin")
	if err := testmodel.WriteFile(path, testmodel.Mini, 1); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(data); got != a {
		t.Errorf("WriteFile bytes hash %x, want Write's %x", got, a)
	}
}

// tensorInfo is one tensor as the file declares it.
type tensorInfo struct {
	Name string
	Type int32 // 0 F32, 1 F16
	Dims []int32
}

// wantTensors lists the tensors whisper.cpp 1.9.1's whisper_model_load
// creates, with the types it allocates (F16 model: matrices and convolutions
// F16, the rest F32) and shapes in ggml order, written out independently of
// the package's own layout.
func wantTensors(h testmodel.Hparams) []tensorInfo {
	const f32, f16 = 0, 1
	s, v := h.NAudioState, h.NVocab
	var out []tensorInfo
	add := func(name string, typ int32, dims ...int32) {
		out = append(out, tensorInfo{name, typ, dims})
	}
	add("encoder.positional_embedding", f32, s, h.NAudioCtx)
	add("encoder.conv1.weight", f16, 3, h.NMels, s)
	add("encoder.conv1.bias", f32, 1, s)
	add("encoder.conv2.weight", f16, 3, s, s)
	add("encoder.conv2.bias", f32, 1, s)
	add("encoder.ln_post.weight", f32, s)
	add("encoder.ln_post.bias", f32, s)
	layer := func(p string, cross bool) {
		add(p+"mlp_ln.weight", f32, s)
		add(p+"mlp_ln.bias", f32, s)
		add(p+"mlp.0.weight", f16, s, 4*s)
		add(p+"mlp.0.bias", f32, 4*s)
		add(p+"mlp.2.weight", f16, 4*s, s)
		add(p+"mlp.2.bias", f32, s)
		attn := []string{"attn"}
		if cross {
			attn = append(attn, "cross_attn")
		}
		for _, a := range attn {
			add(p+a+"_ln.weight", f32, s)
			add(p+a+"_ln.bias", f32, s)
			add(p+a+".query.weight", f16, s, s)
			add(p+a+".query.bias", f32, s)
			add(p+a+".key.weight", f16, s, s)
			add(p+a+".value.weight", f16, s, s)
			add(p+a+".value.bias", f32, s)
			add(p+a+".out.weight", f16, s, s)
			add(p+a+".out.bias", f32, s)
		}
	}
	for i := range h.NAudioLayer {
		layer(fmt.Sprintf("encoder.blocks.%d.", i), false)
	}
	add("decoder.positional_embedding", f32, s, h.NTextCtx)
	add("decoder.token_embedding.weight", f16, s, v)
	add("decoder.ln.weight", f32, s)
	add("decoder.ln.bias", f32, s)
	for i := range h.NTextLayer {
		layer(fmt.Sprintf("decoder.blocks.%d.", i), true)
	}
	return out
}

// parsed is what parseModel read back from a file.
type parsed struct {
	Hparams     testmodel.Hparams
	MelRows     int32
	MelCols     int32
	Mel         []float32
	Words       []string
	Tensors     []tensorInfo
	TensorBytes int64 // data bytes of all tensors
	FileBytes   int64
	BadValues   int // NaN or Inf in any tensor
}

// parseModel reads a legacy ggml whisper file the way whisper_model_load does
// and requires it to end exactly after the last tensor.
func parseModel(r io.Reader) (*parsed, error) {
	cr := &countReader{r: bufio.NewReaderSize(r, 1<<20)}
	le := binary.LittleEndian
	var p parsed
	var magic uint32
	if err := binary.Read(cr, le, &magic); err != nil {
		return nil, fmt.Errorf("magic: %w", err)
	}
	if magic != 0x67676d6c {
		return nil, fmt.Errorf("magic %#x, want 0x67676d6c", magic)
	}
	if err := binary.Read(cr, le, &p.Hparams); err != nil {
		return nil, fmt.Errorf("hparams: %w", err)
	}
	if err := binary.Read(cr, le, &p.MelRows); err != nil {
		return nil, fmt.Errorf("mel: %w", err)
	}
	if err := binary.Read(cr, le, &p.MelCols); err != nil {
		return nil, fmt.Errorf("mel: %w", err)
	}
	p.Mel = make([]float32, p.MelRows*p.MelCols)
	if err := binary.Read(cr, le, p.Mel); err != nil {
		return nil, fmt.Errorf("mel: %w", err)
	}
	var nWords int32
	if err := binary.Read(cr, le, &nWords); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	for range nWords {
		var n uint32
		if err := binary.Read(cr, le, &n); err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(cr, b); err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		p.Words = append(p.Words, string(b))
	}
	buf := make([]byte, 1<<16)
	for {
		var hdr [3]int32
		if err := binary.Read(cr, le, &hdr); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("tensor %d header: %w", len(p.Tensors), err)
		}
		nDims, nameLen, typ := hdr[0], hdr[1], hdr[2]
		if nDims < 1 || nDims > 4 || nameLen < 1 || nameLen > 256 || (typ != 0 && typ != 1) {
			return nil, fmt.Errorf("tensor %d: bad header %v", len(p.Tensors), hdr)
		}
		dims := make([]int32, nDims)
		if err := binary.Read(cr, le, dims); err != nil {
			return nil, fmt.Errorf("tensor %d dims: %w", len(p.Tensors), err)
		}
		name := make([]byte, nameLen)
		if _, err := io.ReadFull(cr, name); err != nil {
			return nil, fmt.Errorf("tensor %d name: %w", len(p.Tensors), err)
		}
		n := int64(1)
		for _, d := range dims {
			n *= int64(d)
		}
		width := int64(4)
		if typ == 1 {
			width = 2
		}
		for left := n * width; left > 0; {
			chunk := buf[:min(left, int64(len(buf)))]
			if _, err := io.ReadFull(cr, chunk); err != nil {
				return nil, fmt.Errorf("tensor %s data: %w", name, err)
			}
			p.BadValues += countBad(chunk, typ)
			left -= int64(len(chunk))
		}
		p.Tensors = append(p.Tensors, tensorInfo{string(name), typ, dims})
		p.TensorBytes += n * width
	}
	p.FileBytes = cr.n
	return &p, nil
}

// countBad counts NaN and infinite values in little-endian F32 or F16 data.
func countBad(b []byte, typ int32) int {
	bad := 0
	if typ == 1 {
		for i := 0; i+1 < len(b); i += 2 {
			if binary.LittleEndian.Uint16(b[i:])&0x7c00 == 0x7c00 {
				bad++
			}
		}
		return bad
	}
	for i := 0; i+3 < len(b); i += 4 {
		if binary.LittleEndian.Uint32(b[i:])&0x7f800000 == 0x7f800000 {
			bad++
		}
	}
	return bad
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// parseWritten streams Write's output into parseModel without holding the
// whole file in memory.
func parseWritten(t *testing.T, size testmodel.Size, seed int64) *parsed {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := testmodel.Write(pw, size, seed)
		pw.CloseWithError(err)
		done <- err
	}()
	p, perr := parseModel(pr)
	pr.CloseWithError(errors.New("parser done"))
	if werr := <-done; werr != nil && perr == nil {
		t.Fatalf("Write(%v): %v", size, werr)
	}
	if perr != nil {
		t.Fatalf("parse Write(%v) output: %v", size, perr)
	}
	return p
}

// tensorDataBytes is the expected size of all weights, by formula: the F32
// positional embeddings, the F16 token embedding, and per layer the F16
// matrices plus F32 biases and norms.
func tensorDataBytes(h testmodel.Hparams) int64 {
	s, v := int64(h.NAudioState), int64(h.NVocab)
	enc := 4*s*int64(h.NAudioCtx) + // positional embedding
		2*3*int64(h.NMels)*s + 4*s + // conv1
		2*3*s*s + 4*s + // conv2
		8*s // ln_post
	attn := 8*s + 4*2*s*s + 3*4*s // ln, q k v out, q v out biases
	mlp := 8*s + 2*2*4*s*s + 4*4*s + 4*s
	dec := 4*s*int64(h.NTextCtx) + 2*s*v + 8*s
	return enc + int64(h.NAudioLayer)*(attn+mlp) + dec + int64(h.NTextLayer)*(2*attn+mlp)
}

func TestFormat(t *testing.T) {
	// small.en (480 MB) is left to TestHparams: writing it into memory here
	// would cost more than the rest of the package's tests together.
	for _, size := range []testmodel.Size{testmodel.Mini, testmodel.Tiny, testmodel.TinyEn, testmodel.BaseEn} {
		t.Run(size.String(), func(t *testing.T) {
			h, err := size.Hparams()
			if err != nil {
				t.Fatal(err)
			}
			p := parseWritten(t, size, 7)
			if diff := cmp.Diff(h, p.Hparams); diff != "" {
				t.Errorf("header mismatch (-want +got):\n%s", diff)
			}
			if p.MelRows != h.NMels || p.MelCols != 201 {
				t.Errorf("mel filters %dx%d, want %dx201", p.MelRows, p.MelCols, h.NMels)
			}
			wantWords := 50256 // English: the loader adds every special token
			if size == testmodel.Tiny {
				wantWords = 50257
			}
			if len(p.Words) != wantWords {
				t.Errorf("vocab has %d words, want %d", len(p.Words), wantWords)
			}
			if len(p.Words) > 220 && p.Words[220] != " " {
				t.Errorf("token 220 = %q, want %q (whisper.cpp looks it up)", p.Words[220], " ")
			}
			seen := make(map[string]int, len(p.Words))
			for i, w := range p.Words {
				if j, dup := seen[w]; dup {
					t.Fatalf("tokens %d and %d are both %q", j, i, w)
				}
				seen[w] = i
			}
			if diff := cmp.Diff(wantTensors(h), p.Tensors); diff != "" {
				t.Errorf("tensors mismatch (-want +got):\n%s", diff)
			}
			if want := 11 + 15*int(h.NAudioLayer) + 24*int(h.NTextLayer); len(p.Tensors) != want {
				t.Errorf("%d tensors, want %d", len(p.Tensors), want)
			}
			if want := tensorDataBytes(h); p.TensorBytes != want {
				t.Errorf("tensor data %d bytes, want %d", p.TensorBytes, want)
			}
			if p.BadValues != 0 {
				t.Errorf("%d NaN or Inf weights", p.BadValues)
			}
			t.Logf("%v: %d bytes, %d tensors", size, p.FileBytes, len(p.Tensors))
		})
	}
}

type failWriter struct{ left int }

var errDiskFull = errors.New("disk full")

func (f *failWriter) Write(b []byte) (int, error) {
	if len(b) > f.left {
		n := f.left
		f.left = 0
		return n, errDiskFull
	}
	f.left -= len(b)
	return len(b), nil
}

func TestWriteErrors(t *testing.T) {
	for _, after := range []int{0, 10, 5 << 20} {
		err := testmodel.Write(&failWriter{left: after}, testmodel.Mini, 1)
		if !errors.Is(err, errDiskFull) {
			t.Errorf("Write to a writer failing after %d bytes = %v, want %v", after, err, errDiskFull)
		}
	}
	if err := testmodel.Write(io.Discard, testmodel.Size(42), 1); err == nil {
		t.Error("Write(Size(42)) succeeded, want an error")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteFile(path, testmodel.Size(42), 1); err == nil {
		t.Fatal("WriteFile(Size(42)) succeeded, want an error")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte("old")) {
		t.Errorf("failed WriteFile changed the old file to %d bytes", len(got))
	}
	if err := testmodel.WriteFile(path, testmodel.Mini, 3); err != nil {
		t.Fatalf("WriteFile over an old file: %v", err)
	}
	if got, _ := os.ReadFile(path); len(got) < 1<<20 {
		t.Errorf("WriteFile left %d bytes, want the model", len(got))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only model.bin (no temporary files)", names)
	}
	if err := testmodel.WriteFile(filepath.Join(dir, "missing", "m.bin"), testmodel.Mini, 1); err == nil {
		t.Error("WriteFile into a missing directory succeeded, want an error")
	}
}
