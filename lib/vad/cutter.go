package vad

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
