package vad

import "iter"

// Cutter cuts a stream of wire-format samples into utterances. Segmenter
// (this package's energy detector) is one; silero.Segmenter (Silero VAD
// through whisper.cpp, cgo, for yaz-decode) is another, so a caller picks
// one at start and uses either the same way:
//
//   - Write takes samples in blocks of any size and returns the utterances
//     that ended within them, or nil; the result does not depend on how the
//     stream is cut into blocks.
//   - Flush ends the stream and returns the open utterance, if any; more
//     samples may follow, counting on from the same position.
//   - InSpeech reports whether an utterance is open.
type Cutter interface {
	Write(samples []int16) []Utterance
	Flush() []Utterance
	InSpeech() bool
}

var _ Cutter = (*Segmenter)(nil)

// Quietest is where a Cutter cuts an utterance longer than its maximum
// (Segmenter here, silero.Segmenter in yaz-decode): the middle of the
// frame of the lowest score (a level in dB, a speech probability), the
// latest of equals. frames yields each candidate frame's start sample and
// score, in any order; every frame is size samples long. ok is false when
// frames yields none.
func Quietest(frames iter.Seq2[int64, float64], size int64) (at int64, ok bool) {
	var best float64
	var bestStart int64
	for start, score := range frames {
		if !ok || score < best || (score == best && start > bestStart) {
			best, bestStart, ok = score, start, true
		}
	}
	if !ok {
		return 0, false
	}
	return bestStart + size/2, true
}
