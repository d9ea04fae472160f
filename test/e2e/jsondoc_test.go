package e2e

// jsonDoc is yaz-decode's -f json output as its man page and the README
// describe it, written out here rather than imported: the tests read the
// wire as any other program would, so a change to yaz-decode's own types
// that changes the output fails them.
type jsonDoc struct {
	File     string        `json:"file,omitempty"`
	Language string        `json:"language,omitempty"`
	AudioMs  int64         `json:"audio_ms"`
	Text     string        `json:"text"`
	Segments []jsonSegment `json:"segments"`
}

// jsonSegment is one timed segment of a jsonDoc, times in milliseconds.
type jsonSegment struct {
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
	Text    string `json:"text"`
}
