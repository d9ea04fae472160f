// Package vadspan turns a voice detector's speech probabilities into speech
// spans, exactly as whisper.cpp 1.9.1 does (whisper_vad_segments_from_probs),
// in one pass over a whole file (Spans) or incrementally on a stream
// (Tracker). It is pure Go: the probabilities come from Silero VAD through
// package silero (cgo, in yaz-decode), or from a child process that reports
// them, so the daemon can apply its own parameters to them.
//
// The input is one probability per Window (512 samples, 32 ms at 16 kHz),
// window i covering samples [512·i, 512·(i+1)); the audio is taken to be
// 512·len(probs) samples long (the detector zero-pads the last window).
// whisper.cpp's rules, which this package reproduces bit for bit:
//
//   - A span opens at the first window whose probability is at least
//     Threshold. It stays open while probabilities stay at or above
//     NegThreshold (Threshold − 0.15 unless set): between the two thresholds
//     nothing changes (hysteresis). It closes once MinSilence has passed
//     since the first window below NegThreshold, at that window; a window at
//     or above Threshold in the meantime cancels the closing.
//   - A span that ends MinSpeech long or shorter is dropped.
//   - With MaxSpeech set, a span longer than that is split at its last pause
//     of more than 98 ms, or cut where it is.
//   - Spans less than 200 ms apart are merged; a merged span shorter than
//     MinSpeech is dropped.
//   - Each span is widened by SpeechPad on both sides (the first start at
//     most to 0, the last end at most to the audio's end); where two spans
//     are less than 2·SpeechPad apart, they meet in the middle of the gap.
//
// Invariants: spans are in order, do not overlap, and each is at least
// MinSpeech long before padding. A Tracker fed the same probabilities, in
// blocks of any size, reports exactly the spans Spans returns, as
// SpeechStart/SpeechEnd events in strict alternation, each as soon as no
// later probability can change it, and never taken back: a start once the
// span is sure to be kept (MinSpeech of it above Threshold), an end once
// the longer of MinSilence and the 200 ms merge gap (or 2·SpeechPad, if
// that is longer still) has passed since the speech.
//
// yaz-decode runs it behind Silero in process; the daemon, which never
// links cgo, runs the same Tracker over the probabilities a yaz-decode
// --vad-stream child reports (lib/vadwire, cmd/yazsesd/internal/vadlink).
package vadspan

import (
	"fmt"
	"math"
	"time"
)

// Window is the number of 16 kHz samples each probability covers.
const Window = 512

// SampleRate is the rate the sample offsets count in.
const SampleRate = 16000

const (
	mergeGap        = SampleRate * 200 / 1000 // spans closer than this merge (whisper.cpp's fixed 200 ms)
	minSilenceAtMax = SampleRate * 98 / 1000  // a pause where MaxSpeech may split (Silero's 98 ms)
	noMax           = math.MaxInt32 / 2       // whisper.cpp's "no maximum"
)

// Params are the voice detector's settings: its thresholds and durations,
// the one set every program applies to the probabilities (yaz-decode's
// files, streams and checks; the daemon's uses, cmd/yazsesd/internal/vadlink).
// A zero field takes whisper.cpp's default (DefaultParams); a negative
// duration means none. Durations count in whole milliseconds, and MaxSpeech
// in whole seconds, as whisper.cpp's parameters do.
type Params struct {
	Threshold    float32       // speech at this probability or more; default 0.5
	NegThreshold float32       // an open span counts silence below this; default Threshold−0.15, at least 0.01
	MinSpeech    time.Duration // shorter spans are dropped; default 250ms
	MinSilence   time.Duration // silence that closes a span; default 100ms
	SpeechPad    time.Duration // added before and after each span; default 30ms
	MaxSpeech    time.Duration // longer spans are split; default none
	// Silences are the lengths of silence a live use reports (the daemon's
	// vadlink: a tail that ends when the speaker does, a hold that stops by
	// itself); Spans and Tracker do not use them.
	Silences []time.Duration
}

// Thresholds are Threshold and NegThreshold with their defaults: a window
// is voiced at thr or more, or at neg or more right after a voiced one.
func (p Params) Thresholds() (thr, neg float32) {
	r := p.resolve()
	return r.thr, r.neg
}

// DefaultParams are whisper.cpp's defaults (whisper_vad_default_params,
// and whisper-cli's --vad-* flags).
func DefaultParams() Params {
	return Params{
		Threshold:  0.5,
		MinSpeech:  250 * time.Millisecond,
		MinSilence: 100 * time.Millisecond,
		SpeechPad:  30 * time.Millisecond,
	}
}

// String is the parameters in whisper-cli's terms.
func (p Params) String() string {
	r := p.resolve()
	max := "none"
	if r.maxSpeechSec > 0 {
		max = fmt.Sprintf("%ds", r.maxSpeechSec)
	}
	return fmt.Sprintf("threshold %.2f/%.2f, min speech %dms, min silence %dms, pad %dms, max speech %s",
		r.thr, r.neg, r.minSpeechMS, r.minSilenceMS, r.padMS, max)
}

// resolved is Params in samples, as whisper.cpp computes them.
type resolved struct {
	thr, neg                          float32
	minSpeechMS, minSilenceMS, padMS  int64
	maxSpeechSec                      int64
	minSpeech, minSilence, pad, maxSp int64 // samples
}

func ms(d, def time.Duration) int64 {
	switch {
	case d == 0:
		d = def
	case d < 0:
		return 0
	}
	return int64(d / time.Millisecond)
}

func (p Params) resolve() resolved {
	def := DefaultParams()
	r := resolved{thr: p.Threshold}
	if r.thr <= 0 {
		r.thr = def.Threshold
	}
	r.neg = p.NegThreshold
	if r.neg <= 0 {
		r.neg = r.thr - 0.15
		if r.neg < 0.01 {
			r.neg = 0.01
		}
	}
	r.minSpeechMS = ms(p.MinSpeech, def.MinSpeech)
	r.minSilenceMS = ms(p.MinSilence, def.MinSilence)
	r.padMS = ms(p.SpeechPad, def.SpeechPad)
	r.minSpeech = SampleRate * r.minSpeechMS / 1000
	r.minSilence = SampleRate * r.minSilenceMS / 1000
	r.pad = SampleRate * r.padMS / 1000
	r.maxSp = noMax
	if p.MaxSpeech > 0 {
		// whisper.cpp: (int64)max_speech_duration_s whole seconds, less one
		// window and both pads; not positive means no maximum.
		r.maxSpeechSec = int64(float32(p.MaxSpeech.Seconds()))
		if t := SampleRate*r.maxSpeechSec - Window - 2*r.pad; t > 0 {
			r.maxSp = t
		} else {
			r.maxSpeechSec = 0
		}
	}
	return r
}

// Span is a stretch of speech: samples [Start, End) of the 16 kHz audio,
// padding included.
type Span struct {
	Start, End int64
}

// StartTime is where the span starts.
func (s Span) StartTime() time.Duration { return samplesToDur(s.Start) }

// EndTime is where the span ends.
func (s Span) EndTime() time.Duration { return samplesToDur(s.End) }

func (s Span) String() string { return fmt.Sprintf("%v–%v", s.StartTime(), s.EndTime()) }

func samplesToDur(n int64) time.Duration { return time.Duration(n) * time.Second / SampleRate }

type raw struct{ s, e int64 }

// Spans returns the speech spans of audio whose window probabilities are
// probs: what whisper_vad_segments_from_probs computes, in samples rather
// than centiseconds.
func Spans(probs []float32, p Params) []Span {
	r := p.resolve()
	audioLen := int64(len(probs)) * Window
	var sp []raw
	var a stageA
	for _, prob := range probs {
		sp = a.step(&r, prob, sp)
	}
	if a.hasCurr && audioLen-a.currStart > r.minSpeech {
		sp = append(sp, raw{a.currStart, audioLen})
	}
	// Merge spans with small gaps, then drop the short ones.
	merged := sp[:0]
	for _, s := range sp {
		if n := len(merged); n > 0 && s.s-merged[n-1].e < mergeGap {
			merged[n-1].e = s.e
			continue
		}
		merged = append(merged, s)
	}
	kept := merged[:0]
	for _, s := range merged {
		if s.e-s.s >= r.minSpeech {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	// Pad.
	out := make([]Span, len(kept))
	for i, s := range kept {
		out[i] = Span{s.s, s.e}
	}
	for i := range out {
		if i == 0 {
			out[i].Start = clampSub(out[i].Start, r.pad)
		}
		if i < len(out)-1 {
			gap := kept[i+1].s - kept[i].e
			if gap < 2*r.pad {
				out[i].End += gap / 2
				out[i+1].Start = clampSub(out[i+1].Start, gap/2)
			} else {
				out[i].End = min(out[i].End+r.pad, audioLen)
				out[i+1].Start = clampSub(out[i+1].Start, r.pad)
			}
		} else {
			out[i].End = min(out[i].End+r.pad, audioLen)
		}
	}
	return out
}

// clampSub is s−d, or 0 when s ≤ d (whisper.cpp's "s > d ? s − d : 0").
func clampSub(s, d int64) int64 {
	if s > d {
		return s - d
	}
	return 0
}

// stageA is whisper.cpp's loop over the probabilities: raw spans, before
// merging, dropping and padding. Sample offsets of 0 mean "unset", as there.
type stageA struct {
	n          int64 // windows seen
	isSpeech   bool
	hasCurr    bool
	tempEnd    int64
	prevEnd    int64
	nextStart  int64
	currStart  int64
	lastAbove  int64 // the last window at or above the threshold in the open span
	reopenings int64 // counts raw spans opened: tells the open one apart
}

// step takes the next probability and appends the raw spans it completes.
func (a *stageA) step(r *resolved, prob float32, out []raw) []raw {
	cur := a.n * Window
	a.n++
	if prob >= r.thr && a.tempEnd != 0 {
		a.tempEnd = 0
		if a.nextStart < a.prevEnd {
			a.nextStart = cur
		}
	}
	if prob >= r.thr && a.isSpeech {
		a.lastAbove = cur
	}
	if prob >= r.thr && !a.isSpeech {
		a.isSpeech, a.hasCurr = true, true
		a.currStart, a.lastAbove = cur, cur
		a.reopenings++
		return out
	}
	if a.isSpeech && cur-a.currStart > r.maxSp {
		if a.prevEnd != 0 {
			out = append(out, raw{a.currStart, a.prevEnd})
			a.hasCurr = true
			if a.nextStart < a.prevEnd {
				a.isSpeech, a.hasCurr = false, false
			} else {
				a.currStart = a.nextStart
				a.reopenings++ // the rest goes on as a new raw span
			}
			a.prevEnd, a.nextStart, a.tempEnd = 0, 0, 0
		} else {
			out = append(out, raw{a.currStart, cur})
			a.prevEnd, a.nextStart, a.tempEnd = 0, 0, 0
			a.isSpeech, a.hasCurr = false, false
			return out
		}
	}
	if prob < r.neg && a.isSpeech {
		if a.tempEnd == 0 {
			a.tempEnd = cur
		}
		if cur-a.tempEnd > minSilenceAtMax {
			a.prevEnd = a.tempEnd
		}
		if cur-a.tempEnd < r.minSilence {
			return out
		}
		if a.tempEnd-a.currStart > r.minSpeech {
			out = append(out, raw{a.currStart, a.tempEnd})
		}
		a.prevEnd, a.nextStart, a.tempEnd = 0, 0, 0
		a.isSpeech, a.hasCurr = false, false
	}
	return out
}

// endBound is a lower bound of where the open raw span will end if it is
// pushed: past its last window above the threshold, or at the pause a
// MaxSpeech split would cut at.
func (a *stageA) endBound(r *resolved) int64 {
	lb := a.lastAbove + Window
	if r.maxSp != noMax && a.prevEnd != 0 && a.prevEnd < lb {
		lb = a.prevEnd
	}
	return lb
}

// sure reports whether the open raw span will be pushed whatever comes:
// its silence end is past MinSpeech already (a MaxSpeech split and the end
// of the stream push it anyway).
func (a *stageA) sure(r *resolved) bool {
	return a.hasCurr && a.lastAbove+Window-a.currStart > r.minSpeech
}
