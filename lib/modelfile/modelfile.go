// Package modelfile tells what a ggml model file is without loading it: a
// whisper model, a Parakeet TDT model, a Silero VAD model, or something else
// (a truncated download, an HTML error page, a model of another kind). It reads the
// headers in pure Go (no cgo), so `yazsesd config check` can verify the
// configured models although yazsesd builds with CGO_ENABLED=0.
//
// A whisper file (the legacy ggml layout whisper.cpp reads) is: the magic
// 0x67676d6c; eleven int32 hyper-parameters (n_vocab, n_audio_ctx,
// n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state,
// n_text_head, n_text_layer, n_mels, ftype); the mel filters (int32 n_mel,
// int32 n_fft, n_mel·n_fft float32); the vocabulary (int32 count, then a
// uint32 length and the bytes of each token); then the tensors until the end
// of the file, each an int32 n_dims, int32 name length, int32 type, n_dims
// int32 dimensions, the name and the data. Inspect checks each part and walks
// every tensor header (seeking over the data), so a file cut short is found,
// and it counts the tensors against what the hyper-parameters call for
// (whisper.cpp refuses a file with a tensor missing or unknown).
//
// A Parakeet TDT file (whisper.cpp's parakeet.h API, the layout of its
// models/convert-parakeet-to-ggml.py) is the same magic; fifteen int32
// hyper-parameters (n_vocab, n_audio_ctx, n_audio_state, n_audio_head,
// n_audio_layer, n_mels, ftype, n_fft, subsampling_factor,
// n_subsampling_channels, n_conv_kernel, n_pred_dim, n_pred_layers,
// n_tdt_durations, n_max_tokens); the mel filters (int32 n_mel, int32 n_fb =
// n_fft/2+1, floats); the STFT window (int32 length, floats); the durations
// (n_tdt_durations uint32s); the vocabulary as in whisper files; then the
// tensors, named encoder.*, decoder.* and joint.*, some of them
// 0-dimensional. The two headers cannot be mistaken for each other: where a
// Parakeet file has n_mels (80 or 128), a whisper file has n_text_ctx (448),
// and where a whisper file repeats the state size, a Parakeet file has its
// ftype. A Parakeet file whose n_audio_ctx is 0 is refused: whisper.cpp
// cannot allocate a state for it.
//
// A Silero VAD file (whisper.cpp's whisper_vad_* API) is the same magic,
// then an int32 length and the model type ("silero-16k"), a version as three
// int32s, the window and context sizes, and its own hyper-parameters, then
// its 15 tensors in the same layout as a whisper file's. Inspect reads a VAD
// file's header only (enough to tell what it is); CheckVAD and
// CheckVADData walk all of it, because whisper.cpp 1.9.1 trusts every number
// in a VAD file and crashes or aborts on a bad one: they accept only the
// hyper-parameters, tensor names, types and shapes the whisper.cpp graph is
// built for, every tensor whole, and nothing after the last.
//
// The messages of NotFound and of Inspect's errors name the file and the
// fix; they are what yaz-decode and `yazsesd config check` show.
package modelfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Magic is the first four bytes of every ggml file, read as a
// little-endian uint32 ("lmgg" on disk).
const Magic = 0x67676d6c

// Kinds of model file.
const (
	KindWhisper  = "whisper"
	KindParakeet = "parakeet-tdt"
	KindVAD      = "silero-vad"
)

// Errors of Inspect, for errors.Is. Each is wrapped in a message that names
// the file.
var (
	// ErrMissing: no file at the path (it also matches fs.ErrNotExist).
	ErrMissing = errors.New("model not found")
	// ErrNotGGML: the file does not start with the ggml magic.
	ErrNotGGML = errors.New("not a ggml model file")
	// ErrBadHeader: a ggml file whose header makes no sense for its kind.
	ErrBadHeader = errors.New("bad model header")
	// ErrTruncated: the file ends before its last tensor does.
	ErrTruncated = errors.New("model file is truncated")
	// ErrWrongKind: a valid model of another kind than asked for.
	ErrWrongKind = errors.New("wrong kind of model")
)

// Whisper is the header of a whisper model.
type Whisper struct {
	NVocab, NAudioCtx, NAudioState, NAudioHead, NAudioLayer int32
	NTextCtx, NTextState, NTextHead, NTextLayer, NMels      int32
	Ftype                                                   int32
}

// Multilingual reports whether the model knows languages other than
// English (whisper.cpp: n_vocab ≥ 51865).
func (w Whisper) Multilingual() bool { return w.NVocab >= 51865 }

// Size names the checkpoint the dimensions belong to ("tiny", "base",
// "small", "medium", "large"), or "" for other dimensions.
func (w Whisper) Size() string {
	switch w.NAudioLayer {
	case 4:
		return "tiny"
	case 6:
		return "base"
	case 12:
		return "small"
	case 24:
		return "medium"
	case 32:
		return "large"
	}
	return ""
}

// tensors is the number of tensors whisper.cpp loads for these dimensions:
// 7 encoder-wide (positional embedding, two convolutions with biases, the
// final norm) and 15 per encoder layer; 4 decoder-wide (positional and token
// embeddings, the final norm) and 24 per decoder layer (self and cross
// attention).
func (w Whisper) tensors() int {
	return 7 + 15*int(w.NAudioLayer) + 4 + 24*int(w.NTextLayer)
}

// Parakeet is the header of a Parakeet TDT model.
type Parakeet struct {
	NVocab, NAudioCtx, NAudioState, NAudioHead, NAudioLayer, NMels, Ftype int32
	NFFT, SubsamplingFactor, NSubsamplingChannels, NConvKernel            int32
	NPredDim, NPredLayers, NTDTDurations, NMaxTokens                      int32
}

// tensors is the number of tensors src/parakeet.cpp loads for these
// dimensions: 12 for the convolution subsampling stage, 29 per conformer
// layer, the prediction network's embedding and 3 per LSTM layer, and 6 for
// the joint network.
func (p Parakeet) tensors() int {
	return 12 + 29*int(p.NAudioLayer) + 1 + 3*int(p.NPredLayers) + 6
}

// Size names the checkpoint the dimensions belong to ("0.6B" for
// NVIDIA's 0.6B models, "1.1B"), or "" for other dimensions.
func (p Parakeet) Size() string {
	switch {
	case p.NAudioState == 1024 && p.NAudioLayer == 24:
		return "0.6B"
	case p.NAudioState == 1024 && p.NAudioLayer == 42:
		return "1.1B"
	}
	return ""
}

// VAD is the header of a Silero VAD model.
type VAD struct {
	Type    string // "silero-16k"
	Version string // "6.2.0"
}

// Info is what Inspect found.
type Info struct {
	Kind     string    // KindWhisper, KindParakeet or KindVAD
	Whisper  *Whisper  // for KindWhisper
	Parakeet *Parakeet // for KindParakeet
	VAD      *VAD      // for KindVAD
	Tensors  int       // tensors walked (whisper and Parakeet files)
	Bytes    int64
}

// Describe says what the file is in a few words: "whisper model (base,
// English-only, f16)", "Silero VAD model (silero-16k 6.2.0)".
func (i Info) Describe() string {
	switch i.Kind {
	case KindWhisper:
		w := i.Whisper
		parts := []string{}
		if s := w.Size(); s != "" {
			parts = append(parts, s)
		}
		if w.Multilingual() {
			parts = append(parts, "multilingual")
		} else {
			parts = append(parts, "English-only")
		}
		if f := ftypeName(w.Ftype % 1000); f != "" {
			parts = append(parts, f)
		}
		return "whisper model (" + strings.Join(parts, ", ") + ")"
	case KindParakeet:
		p := i.Parakeet
		parts := []string{}
		if s := p.Size(); s != "" {
			parts = append(parts, s)
		}
		parts = append(parts, fmt.Sprintf("%d tokens", p.NVocab))
		if f := ftypeName(p.Ftype % 1000); f != "" {
			parts = append(parts, f)
		}
		return "Parakeet TDT model (" + strings.Join(parts, ", ") + ")"
	case KindVAD:
		return "Silero VAD model (" + i.VAD.Type + " " + i.VAD.Version + ")"
	}
	return "unknown model"
}

// FetchName is the name yaz-fetch-model knows for the model at path:
// "tiny.en" for .../ggml-tiny.en.bin, else "base.en".
func FetchName(path string) string {
	base := filepath.Base(path)
	if n, ok := strings.CutPrefix(base, "ggml-"); ok {
		if n, ok := strings.CutSuffix(n, ".bin"); ok && n != "" && !strings.HasPrefix(n, "silero") {
			return n
		}
	}
	return "base.en"
}

// NotFound is the message for a whisper model that is not there: "model
// not found: PATH — fetch one with yaz-fetch-model base.en".
func NotFound(path string) string {
	return "model not found: " + path + " — fetch one with yaz-fetch-model " + FetchName(path)
}

// Inspect reads the file at path and tells what model it is. A file that is
// not a usable model is an error wrapping ErrMissing, ErrNotGGML,
// ErrBadHeader or ErrTruncated, with a message that names the file.
func Inspect(path string) (Info, error) { return inspect(path, false) }

func inspect(path string, fullVAD bool) (Info, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s: %w", ErrMissing, path, fs.ErrNotExist)
	}
	if err != nil {
		return Info{}, fmt.Errorf("open model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("open model: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%s is not a regular file: %w", path, ErrNotGGML)
	}
	info, err := readModel(f, st.Size(), fullVAD)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// CheckWhisper is Inspect for a file that must be a whisper model. Its
// errors are sentences for a person (what is wrong with the file, and the
// fix) that still match ErrMissing, ErrNotGGML, ErrBadHeader, ErrTruncated
// or ErrWrongKind.
func CheckWhisper(path string) (Info, error) {
	info, err := Inspect(path)
	switch {
	case errors.Is(err, ErrMissing):
		return Info{}, &sentence{NotFound(path), err}
	case errors.Is(err, ErrTruncated):
		return Info{}, &sentence{err.Error() + " — fetch it again with yaz-fetch-model " + FetchName(path), err}
	case err != nil:
		return Info{}, &sentence{err.Error() + " — not a whisper model; fetch one with yaz-fetch-model " + FetchName(path), err}
	case info.Kind != KindWhisper:
		return Info{}, &sentence{path + " is a " + info.Describe() + ", not a whisper model — fetch one with yaz-fetch-model " +
			FetchName(path), ErrWrongKind}
	}
	return info, nil
}

// CheckSpeech is Inspect for a file that must be a speech recognition
// model: whisper or Parakeet TDT, the two engines yaz-decode runs. Its
// errors are sentences for a person, as CheckWhisper's.
func CheckSpeech(path string) (Info, error) {
	info, err := Inspect(path)
	switch {
	case errors.Is(err, ErrMissing):
		return Info{}, &sentence{NotFound(path), err}
	case errors.Is(err, ErrTruncated):
		return Info{}, &sentence{err.Error() + " — fetch it again with yaz-fetch-model " + FetchName(path), err}
	case err != nil:
		return Info{}, &sentence{err.Error() + " — not a whisper or Parakeet model; fetch one with yaz-fetch-model " + FetchName(path), err}
	case info.Kind != KindWhisper && info.Kind != KindParakeet:
		return Info{}, &sentence{path + " is a " + info.Describe() + ", not a whisper or Parakeet model — fetch one with yaz-fetch-model " +
			FetchName(path), ErrWrongKind}
	}
	return info, nil
}

// CheckVAD is Inspect for a file that must be a Silero VAD model
// whisper.cpp can run: the whole file is checked (see the package
// comment). Its errors are one-line sentences that name the file and match
// ErrMissing, ErrNotGGML, ErrBadHeader, ErrTruncated or ErrWrongKind.
func CheckVAD(path string) (Info, error) {
	info, err := inspect(path, true)
	return vadSentence(path, info, err)
}

// CheckVADData is CheckVAD for the content of the file at path, already
// read (so that what is checked is what is loaded).
func CheckVADData(path string, data []byte) (Info, error) {
	info, err := readModel(bytes.NewReader(data), int64(len(data)), true)
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return vadSentence(path, info, err)
}

func vadSentence(path string, info Info, err error) (Info, error) {
	fetch := " — fetch one with yaz-fetch-model " + DefaultVADName
	switch {
	case errors.Is(err, ErrMissing):
		return Info{}, &sentence{"VAD model not found: " + path + fetch, err}
	case errors.Is(err, ErrTruncated) && info.Kind == KindVAD:
		return Info{}, &sentence{err.Error() + " — fetch it again with yaz-fetch-model " + DefaultVADName, err}
	case err != nil:
		return Info{}, &sentence{err.Error() + " — not a Silero VAD model whisper.cpp can run" + fetch, err}
	case info.Kind != KindVAD:
		return Info{}, &sentence{path + " is a " + info.Describe() + ", not a Silero VAD model" + fetch, ErrWrongKind}
	}
	return info, nil
}

// sentence is an error whose text is written for a person and whose cause
// is still there for errors.Is.
type sentence struct {
	msg string
	err error
}

func (s *sentence) Error() string { return s.msg }
func (s *sentence) Unwrap() error { return s.err }

// Read reads a model file of size bytes from r (a VAD file's header only).
func Read(r io.ReadSeeker, size int64) (Info, error) { return readModel(r, size, false) }

// readModel reads a model file; fullVAD walks all of a VAD file.
func readModel(r io.ReadSeeker, size int64, fullVAD bool) (Info, error) {
	rd := &reader{r: r, size: size}
	var magic uint32
	if err := binary.Read(r, binary.LittleEndian, &magic); err != nil || magic != Magic {
		head := make([]byte, 16)
		_, _ = r.Seek(0, io.SeekStart)
		n, _ := io.ReadFull(r, head)
		return Info{}, fmt.Errorf("%w (it starts with %s)", ErrNotGGML, quoteHead(head[:n]))
	}
	rd.pos = 4
	// A VAD file has a short type string next; a whisper file n_vocab.
	first, err := rd.i32()
	if err != nil {
		return Info{}, err
	}
	if first > 0 && first <= 64 {
		info, ok, err := rd.vad(int(first), fullVAD)
		if ok {
			info.Bytes = size
			return info, err
		}
	}
	// Whisper or Parakeet: the header tells (see the package comment).
	hp := make([]int32, 15)
	hp[0] = first
	for i := 1; i < len(hp); i++ {
		v, err := rd.i32()
		if err != nil {
			return Info{}, err
		}
		hp[i] = v
	}
	var info Info
	if looksParakeet(hp) {
		info, err = rd.parakeet(hp)
	} else {
		if _, err := rd.r.Seek(8, io.SeekStart); err != nil {
			return Info{}, fmt.Errorf("read model: %w", err)
		}
		rd.pos = 8
		info, err = rd.whisper(first)
	}
	if err != nil {
		return Info{}, err
	}
	info.Bytes = size
	return info, nil
}

type reader struct {
	r    io.ReadSeeker
	pos  int64
	size int64
	ends []int64 // where each tensor walked ends
}

// vocabulary skips count vocabulary entries (an int32 length, then that
// many bytes), as whisper and Parakeet files both store them.
func (rd *reader) vocabulary(count int32) error {
	for i := int32(0); i < count; i++ {
		n, err := rd.i32()
		if err != nil {
			return err
		}
		if n < 0 || n > 1<<16 {
			return fmt.Errorf("%w: vocabulary entry %d of %d bytes", ErrBadHeader, i, n)
		}
		if err := rd.skip(int64(n), "the vocabulary"); err != nil {
			return err
		}
	}
	return nil
}

// melFilters skips the mel filter bank whisper and Parakeet files both
// start with: an int32 for the mels, an int32 for the columns, then that
// many float32s. bad refuses two numbers the kind's header does not call
// for.
func (rd *reader) melFilters(bad func(nMel, cols int32) error) error {
	nMel, err := rd.i32()
	if err != nil {
		return err
	}
	cols, err := rd.i32()
	if err != nil {
		return err
	}
	if err := bad(nMel, cols); err != nil {
		return err
	}
	return rd.skip(int64(nMel)*int64(cols)*4, "the mel filters")
}

// vocabAndTensors walks what whisper and Parakeet files end with: the
// vocabulary (at most nVocab entries, or exactly nVocab with exact), then
// the tensors to the end of the file, want of them under rules. It returns
// how many tensors it walked; a tensor type whose size is not known here
// ends the walk there, without the count.
func (rd *reader) vocabAndTensors(nVocab int32, exact bool, want int, rules tensorRules) (int, error) {
	count, err := rd.i32()
	if err != nil {
		return 0, err
	}
	if count < 0 || count > nVocab || exact && count != nVocab {
		return 0, fmt.Errorf("%w: %d vocabulary entries for n_vocab %d", ErrBadHeader, count, nVocab)
	}
	if err := rd.vocabulary(count); err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	for rd.pos < rd.size {
		stop, err := rd.tensor(len(seen), want, seen, rules)
		if err != nil {
			return 0, err
		}
		if stop {
			return len(seen), nil
		}
	}
	if len(seen) != want {
		return 0, fmt.Errorf("%w: %d of the %d tensors a model of these dimensions has",
			ErrTruncated, len(seen), want)
	}
	return len(seen), nil
}

func (rd *reader) i32() (int32, error) {
	var v int32
	if err := binary.Read(rd.r, binary.LittleEndian, &v); err != nil {
		return 0, fmt.Errorf("%w: ends at byte %d, inside the header", ErrTruncated, rd.size)
	}
	rd.pos += 4
	return v, nil
}

// skip moves n bytes forward; past the end of the file is ErrTruncated
// with what was being read.
func (rd *reader) skip(n int64, what string) error {
	if n < 0 || rd.pos+n > rd.size {
		return fmt.Errorf("%w: ends at byte %d, inside %s", ErrTruncated, rd.size, what)
	}
	if _, err := rd.r.Seek(n, io.SeekCurrent); err != nil {
		return fmt.Errorf("read model: %w", err)
	}
	rd.pos += n
	return nil
}

func (rd *reader) bytes(n int, what string) ([]byte, error) {
	if int64(n) > rd.size-rd.pos {
		return nil, fmt.Errorf("%w: ends at byte %d, inside %s", ErrTruncated, rd.size, what)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, fmt.Errorf("%w: ends inside %s", ErrTruncated, what)
	}
	rd.pos += int64(n)
	return b, nil
}

// vad reads the rest of a VAD header after the type length n; ok is false
// when the type is not a Silero name (then it is no VAD file). With full, it
// walks the rest of the file (vadBody); err is then what is wrong with it,
// the Info saying what it was meant to be.
func (rd *reader) vad(n int, full bool) (info Info, ok bool, err error) {
	b, err := rd.bytes(n, "the model type")
	if full && err != nil && rd.size > 8 && sileroPrefix(string(rd.rest(n))) {
		// A file cut inside "silero…".
		return Info{Kind: KindVAD, VAD: &VAD{}}, true, err
	}
	if err != nil || !strings.HasPrefix(string(b), "silero") {
		_, _ = rd.r.Seek(8, io.SeekStart)
		rd.pos = 8
		return Info{}, false, nil
	}
	var ver [3]int32
	for i := range ver {
		if ver[i], err = rd.i32(); err != nil {
			if full {
				return Info{Kind: KindVAD, VAD: &VAD{Type: string(b)}}, true, err
			}
			return Info{}, false, nil
		}
	}
	info = Info{Kind: KindVAD, VAD: &VAD{Type: string(b), Version: fmt.Sprintf("%d.%d.%d", ver[0], ver[1], ver[2])}}
	if full {
		err = rd.vadBody()
	}
	return info, true, err
}

// sileroPrefix reports whether s is the start of a Silero type name, or
// one cut short.
func sileroPrefix(s string) bool {
	return strings.HasPrefix(s, "silero") || strings.HasPrefix("silero", s)
}

// rest is what is left of the file from byte 8 on, at most n bytes (for
// messages about a file cut short).
func (rd *reader) rest(n int) []byte {
	b := make([]byte, n)
	if _, err := rd.r.Seek(8, io.SeekStart); err != nil {
		return nil
	}
	k, _ := io.ReadFull(rd.r, b)
	return b[:k]
}

// vadHParams are the numbers after a VAD file's version that whisper.cpp
// 1.9.1's graph is built for (whisper_vad_build_graph hard-codes most of
// them): window 512, context 64, four encoder layers (in, out, kernel), the
// LSTM's input and hidden sizes, the final convolution's in and out. Silero
// v5.1.2 and v6.2.0 both have them.
var vadHParams = []int32{512, 64, 4, 129, 128, 3, 128, 64, 3, 64, 64, 3, 64, 128, 3, 128, 128, 128, 1}

// vadTensors are the tensors whisper.cpp loads from a VAD file: ggml type
// (0 f32, 1 f16) and dimensions, trailing 1s left out.
var vadTensors = map[string]struct {
	typ  int32
	dims []int32
}{
	"_model.stft.forward_basis_buffer":     {1, []int32{256, 1, 258}},
	"_model.encoder.0.reparam_conv.weight": {1, []int32{3, 129, 128}},
	"_model.encoder.0.reparam_conv.bias":   {0, []int32{128}},
	"_model.encoder.1.reparam_conv.weight": {1, []int32{3, 128, 64}},
	"_model.encoder.1.reparam_conv.bias":   {0, []int32{64}},
	"_model.encoder.2.reparam_conv.weight": {1, []int32{3, 64, 64}},
	"_model.encoder.2.reparam_conv.bias":   {0, []int32{64}},
	"_model.encoder.3.reparam_conv.weight": {1, []int32{3, 64, 128}},
	"_model.encoder.3.reparam_conv.bias":   {0, []int32{128}},
	"_model.decoder.rnn.weight_ih":         {0, []int32{128, 512}},
	"_model.decoder.rnn.weight_hh":         {0, []int32{128, 512}},
	"_model.decoder.rnn.bias_ih":           {0, []int32{512}},
	"_model.decoder.rnn.bias_hh":           {0, []int32{512}},
	"_model.decoder.decoder.2.weight":      {1, []int32{128}},
	"_model.decoder.decoder.2.bias":        {0, nil},
}

// vadBody checks a VAD file after its version: the hyper-parameters, then
// every tensor, each once and whole, up to the exact end of the file.
func (rd *reader) vadBody() error {
	for i, want := range vadHParams {
		v, err := rd.i32()
		if err != nil {
			return err
		}
		if v != want {
			return fmt.Errorf("%w: Silero VAD hyper-parameter %d is %d, want %d (whisper.cpp 1.9.1 runs only Silero's own layout)",
				ErrBadHeader, i+1, v, want)
		}
	}
	seen := map[string]bool{}
	for rd.pos < rd.size {
		if len(seen) == len(vadTensors) {
			return fmt.Errorf("%w: %d bytes after the last tensor", ErrBadHeader, rd.size-rd.pos)
		}
		what := fmt.Sprintf("tensor %d of %d", len(seen)+1, len(vadTensors))
		var hdr [3]int32
		for i := range hdr {
			v, err := rd.i32()
			if err != nil {
				return fmt.Errorf("%w: ends at byte %d, inside %s", ErrTruncated, rd.size, what)
			}
			hdr[i] = v
		}
		nDims, nameLen, typ := hdr[0], hdr[1], hdr[2]
		if nDims < 0 || nDims > 4 || nameLen < 1 || nameLen > 256 {
			return fmt.Errorf("%w: %s has %d dimensions and a name of %d bytes", ErrBadHeader, what, nDims, nameLen)
		}
		dims := make([]int32, nDims)
		for i := range dims {
			v, err := rd.i32()
			if err != nil {
				return fmt.Errorf("%w: ends at byte %d, inside %s", ErrTruncated, rd.size, what)
			}
			dims[i] = v
		}
		name, err := rd.bytes(int(nameLen), what)
		if err != nil {
			return err
		}
		n := string(name)
		want, ok := vadTensors[n]
		if !ok {
			return fmt.Errorf("%w: %s is named %s, not a Silero VAD tensor", ErrBadHeader, what, quoteHead(name))
		}
		if seen[n] {
			return fmt.Errorf("%w: tensor %s appears twice", ErrBadHeader, n)
		}
		seen[n] = true
		for len(dims) > 0 && dims[len(dims)-1] == 1 {
			dims = dims[:len(dims)-1]
		}
		if typ != want.typ || !slices.Equal(dims, want.dims) {
			return fmt.Errorf("%w: tensor %s has type %d and dimensions %v, want type %d and %v",
				ErrBadHeader, n, typ, dims, want.typ, want.dims)
		}
		elems := int64(1)
		for _, d := range dims {
			elems *= int64(d)
		}
		if err := rd.skip(elems*typeSizes[typ].bytes, what+" ("+n+")"); err != nil {
			return err
		}
	}
	if len(seen) != len(vadTensors) {
		return fmt.Errorf("%w: %d of the %d tensors of a Silero VAD model", ErrTruncated, len(seen), len(vadTensors))
	}
	return nil
}

// whisper reads a whisper file whose n_vocab was already read.
func (rd *reader) whisper(nVocab int32) (Info, error) {
	h := Whisper{NVocab: nVocab}
	for _, p := range []*int32{&h.NAudioCtx, &h.NAudioState, &h.NAudioHead, &h.NAudioLayer,
		&h.NTextCtx, &h.NTextState, &h.NTextHead, &h.NTextLayer, &h.NMels, &h.Ftype} {
		v, err := rd.i32()
		if err != nil {
			return Info{}, err
		}
		*p = v
	}
	if err := h.check(); err != nil {
		return Info{}, err
	}
	err := rd.melFilters(func(nMel, nFFT int32) error {
		if nMel != h.NMels || nFFT <= 0 || nFFT > 4096 {
			return fmt.Errorf("%w: mel filters %d×%d for %d mels", ErrBadHeader, nMel, nFFT, h.NMels)
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	n, err := rd.vocabAndTensors(h.NVocab, false, h.tensors(), whisperTensors)
	if err != nil {
		return Info{}, err
	}
	return Info{Kind: KindWhisper, Whisper: &h, Tensors: n}, nil
}

// check rejects hyper-parameters no whisper model has.
func (h Whisper) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadHeader, fmt.Sprintf(format, a...))
	}
	in := func(v, lo, hi int32) bool { return v >= lo && v <= hi }
	switch {
	case !in(h.NVocab, 1000, 1<<20):
		return bad("n_vocab %d", h.NVocab)
	case !in(h.NAudioCtx, 1, 1<<16), !in(h.NTextCtx, 1, 1<<16):
		return bad("context sizes %d and %d", h.NAudioCtx, h.NTextCtx)
	case !in(h.NAudioState, 1, 1<<16), h.NTextState != h.NAudioState:
		return bad("state sizes %d and %d", h.NAudioState, h.NTextState)
	case !in(h.NAudioHead, 1, 1024), !in(h.NTextHead, 1, 1024),
		h.NAudioState%h.NAudioHead != 0, h.NTextState%h.NTextHead != 0:
		return bad("%d and %d heads for a state of %d", h.NAudioHead, h.NTextHead, h.NAudioState)
	case !in(h.NAudioLayer, 1, 256), !in(h.NTextLayer, 1, 256):
		return bad("%d and %d layers", h.NAudioLayer, h.NTextLayer)
	case h.NMels != 80 && h.NMels != 128:
		return bad("%d mel bands", h.NMels)
	case !in(h.Ftype%1000, 0, 63) || h.Ftype < 0:
		return bad("ftype %d", h.Ftype)
	}
	return nil
}

// tensorRules are what a kind of file allows its tensors: name prefixes
// and the fewest dimensions.
type tensorRules struct {
	kind     string
	prefixes []string
	minDims  int32
}

var (
	whisperTensors = tensorRules{kind: "whisper", prefixes: []string{"encoder.", "decoder."}, minDims: 1}
	// The converter writes batch_norm.num_batches_tracked, a PyTorch
	// scalar, with no dimension at all.
	parakeetTensors = tensorRules{kind: "Parakeet", prefixes: []string{"encoder.", "decoder.", "joint."}, minDims: 0}
)

// tensor reads one tensor header and skips its data. stop is true for a
// tensor type whose size is not known here (a newer quantization): the walk
// ends there without a verdict on the rest.
func (rd *reader) tensor(i, want int, seen map[string]bool, rules tensorRules) (stop bool, err error) {
	what := fmt.Sprintf("tensor %d of %d", i+1, want)
	nDims, err := rd.i32()
	if err != nil {
		return false, fmt.Errorf("%w: ends inside %s", ErrTruncated, what)
	}
	nameLen, err := rd.i32()
	if err != nil {
		return false, fmt.Errorf("%w: ends inside %s", ErrTruncated, what)
	}
	typ, err := rd.i32()
	if err != nil {
		return false, fmt.Errorf("%w: ends inside %s", ErrTruncated, what)
	}
	if nDims < rules.minDims || nDims > 4 || nameLen < 1 || nameLen > 256 {
		return false, fmt.Errorf("%w: %s has %d dimensions and a name of %d bytes", ErrBadHeader, what, nDims, nameLen)
	}
	elems := int64(1)
	for range nDims {
		d, err := rd.i32()
		if err != nil {
			return false, fmt.Errorf("%w: ends inside %s", ErrTruncated, what)
		}
		if d < 1 {
			return false, fmt.Errorf("%w: %s has a dimension of %d", ErrBadHeader, what, d)
		}
		elems *= int64(d)
	}
	name, err := rd.bytes(int(nameLen), what)
	if err != nil {
		return false, err
	}
	n := string(name)
	if !slices.ContainsFunc(rules.prefixes, func(p string) bool { return strings.HasPrefix(n, p) }) {
		return false, fmt.Errorf("%w: %s is named %s, not a %s tensor", ErrBadHeader, what, quoteHead(name), rules.kind)
	}
	if seen[n] {
		return false, fmt.Errorf("%w: tensor %s appears twice", ErrBadHeader, n)
	}
	seen[n] = true
	bt, ok := typeSizes[typ]
	if !ok {
		return true, nil
	}
	if elems%bt.block != 0 {
		return false, fmt.Errorf("%w: %s (%s) does not fill whole blocks of its type", ErrBadHeader, what, n)
	}
	if err := rd.skip(elems/bt.block*bt.bytes, what+" ("+n+")"); err != nil {
		return false, err
	}
	rd.ends = append(rd.ends, rd.pos)
	return false, nil
}

// looksParakeet reports whether the fifteen header integers hp are laid out
// as a Parakeet file's: n_mels where a whisper file has n_text_ctx, a
// subsampling factor and an FFT size where a whisper file has its text
// decoder's dimensions.
func looksParakeet(hp []int32) bool {
	nMels, nFFT, sub := hp[5], hp[7], hp[8]
	return (nMels == 80 || nMels == 128) && nFFT >= 64 && nFFT <= 4096 && (sub == 2 || sub == 4 || sub == 8 || sub == 16)
}

// parakeet reads a Parakeet file whose fifteen header integers were read.
func (rd *reader) parakeet(hp []int32) (Info, error) {
	h := Parakeet{NVocab: hp[0], NAudioCtx: hp[1], NAudioState: hp[2], NAudioHead: hp[3], NAudioLayer: hp[4],
		NMels: hp[5], Ftype: hp[6], NFFT: hp[7], SubsamplingFactor: hp[8], NSubsamplingChannels: hp[9],
		NConvKernel: hp[10], NPredDim: hp[11], NPredLayers: hp[12], NTDTDurations: hp[13], NMaxTokens: hp[14]}
	if err := h.check(); err != nil {
		return Info{}, err
	}
	err := rd.melFilters(func(nMel, nFB int32) error {
		if nMel != h.NMels || nFB != h.NFFT/2+1 {
			return fmt.Errorf("%w: mel filters %d×%d for %d mels and an FFT of %d", ErrBadHeader, nMel, nFB, h.NMels, h.NFFT)
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	nWin, err := rd.i32()
	if err != nil {
		return Info{}, err
	}
	if nWin < 1 || nWin > h.NFFT {
		return Info{}, fmt.Errorf("%w: a window of %d samples for an FFT of %d", ErrBadHeader, nWin, h.NFFT)
	}
	if err := rd.skip(int64(nWin)*4, "the window"); err != nil {
		return Info{}, err
	}
	if err := rd.skip(int64(h.NTDTDurations)*4, "the durations"); err != nil {
		return Info{}, err
	}
	n, err := rd.vocabAndTensors(h.NVocab, true, h.tensors(), parakeetTensors)
	if err != nil {
		return Info{}, err
	}
	return Info{Kind: KindParakeet, Parakeet: &h, Tensors: n}, nil
}

// check rejects hyper-parameters no Parakeet model has, and a zero audio
// context, with which whisper.cpp cannot allocate a state.
func (h Parakeet) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: Parakeet %s", ErrBadHeader, fmt.Sprintf(format, a...))
	}
	in := func(v, lo, hi int32) bool { return v >= lo && v <= hi }
	switch {
	case h.NAudioCtx == 0:
		return bad("n_audio_ctx 0: the file must give the audio context (the converter writes 5000); whisper.cpp cannot allocate a state without it")
	case !in(h.NAudioCtx, 16, 1<<20):
		return bad("n_audio_ctx %d", h.NAudioCtx)
	case !in(h.NVocab, 2, 1<<20):
		return bad("n_vocab %d", h.NVocab)
	case !in(h.NAudioState, 1, 1<<16), !in(h.NAudioHead, 1, 1024), h.NAudioState%h.NAudioHead != 0:
		return bad("%d heads for a state of %d", h.NAudioHead, h.NAudioState)
	case !in(h.NAudioLayer, 1, 256), !in(h.NPredLayers, 1, 16):
		return bad("%d encoder and %d prediction layers", h.NAudioLayer, h.NPredLayers)
	case h.NMels%h.SubsamplingFactor != 0, !in(h.NSubsamplingChannels, 1, 1<<14), !in(h.NConvKernel, 1, 255), !in(h.NPredDim, 1, 1<<16):
		return bad("subsampling %d×%d of %d mels, kernel %d, prediction %d", h.SubsamplingFactor, h.NSubsamplingChannels, h.NMels, h.NConvKernel, h.NPredDim)
	case !in(h.NTDTDurations, 1, 64), !in(h.NMaxTokens, 1, 1024):
		return bad("%d durations, %d tokens a frame", h.NTDTDurations, h.NMaxTokens)
	case !in(h.Ftype%1000, 0, 63) || h.Ftype < 0:
		return bad("ftype %d", h.Ftype)
	}
	return nil
}

// typeSizes are ggml's block sizes (elements) and bytes per block of the
// tensor types whisper files use.
var typeSizes = map[int32]struct{ block, bytes int64 }{
	0:  {1, 4},     // F32
	1:  {1, 2},     // F16
	2:  {32, 18},   // Q4_0
	3:  {32, 20},   // Q4_1
	6:  {32, 22},   // Q5_0
	7:  {32, 24},   // Q5_1
	8:  {32, 34},   // Q8_0
	10: {256, 84},  // Q2_K
	11: {256, 110}, // Q3_K
	12: {256, 144}, // Q4_K
	13: {256, 176}, // Q5_K
	14: {256, 210}, // Q6_K
	30: {1, 2},     // BF16
}

// ftypeName names a whisper file's ftype (the type of its big matrices).
func ftypeName(f int32) string {
	switch f {
	case 0:
		return "f32"
	case 1:
		return "f16"
	case 2:
		return "q4_0"
	case 3:
		return "q4_1"
	case 7:
		return "q8_0"
	case 8:
		return "q5_0"
	case 9:
		return "q5_1"
	}
	return ""
}

// quoteHead shows the first bytes of a file: printable text as a quoted
// string, anything else as hex.
func quoteHead(b []byte) string {
	if len(b) == 0 {
		return "nothing: the file is empty"
	}
	printable := true
	for _, r := range string(b) {
		if r == unicode.ReplacementChar || (!unicode.IsPrint(r) && !unicode.IsSpace(r)) {
			printable = false
			break
		}
	}
	if printable {
		return fmt.Sprintf("%q", strings.TrimSpace(string(b)))
	}
	return fmt.Sprintf("% x", b)
}
