// Package testmodel writes whisper.cpp model files with random weights, so
// that tests run real whisper.cpp loading and inference without a downloaded
// model: whisper models, and Parakeet TDT models (parakeet.go) for the
// second engine in the same source.
//
// The files use the legacy ggml whisper format that whisper.cpp's
// whisper_model_load reads: magic, eleven int32 hyperparameters, the mel
// filterbank, the vocabulary, then every tensor (n_dims, name length, type,
// dims in ggml order, name, data) until EOF. Matrices and convolutions are
// F16 (whisper.cpp's CPU convolution aborts on F32), biases, layer norms and
// positional embeddings F32, as in the converted OpenAI checkpoints.
//
// The bytes depend only on the size and the seed. The mel filterbank is the
// real one (Slaney scale, as OpenAI's mel_filters.npz); the vocabulary is
// made-up ASCII words with token 220 the single space whisper.cpp looks up.
//
// Random weights transcribe nothing meaningful, but the decoder is shaped so
// decoding stays cheap and ends like a real model's: the output logits are
// sharpened so decoding is confident (no temperature fallback); a segment
// opens with the <|0.00|> timestamp; and the decoder's positional embedding
// grows along a direction that the end-of-text and late timestamp embeddings
// share, so after about ten tokens a segment closes with <|30.00|> (timestamps
// on) or end-of-text (timestamps off) instead of running to the token limit.
// The words still depend on the audio through cross-attention, so two
// decoders fed the same samples with the same settings print the same text,
// and a scaling bug in either changes it. Because the closing point depends
// on the decoder position, a later 30 s window that carries the previous
// window's text as its prompt ends sooner, possibly after one token, and may
// take temperature fallbacks (66 s of speech on mini: 4 segments, 3
// fallbacks, under a second).
package testmodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

const (
	ggmlMagic = 0x67676d6c
	typeF32   = 0
	typeF16   = 1
)

// Write writes a model of the given size with weights drawn from seed: a
// whisper model, or a Parakeet TDT one for the Parakeet sizes (parakeet.go).
func Write(w io.Writer, size Size, seed int64) error {
	if size.Parakeet() {
		h, err := size.ParakeetHparams()
		if err != nil {
			return err
		}
		return WriteParakeet(w, h, seed)
	}
	h, err := size.Hparams()
	if err != nil {
		return fmt.Errorf("write test model: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeModel(bw, h, seed); err != nil {
		return fmt.Errorf("write test model %s: %w", size, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write test model %s: %w", size, err)
	}
	return nil
}

// WriteFile writes a model to path atomically: it writes a temporary file in
// the same directory and renames it over path only once it is complete.
func WriteFile(path string, size Size, seed int64) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("write test model file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := Write(f, size, seed); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write test model file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write test model file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write test model file: %w", err)
	}
	return nil
}

func writeModel(w *bufio.Writer, h Hparams, seed int64) error {
	le := binary.LittleEndian
	hdr := []int32{
		ggmlMagic, h.NVocab, h.NAudioCtx, h.NAudioState, h.NAudioHead, h.NAudioLayer,
		h.NTextCtx, h.NTextState, h.NTextHead, h.NTextLayer, h.NMels, h.Ftype,
	}
	if err := binary.Write(w, le, hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := binary.Write(w, le, []int32{h.NMels, nFFTBins}); err != nil {
		return fmt.Errorf("mel filters: %w", err)
	}
	if err := binary.Write(w, le, melFilters(int(h.NMels))); err != nil {
		return fmt.Errorf("mel filters: %w", err)
	}
	words := vocabWords(h)
	if err := binary.Write(w, le, int32(len(words))); err != nil {
		return fmt.Errorf("vocab: %w", err)
	}
	for _, word := range words {
		if err := binary.Write(w, le, uint32(len(word))); err != nil {
			return fmt.Errorf("vocab: %w", err)
		}
		if _, err := w.WriteString(word); err != nil {
			return fmt.Errorf("vocab: %w", err)
		}
	}
	g := newGenerator(h, seed)
	for _, t := range layout(h) {
		if err := g.writeTensor(w, t); err != nil {
			return fmt.Errorf("tensor %s: %w", t.name, err)
		}
	}
	return nil
}

// specials are the ids of the special tokens, as whisper.cpp derives them
// from n_vocab (a multilingual vocabulary has one more text token and one
// more language).
type specials struct {
	eot, sot, translate, transcribe, beg int
}

func specialTokens(h Hparams) specials {
	s := specials{eot: 50256, sot: 50257, translate: 50357, transcribe: 50358, beg: 50363}
	if h.Multilingual() {
		// whisper_model_load: eot and sot move up by one, the rest by the
		// number of languages past 98 (99 before large-v3, 100 in it).
		languages := int(h.NVocab) - 51765 - 1
		dt := languages - 98
		s.eot++
		s.sot++
		s.translate += dt
		s.transcribe += dt
		s.beg += dt
	}
	return s
}

// tokenSpace is the id whisper.cpp's blank suppression looks up as " ".
const tokenSpace = 220

// vocabWords returns the text tokens of the file: every id below the
// end-of-text token. whisper.cpp adds the special tokens itself.
func vocabWords(h Hparams) []string {
	const cons, vows = "bdfghjklmnprstvz", "aeiou"
	n := specialTokens(h).eot
	words := make([]string, n)
	for i := range words {
		if i == tokenSpace {
			words[i] = " "
			continue
		}
		// Three consonant-vowel syllables spell i in base 80; a leading
		// space marks a word start on most tokens, as in real BPE vocabularies.
		b := []byte{' '}
		if i%4 == 3 {
			b = b[:0]
		}
		for d, v := 0, i; d < 3; d++ {
			s := v % (len(cons) * len(vows))
			v /= len(cons) * len(vows)
			b = append(b, cons[s/len(vows)], vows[s%len(vows)])
		}
		words[i] = string(b)
	}
	return words
}

// tensor is one entry of the file: its name, its shape in ggml order
// (fastest dimension first), whether it is stored as F16, and how to fill it.
type tensor struct {
	name string
	ne   []int32
	f16  bool
	init initKind
	std  float32
}

type initKind int

const (
	initZero    initKind = iota // biases
	initOne                     // layer-norm weights
	initUniform                 // zero-mean uniform noise with standard deviation std
	initDecPos                  // decoder positional embedding (uniform + end-of-text ramp)
	initTokEmb                  // token embedding (uniform + end-of-text row)
	initOutGain                 // final decoder layer-norm weight (sharpens the logits)
)

// Decoder shaping, see the package comment. Two fixed zero-mean directions
// of the decoder state steer the special tokens: the ramp direction, which
// the positional embedding grows along from position rampFrom on, and the
// start direction, which the last prompt token (start-of-transcript, or the
// task token of a multilingual prompt) carries. Timestamp tokens lie along
// both: along start with weight falling with the time, along ramp with
// weight rising with it, so a segment opens with <|0.00|> and closes with
// <|30.00|> (whisper.cpp's rule that the first token is a timestamp makes the
// opening one matter); end-of-text lies along ramp only, more weakly, so with
// timestamps on the closing timestamp comes first, and with them off the
// segment ends with end-of-text. With these values greedy decoding of jfk.wav
// gives about a dozen tokens on every size, with no temperature fallback.
const (
	encPosStd   = 0.5  // encoder positional embedding
	decPosStd   = 1.0  // decoder positional embedding noise
	tokEmbStd   = 0.05 // token embedding noise
	outGain     = 60.0 // final layer-norm weight: logits = outGain*LN(x)·E
	rampFrom    = 6    // first decoder position of the ramp
	rampStep    = 0.15 // ramp growth per position
	eotWeight   = 0.05 // end-of-text row along ramp
	tsRamp      = 0.1  // timestamp rows along ramp, times (1+(t/30s)^64)/2
	tsStart     = 0.05 // timestamp rows along start, times (1-t/30s)^64
	startWeight = 4.0  // last prompt token's row along start
	keyGain     = 3.0  // attention keys sharper than 1/sqrt(fan_in)
	outProjGain = 0.5  // attention/MLP output projections, keeps the residual sane
	crossGain   = 2.0  // cross-attention output projection: ties the words to the audio
)

func layout(h Hparams) []tensor {
	as, ac, am := h.NAudioState, h.NAudioCtx, h.NMels
	ts, tc := h.NTextState, h.NTextCtx
	lin := func(in int32) float32 { return float32(1 / math.Sqrt(float64(in))) }
	var ts_ []tensor
	add := func(name string, f16 bool, kind initKind, std float32, ne ...int32) {
		ts_ = append(ts_, tensor{name: name, ne: ne, f16: f16, init: kind, std: std})
	}
	add("encoder.positional_embedding", false, initUniform, encPosStd, as, ac)
	add("encoder.conv1.weight", true, initUniform, lin(3*am), 3, am, as)
	add("encoder.conv1.bias", false, initZero, 0, 1, as)
	add("encoder.conv2.weight", true, initUniform, lin(3*as), 3, as, as)
	add("encoder.conv2.bias", false, initZero, 0, 1, as)
	add("encoder.ln_post.weight", false, initOne, 0, as)
	add("encoder.ln_post.bias", false, initZero, 0, as)
	block := func(prefix string, s int32, cross bool) {
		attn := func(ln, at string, gain float32) {
			add(prefix+ln+".weight", false, initOne, 0, s)
			add(prefix+ln+".bias", false, initZero, 0, s)
			add(prefix+at+".query.weight", true, initUniform, lin(s), s, s)
			add(prefix+at+".query.bias", false, initZero, 0, s)
			add(prefix+at+".key.weight", true, initUniform, keyGain*lin(s), s, s)
			add(prefix+at+".value.weight", true, initUniform, lin(s), s, s)
			add(prefix+at+".value.bias", false, initZero, 0, s)
			add(prefix+at+".out.weight", true, initUniform, gain*lin(s), s, s)
			add(prefix+at+".out.bias", false, initZero, 0, s)
		}
		add(prefix+"mlp_ln.weight", false, initOne, 0, s)
		add(prefix+"mlp_ln.bias", false, initZero, 0, s)
		add(prefix+"mlp.0.weight", true, initUniform, lin(s), s, 4*s)
		add(prefix+"mlp.0.bias", false, initZero, 0, 4*s)
		add(prefix+"mlp.2.weight", true, initUniform, outProjGain*lin(4*s), 4*s, s)
		add(prefix+"mlp.2.bias", false, initZero, 0, s)
		attn("attn_ln", "attn", outProjGain)
		if cross {
			attn("cross_attn_ln", "cross_attn", crossGain)
		}
	}
	for i := range h.NAudioLayer {
		block(fmt.Sprintf("encoder.blocks.%d.", i), as, false)
	}
	add("decoder.positional_embedding", false, initDecPos, decPosStd, ts, tc)
	add("decoder.token_embedding.weight", true, initTokEmb, tokEmbStd, ts, h.NVocab)
	add("decoder.ln.weight", false, initOutGain, 0, ts)
	add("decoder.ln.bias", false, initZero, 0, ts)
	for i := range h.NTextLayer {
		block(fmt.Sprintf("decoder.blocks.%d.", i), ts, true)
	}
	return ts_
}

// generator fills tensors deterministically from the seed. Every tensor has
// its own PCG stream keyed by its name, so one tensor's values do not depend
// on the others.
type generator struct {
	h        Hparams
	seed     uint64
	tok      specials
	rampDir  []float32 // zero mean, unit variance per component
	startDir []float32 // the same, orthogonal to rampDir
	row      []float32
	buf      []byte
}

func newGenerator(h Hparams, seed int64) *generator {
	g := &generator{h: h, seed: uint64(seed), tok: specialTokens(h)}
	g.rampDir = g.direction("ramp-direction", nil)
	g.startDir = g.direction("start-direction", g.rampDir)
	return g
}

// direction returns a random zero-mean vector with squared norm n_text_state,
// orthogonal to other if other is not nil.
func (g *generator) direction(name string, other []float32) []float32 {
	r := g.stream(name)
	v := make([]float64, g.h.NTextState)
	var mean float64
	for i := range v {
		v[i] = float64(r.uniform(1))
		mean += v[i]
	}
	mean /= float64(len(v))
	for i := range v {
		v[i] -= mean
	}
	if other != nil {
		var dot, oo float64
		for i := range v {
			dot += v[i] * float64(other[i])
			oo += float64(other[i]) * float64(other[i])
		}
		for i := range v {
			v[i] -= dot / oo * float64(other[i])
		}
	}
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	scale := math.Sqrt(float64(len(v)) / ss)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x * scale)
	}
	return out
}

func (g *generator) stream(name string) *rng {
	f := fnv.New64a()
	f.Write([]byte(name))
	return &rng{src: rand.NewPCG(g.seed, f.Sum64())}
}

func (g *generator) writeTensor(w *bufio.Writer, t tensor) error {
	le := binary.LittleEndian
	typ := int32(typeF32)
	if t.f16 {
		typ = typeF16
	}
	hdr := []int32{int32(len(t.ne)), int32(len(t.name)), typ}
	hdr = append(hdr, t.ne...)
	if err := binary.Write(w, le, hdr); err != nil {
		return err
	}
	if _, err := w.WriteString(t.name); err != nil {
		return err
	}
	rowLen := int(t.ne[0])
	rows := 1
	for _, d := range t.ne[1:] {
		rows *= int(d)
	}
	r := g.stream(t.name)
	g.row = append(g.row[:0], make([]float32, rowLen)...)
	for row := range rows {
		g.fill(r, t, row, g.row)
		g.buf = g.buf[:0]
		if t.f16 {
			for _, v := range g.row {
				g.buf = le.AppendUint16(g.buf, f16(v))
			}
		} else {
			for _, v := range g.row {
				g.buf = le.AppendUint32(g.buf, math.Float32bits(v))
			}
		}
		if _, err := w.Write(g.buf); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) fill(r *rng, t tensor, row int, dst []float32) {
	switch t.init {
	case initZero:
		clear(dst)
	case initOne:
		for i := range dst {
			dst[i] = 1
		}
	case initOutGain:
		for i := range dst {
			dst[i] = outGain
		}
	case initUniform:
		for i := range dst {
			dst[i] = r.uniform(t.std)
		}
	case initDecPos:
		ramp := float32(max(0, row-rampFrom)) * rampStep
		for i := range dst {
			dst[i] = r.uniform(t.std) + ramp*g.rampDir[i]
		}
	case initTokEmb:
		switch {
		case row == g.tok.eot:
			for i := range dst {
				dst[i] = eotWeight * g.rampDir[i]
			}
		case row == g.tok.sot || row == g.tok.transcribe || row == g.tok.translate:
			for i := range dst {
				dst[i] = startWeight * g.startDir[i]
			}
		case row >= g.tok.beg:
			// Timestamp <|k*0.02|>: k runs from 0 to 1500 (30 s).
			// The weights fall and rise steeply at the ends, so <|0.00|>
			// and <|30.00|> clearly beat their neighbours.
			tt := float64(row-g.tok.beg) / float64(int(g.h.NVocab)-1-g.tok.beg)
			start := float32(tsStart * math.Pow(1-tt, 64))
			ramp := float32(tsRamp * (1 + math.Pow(tt, 64)) / 2)
			for i := range dst {
				dst[i] = start*g.startDir[i] + ramp*g.rampDir[i]
			}
		default:
			for i := range dst {
				dst[i] = r.uniform(t.std)
			}
		}
	}
}

// rng draws uniform values; each 64-bit PCG output gives four 16-bit draws,
// plenty for weights stored as F16.
type rng struct {
	src  *rand.PCG
	bits uint64
	left int
}

// uniform returns a zero-mean uniform value with standard deviation std.
func (r *rng) uniform(std float32) float32 {
	if r.left == 0 {
		r.bits = r.src.Uint64()
		r.left = 4
	}
	v := uint16(r.bits)
	r.bits >>= 16
	r.left--
	// (v+0.5)/65536 is in (0, 1); map to (-sqrt3, sqrt3) for unit variance.
	u := (float32(v) + 0.5) / 65536
	return (2*u - 1) * sqrt3 * std
}

const sqrt3 = 1.7320508075688772
