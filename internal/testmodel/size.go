package testmodel

import (
	"fmt"
	"strings"
)

// Size names one set of model dimensions.
type Size int

// The sizes Write knows. Mini is the default for tests; the others carry the
// dimensions of the real whisper checkpoints of the same name.
const (
	// Mini is the smallest model that exercises every part of whisper.cpp:
	// 64-wide state, 2 heads, 2 encoder layers and 1 decoder layer, the full
	// 1500-position audio context and the real English vocabulary size.
	// (Not 2 decoder layers: whisper.cpp takes such a model for a distilled
	// one and forces timestamps off.)
	Mini Size = iota
	// Tiny has the dimensions of the multilingual tiny checkpoint.
	Tiny
	// TinyEn has the dimensions of tiny.en.
	TinyEn
	// BaseEn has the dimensions of base.en.
	BaseEn
	// SmallEn has the dimensions of small.en (about 480 MB; for benchmarks).
	SmallEn
	// ParakeetMini is a tiny Parakeet TDT model (parakeet.go) for fast
	// tests: every part of src/parakeet.cpp at a few megabytes.
	ParakeetMini
	// ParakeetTDT06B has the dimensions of NVIDIA's Parakeet TDT 0.6B
	// (1.26 GB in f16; for benchmarks).
	ParakeetTDT06B
	// LargeV3Turbo has the dimensions of large-v3-turbo: large-v3's
	// encoder (32 layers, 1280 wide, 20 heads, 128 mel bins, the 100
	// languages of a 51866-token vocabulary) and 4 decoder layers (about
	// 1.6 GB in f16; for the GPU benchmark).
	LargeV3Turbo
)

var sizeNames = [...]string{
	Mini:           "mini",
	Tiny:           "tiny",
	TinyEn:         "tiny.en",
	BaseEn:         "base.en",
	SmallEn:        "small.en",
	ParakeetMini:   "parakeet-mini",
	ParakeetTDT06B: "parakeet-tdt-0.6b",
	LargeV3Turbo:   "large-v3-turbo",
}

// Sizes returns every known whisper size, smallest first.
func Sizes() []Size { return []Size{Mini, Tiny, TinyEn, BaseEn, SmallEn, LargeV3Turbo} }

// ParakeetSizes returns every known Parakeet TDT size, smallest first.
func ParakeetSizes() []Size { return []Size{ParakeetMini, ParakeetTDT06B} }

// Parakeet reports whether s is a Parakeet TDT size (ParakeetHparams)
// rather than a whisper one (Hparams).
func (s Size) Parakeet() bool { return s == ParakeetMini || s == ParakeetTDT06B }

// String returns the size's name as ParseSize accepts it.
func (s Size) String() string {
	if s < 0 || int(s) >= len(sizeNames) {
		return fmt.Sprintf("Size(%d)", int(s))
	}
	return sizeNames[s]
}

// ParseSize returns the size called name ("mini", "tiny", "tiny.en",
// "base.en", "small.en", "large-v3-turbo", "parakeet-mini",
// "parakeet-tdt-0.6b"); case does not matter.
func ParseSize(name string) (Size, error) {
	for i, n := range sizeNames {
		if strings.EqualFold(name, n) {
			return Size(i), nil
		}
	}
	return 0, fmt.Errorf("parse size %q: want one of %s", name, strings.Join(sizeNames[:], ", "))
}

// Hparams are the eleven header integers of a legacy ggml whisper file, in
// file order.
type Hparams struct {
	NVocab      int32
	NAudioCtx   int32
	NAudioState int32
	NAudioHead  int32
	NAudioLayer int32
	NTextCtx    int32
	NTextState  int32
	NTextHead   int32
	NTextLayer  int32
	NMels       int32
	Ftype       int32
}

// English-only models have 51864 tokens, multilingual ones 51865 (one more
// language token), large-v3's 51866 (one more language, Cantonese).
// whisper.cpp derives the special-token ids from this count.
const (
	nVocabEnglish      = 51864
	nVocabMultilingual = 51865
	nVocabV3           = 51866
	ftypeF16           = 1
)

// Hparams returns the header of a model of size s.
func (s Size) Hparams() (Hparams, error) {
	h := Hparams{
		NVocab:    nVocabEnglish,
		NAudioCtx: 1500,
		NTextCtx:  448,
		NMels:     80,
		Ftype:     ftypeF16,
	}
	var state, head, layer int32
	textLayer := int32(0) // 0: the same as layer
	switch s {
	case Mini:
		state, head, layer, textLayer = 64, 2, 2, 1
	case Tiny:
		state, head, layer = 384, 6, 4
		h.NVocab = nVocabMultilingual
	case TinyEn:
		state, head, layer = 384, 6, 4
	case BaseEn:
		state, head, layer = 512, 8, 6
	case SmallEn:
		state, head, layer = 768, 12, 12
	case LargeV3Turbo:
		state, head, layer, textLayer = 1280, 20, 32, 4
		h.NVocab, h.NMels = nVocabV3, 128
	case ParakeetMini, ParakeetTDT06B:
		return Hparams{}, fmt.Errorf("hparams: %v is a Parakeet size (ParakeetHparams)", s)
	default:
		return Hparams{}, fmt.Errorf("hparams: unknown size %d", int(s))
	}
	h.NAudioState, h.NAudioHead, h.NAudioLayer = state, head, layer
	if textLayer == 0 {
		textLayer = layer
	}
	h.NTextState, h.NTextHead, h.NTextLayer = state, head, textLayer
	return h, nil
}

// Multilingual reports whether the vocabulary has the multilingual layout.
func (h Hparams) Multilingual() bool { return h.NVocab >= nVocabMultilingual }
