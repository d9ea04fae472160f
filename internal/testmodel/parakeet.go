package testmodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Parakeet TDT files (whisper.cpp 1.9.1's src/parakeet.cpp, the layout of
// models/convert-parakeet-to-ggml.py) are: the ggml magic; fifteen int32
// hyper-parameters (ParakeetHparams, in field order); the mel filterbank
// (int32 n_mel, int32 n_fb = n_fft/2+1, n_mel·n_fb float32); the STFT window
// (int32 length, float32s); n_tdt_durations uint32 durations; the
// SentencePiece vocabulary (int32 count, then uint32 length and bytes each;
// the blank token is id n_vocab, added by the loader); then every tensor as
// in whisper files until EOF. The large matrices are in the file's ftype
// (f16 here); convolutions of the subsampling stage, the depthwise
// convolution, norms and biases are f32, as the converter writes them; each
// layer's batch_norm.num_batches_tracked is a 0-dimensional f32, as the
// converter's squeeze of PyTorch's scalar makes it.
//
// The weights are random, scaled 1/sqrt(fan-in) so activations stay near
// unit size through the conformer. Matrices that read the output of a ReLU
// have zero-mean rows (pre_encode.out and the joint network's output):
// otherwise the ReLU's positive mean becomes one fixed direction that every
// frame shares, and the model prints the same token over and over whatever
// it hears. For the same reason the feed-forward and convolution outputs
// have zero-mean rows and the self-attention output is kept small (see
// attnOutGain). The joint network's output bias favours the blank token and
// the 1- and 2-frame durations, so a random model emits a few words a
// second of audio (jfk.wav, 11 s: 17 words on parakeet-mini, 30 on
// parakeet-tdt-0.6b), as speech does, instead of one at every frame or none
// at all. The tokens depend on the audio, so two
// decoders fed the same samples print the same text and a scaling bug in
// either changes it.

// ParakeetHparams are the fifteen header integers of a Parakeet TDT file,
// in file order.
type ParakeetHparams struct {
	NVocab               int32
	NAudioCtx            int32 // mel frames one encoder pass holds; the converter writes 5000 (50 s)
	NAudioState          int32
	NAudioHead           int32
	NAudioLayer          int32
	NMels                int32
	Ftype                int32
	NFFT                 int32
	SubsamplingFactor    int32
	NSubsamplingChannels int32
	NConvKernel          int32
	NPredDim             int32
	NPredLayers          int32
	NTDTDurations        int32
	NMaxTokens           int32
}

// parakeetWindow is the STFT window length: NeMo's 25 ms at 16 kHz.
const parakeetWindow = 400

// ParakeetHparams returns the header of a Parakeet model of size s.
func (s Size) ParakeetHparams() (ParakeetHparams, error) {
	h := ParakeetHparams{
		NAudioCtx: 5000, NMels: 128, Ftype: ftypeF16, NFFT: 512, SubsamplingFactor: 8,
		NConvKernel: 9, NPredLayers: 2, NTDTDurations: 5, NMaxTokens: 10,
	}
	switch s {
	case ParakeetMini:
		h.NVocab, h.NAudioState, h.NAudioHead, h.NAudioLayer = 1024, 64, 2, 2
		h.NSubsamplingChannels, h.NPredDim = 16, 64
	case ParakeetTDT06B:
		h.NVocab, h.NAudioState, h.NAudioHead, h.NAudioLayer = 8192, 1024, 8, 24
		h.NSubsamplingChannels, h.NPredDim = 256, 640
	default:
		return ParakeetHparams{}, fmt.Errorf("parakeet hparams: %v is not a Parakeet size", s)
	}
	return h, nil
}

// WriteParakeet writes a Parakeet TDT model with header h (any consistent
// dimensions: tests vary n_audio_ctx) and weights drawn from seed.
func WriteParakeet(w io.Writer, h ParakeetHparams, seed int64) error {
	if h.NMels%h.SubsamplingFactor != 0 || h.NAudioHead <= 0 || h.NAudioState%h.NAudioHead != 0 || h.NTDTDurations < 1 {
		return fmt.Errorf("write parakeet test model: inconsistent dimensions %+v", h)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeParakeet(bw, h, seed); err != nil {
		return fmt.Errorf("write parakeet test model: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write parakeet test model: %w", err)
	}
	return nil
}

func writeParakeet(w *bufio.Writer, h ParakeetHparams, seed int64) error {
	le := binary.LittleEndian
	hdr := []int32{ggmlMagic, h.NVocab, h.NAudioCtx, h.NAudioState, h.NAudioHead, h.NAudioLayer, h.NMels, h.Ftype,
		h.NFFT, h.SubsamplingFactor, h.NSubsamplingChannels, h.NConvKernel, h.NPredDim, h.NPredLayers,
		h.NTDTDurations, h.NMaxTokens}
	if err := binary.Write(w, le, hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	bins := h.NFFT/2 + 1
	if err := binary.Write(w, le, []int32{h.NMels, bins}); err != nil {
		return fmt.Errorf("mel filters: %w", err)
	}
	if err := binary.Write(w, le, melFiltersFFT(int(h.NMels), int(h.NFFT))); err != nil {
		return fmt.Errorf("mel filters: %w", err)
	}
	if err := binary.Write(w, le, int32(parakeetWindow)); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if err := binary.Write(w, le, hannWindow(parakeetWindow)); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	durations := make([]uint32, h.NTDTDurations)
	for i := range durations {
		durations[i] = uint32(i)
	}
	if err := binary.Write(w, le, durations); err != nil {
		return fmt.Errorf("durations: %w", err)
	}
	pieces := parakeetVocab(int(h.NVocab))
	if err := binary.Write(w, le, int32(len(pieces))); err != nil {
		return fmt.Errorf("vocab: %w", err)
	}
	for _, p := range pieces {
		if err := binary.Write(w, le, uint32(len(p))); err != nil {
			return fmt.Errorf("vocab: %w", err)
		}
		if _, err := w.WriteString(p); err != nil {
			return fmt.Errorf("vocab: %w", err)
		}
	}
	g := &generator{seed: uint64(seed)}
	for _, t := range parakeetLayout(h) {
		if err := g.writeParakeetTensor(w, t, h); err != nil {
			return fmt.Errorf("tensor %s: %w", t.name, err)
		}
	}
	return nil
}

// hannWindow is torch.hann_window(n, periodic=False), NeMo's window.
func hannWindow(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n-1)))
	}
	return out
}

// spmSpace is SentencePiece's word-start mark "▁" (U+2581).
const spmSpace = "\u2581"

// parakeetPunct are punctuation pieces placed at fixed ids, so that random
// transcripts have sentence ends.
var parakeetPunct = map[int]string{11: ".", 23: ",", 37: "?", 53: "!"}

// parakeetVocab returns n SentencePiece pieces: <unk> first, as NeMo's
// tokenizers have it, a few punctuation marks, and made-up syllables, most
// of them word starts (with ▁), every one distinct.
func parakeetVocab(n int) []string {
	const cons, vows = "bdfghjklmnprstvz", "aeiou"
	out := make([]string, n)
	for i := range out {
		if i == 0 {
			out[i] = "<unk>"
			continue
		}
		if p, ok := parakeetPunct[i]; ok {
			out[i] = p
			continue
		}
		b := []byte(spmSpace)
		if i%4 == 3 {
			b = b[:0]
		}
		// One to three syllables spell i in base 80.
		for v := i; ; v /= len(cons) * len(vows) {
			s := v % (len(cons) * len(vows))
			b = append(b, cons[s/len(vows)], vows[s%len(vows)])
			if v < len(cons)*len(vows) {
				break
			}
		}
		out[i] = string(b)
	}
	return out
}

// Joint network shaping (see the comment at the top): logits have a
// standard deviation of about jointGain; blank gets blankBias more, and the
// duration logits durationBias[i] (the 1- and 2-frame steps first).
const (
	jointGain  = 2.0
	blankBias  = 5
	outGainPar = 0.5 // output projections of the feed-forward and convolution branches
	// attnOutGain is the self-attention output projection's: random
	// attention is close to uniform, so its output is nearly the same
	// vector at every frame; at 0.5 it swamped what the frames carry after
	// a few of the 0.6B model's 24 layers, and the model printed one
	// token at every frame.
	attnOutGain = 0.1
)

var durationBias = []float32{-2, 2, 1.5, 0, -1}

type parakeetInit int

const (
	pZero      parakeetInit = iota // biases, batch-norm means
	pOne                           // norm weights, batch-norm variances
	pUniform                       // zero-mean uniform with standard deviation std
	pJointBias                     // joint_net.2.bias: blank and duration shaping
	pCentered                      // pUniform with every row's mean removed
)

type ptensor struct {
	name string
	ne   []int32 // ggml order; empty: a 0-dimensional scalar
	f16  bool
	init parakeetInit
	std  float32
}

func parakeetLayout(h ParakeetHparams) []ptensor {
	s, c, k, p := h.NAudioState, h.NSubsamplingChannels, h.NConvKernel, h.NPredDim
	f16 := h.Ftype == ftypeF16
	lin := func(in int32) float32 { return float32(1 / math.Sqrt(float64(in))) }
	var ts []ptensor
	add := func(name string, big bool, init parakeetInit, std float32, ne ...int32) {
		ts = append(ts, ptensor{name: name, ne: ne, f16: big && f16, init: init, std: std})
	}
	preFeat := (h.NMels / h.SubsamplingFactor) * c
	add("encoder.pre_encode.out.weight", true, pCentered, lin(preFeat), preFeat, s)
	add("encoder.pre_encode.out.bias", false, pZero, 0, s)
	add("encoder.pre_encode.conv.0.weight", false, pUniform, lin(9), 3, 3, 1, c)
	add("encoder.pre_encode.conv.0.bias", false, pZero, 0, 1, 1, c, 1)
	for _, i := range []int{2, 5} {
		add(fmt.Sprintf("encoder.pre_encode.conv.%d.weight", i), false, pUniform, lin(9), 3, 3, 1, c)
		add(fmt.Sprintf("encoder.pre_encode.conv.%d.bias", i), false, pZero, 0, 1, 1, c, 1)
		add(fmt.Sprintf("encoder.pre_encode.conv.%d.weight", i+1), false, pUniform, lin(c), 1, 1, c, c)
		add(fmt.Sprintf("encoder.pre_encode.conv.%d.bias", i+1), false, pZero, 0, 1, 1, c, 1)
	}
	for l := range h.NAudioLayer {
		pre := fmt.Sprintf("encoder.layers.%d.", l)
		norm := func(name string) {
			add(pre+name+".weight", false, pOne, 0, s)
			add(pre+name+".bias", false, pZero, 0, s)
		}
		ff := func(name string) {
			add(pre+name+".linear1.weight", true, pUniform, lin(s), s, 4*s)
			add(pre+name+".linear2.weight", true, pCentered, outGainPar*lin(4*s), 4*s, s)
		}
		norm("norm_feed_forward1")
		ff("feed_forward1")
		norm("norm_conv")
		add(pre+"conv.pointwise_conv1.weight", true, pUniform, lin(s), s, 2*s)
		add(pre+"conv.depthwise_conv.weight", false, pUniform, lin(k), k, s)
		add(pre+"conv.batch_norm.weight", false, pOne, 0, s)
		add(pre+"conv.batch_norm.bias", false, pZero, 0, s)
		add(pre+"conv.batch_norm.running_mean", false, pZero, 0, s)
		add(pre+"conv.batch_norm.running_var", false, pOne, 0, s)
		add(pre+"conv.batch_norm.num_batches_tracked", false, pZero, 0)
		add(pre+"conv.pointwise_conv2.weight", true, pCentered, outGainPar*lin(s), s, s)
		norm("norm_self_att")
		add(pre+"self_attn.pos_bias_u", false, pUniform, 0.1, s/h.NAudioHead, h.NAudioHead)
		add(pre+"self_attn.pos_bias_v", false, pUniform, 0.1, s/h.NAudioHead, h.NAudioHead)
		for _, m := range []string{"q", "k", "v"} {
			add(pre+"self_attn.linear_"+m+".weight", true, pUniform, lin(s), s, s)
		}
		add(pre+"self_attn.linear_out.weight", true, pUniform, attnOutGain*lin(s), s, s)
		add(pre+"self_attn.linear_pos.weight", true, pUniform, lin(s), s, s)
		norm("norm_feed_forward2")
		ff("feed_forward2")
		norm("norm_out")
	}
	add("decoder.prediction.embed.weight", true, pUniform, 1, p, h.NVocab+1)
	for l := range h.NPredLayers {
		pre := "decoder.prediction.dec_rnn.lstm."
		add(fmt.Sprintf("%sweight_ih_l%d", pre, l), true, pUniform, lin(p), p, 4*p)
		add(fmt.Sprintf("%sweight_hh_l%d", pre, l), true, pUniform, lin(p), p, 4*p)
		add(fmt.Sprintf("%sbias_h_l%d", pre, l), false, pZero, 0, 4*p)
	}
	out := h.NVocab + h.NTDTDurations + 1
	add("joint.pred.weight", true, pUniform, lin(p), p, p)
	add("joint.pred.bias", false, pZero, 0, p)
	add("joint.enc.weight", true, pUniform, lin(s), s, p)
	add("joint.enc.bias", false, pZero, 0, p)
	add("joint.joint_net.2.weight", true, pCentered, jointGain*lin(p), p, out)
	add("joint.joint_net.2.bias", false, pJointBias, 0, out)
	return ts
}

func (g *generator) writeParakeetTensor(w *bufio.Writer, t ptensor, h ParakeetHparams) error {
	le := binary.LittleEndian
	typ := int32(typeF32)
	if t.f16 {
		typ = typeF16
	}
	hdr := append([]int32{int32(len(t.ne)), int32(len(t.name)), typ}, t.ne...)
	if err := binary.Write(w, le, hdr); err != nil {
		return err
	}
	if _, err := w.WriteString(t.name); err != nil {
		return err
	}
	rowLen, rows := 1, 1
	if len(t.ne) > 0 {
		rowLen = int(t.ne[0])
		for _, d := range t.ne[1:] {
			rows *= int(d)
		}
	}
	r := g.stream(t.name)
	row := make([]float32, rowLen)
	for range rows {
		switch t.init {
		case pZero:
			clear(row)
		case pOne:
			for i := range row {
				row[i] = 1
			}
		case pUniform, pCentered:
			var sum float32
			for i := range row {
				row[i] = r.uniform(t.std)
				sum += row[i]
			}
			if t.init == pCentered {
				for i := range row {
					row[i] -= sum / float32(len(row))
				}
			}
		case pJointBias:
			clear(row)
			row[h.NVocab] = blankBias
			for i := range h.NTDTDurations {
				row[int(h.NVocab)+1+int(i)] = durationBias[int(i)%len(durationBias)]
			}
		}
		g.buf = g.buf[:0]
		for _, v := range row {
			if t.f16 {
				g.buf = le.AppendUint16(g.buf, f16(v))
			} else {
				g.buf = le.AppendUint32(g.buf, math.Float32bits(v))
			}
		}
		if _, err := w.Write(g.buf); err != nil {
			return err
		}
	}
	return nil
}
