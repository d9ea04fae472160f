package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/lib/pcm"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newConfig is stream mode's settings at the flags' defaults that matter
// here.
func newConfig() *Config {
	c := &Config{}
	c.VAD.MinSpeech, c.VAD.MinSilence = 120*time.Millisecond, 600*time.Millisecond
	return c
}

func TestStream(t *testing.T) {
	var audio []int16
	audio = append(audio, decodetest.Silence(time.Second)...)
	audio = append(audio, decodetest.Speech(2*time.Second)...)
	audio = append(audio, decodetest.Silence(1500*time.Millisecond)...)
	audio = append(audio, decodetest.Speech(time.Second)...) // EOF right after: flushed
	raw := pcm.Encode(nil, audio)

	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"raw", raw},
		{"wav", append(pcm.StreamWAVHeader(), raw...)},
		{"raw odd reads", raw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConfig()
			c.JSON = true
			var in io.Reader = bytes.NewReader(tc.in)
			if tc.name == "raw odd reads" {
				in = &oddReader{b: tc.in}
			}
			var out bytes.Buffer
			if err := c.Run(context.Background(), discard, &decodetest.Recognizer{}, in, &out); err != nil {
				t.Fatal(err)
			}
			var lines []StreamLine
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				var l StreamLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, l)
			}
			if len(lines) != 2 {
				t.Fatalf("got %d utterances, want 2: %s", len(lines), out.String())
			}
			// Speech at 1.0–3.0 s and 4.5–5.5 s; boundaries carry pre- and post-roll.
			if l := lines[0]; l.StartMs < 500 || l.StartMs > 1000 || l.EndMs < 3000 || l.EndMs > 3700 {
				t.Errorf("first utterance [%d, %d] ms, want about [700, 3200]", l.StartMs, l.EndMs)
			}
			if l := lines[1]; l.StartMs < 4000 || l.StartMs > 4500 || l.EndMs < 5400 {
				t.Errorf("second utterance [%d, %d] ms, want about [4200, 5500]", l.StartMs, l.EndMs)
			}
			if s := lines[0].Segments; len(s) != 1 || s[0].StartMs != lines[0].StartMs {
				t.Errorf("segments %+v: want one, offset to stream time %d", s, lines[0].StartMs)
			}
		})
	}
}

// oddReader returns 3 bytes at a time, so samples straddle reads.
type oddReader struct{ b []byte }

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 3)], r.b)
	r.b = r.b[n:]
	return n, nil
}
