package files

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/pcm"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newConfig is files mode's settings at the flags' defaults that matter
// here.
func newConfig() *Config {
	c := &Config{VADGate: true, Output: "txt"}
	c.VAD.MinSpeech, c.VAD.MinSilence = 120*time.Millisecond, 600*time.Millisecond
	return c
}

// barLine matches one drawing of the progress bar.
var barLine = regexp.MustCompile(`^\rf\.wav \[([= ]*)\] +(-?\d+)% \d+s$`)

// TestProgressAnyValue: whatever percentage whisper.cpp's progress callback
// passes (it reports more than 100 % when a window's seek runs past the end
// of the audio), the bar draws a full-width bar with a percentage in 0–100.
func TestProgressAnyValue(t *testing.T) {
	for _, pct := range []int{math.MinInt, math.MinInt32, -1000, -101, -100, -1, 0, 1, 3, 33, 50, 99, 100, 101, 133, 150, 200, 1000, math.MaxInt32, math.MaxInt} {
		t.Run(strconv.Itoa(pct), func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(&buf, "always", "f.wav", time.Minute)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("set(%d) panicked: %v", pct, r)
					}
				}()
				p.set(pct)
			}()
			m := barLine.FindStringSubmatch(buf.String())
			if m == nil {
				t.Fatalf("set(%d) drew %q, not a bar", pct, buf.String())
			}
			if len(m[1]) != 30 {
				t.Errorf("set(%d): bar is %d wide, want 30", pct, len(m[1]))
			}
			want := min(max(pct, 0), 100)
			if got, _ := strconv.Atoi(m[2]); got != want {
				t.Errorf("set(%d) shows %d%%, want %d%%", pct, got, want)
			}
			if n := strings.Count(m[1], "="); n != want*30/100 {
				t.Errorf("set(%d) filled %d of 30, want %d", pct, n, want*30/100)
			}
		})
	}
}

// TestProgressSequence: a sequence as whisper.cpp reports it for a 40 s file
// (0, 75, then 150 before its end-of-audio check) draws three bars and ends
// the line once.
func TestProgressSequence(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "always", "f.wav", 40*time.Second)
	for _, pct := range []int{0, 75, 150, 150} {
		p.set(pct)
	}
	p.done()
	out := buf.String()
	if got := strings.Count(out, "\r"); got != 3 {
		t.Errorf("%d bars drawn, want 3 (the repeated 150 %% is one): %q", got, out)
	}
	if !strings.HasSuffix(out, "100% 0s\n") {
		t.Errorf("the last bar is not 100 %% and a newline: %q", out)
	}
	for _, mode := range []string{"never", "auto"} {
		var quiet bytes.Buffer
		p := newProgress(&quiet, mode, "f.wav", time.Hour)
		p.set(150)
		p.done()
		if quiet.Len() != 0 {
			t.Errorf("--progress %s on a non-terminal drew %q", mode, quiet.String())
		}
	}
}

// TestFilePieces: without Silero a file is decoded in pieces of at most
// 30 s read as a stream (lib/piece), not in one call that holds the whole
// file: each piece's segments land at its place on the file's timeline,
// in order; with the voice gate a piece of silence is not decoded, and
// without it every sample is decoded exactly once.
func TestFilePieces(t *testing.T) {
	dir := t.TempDir()
	audio := append(append(decodetest.Speech(50*time.Second), decodetest.Silence(45*time.Second)...), decodetest.Speech(20*time.Second)...)
	path := decodetest.WriteWAV(t, filepath.Join(dir, "long.wav"), audio)
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprint("gate=", gate), func(t *testing.T) {
			c := newConfig()
			c.VADGate = gate
			c.Files = []string{path}
			c.Output = "json"
			c.MaxDuration = time.Hour
			f := &decodetest.Recognizer{}
			var out bytes.Buffer
			if err := c.Run(context.Background(), discard, f, &out, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, n := range f.Calls {
				if n > pcm.Samples(30*time.Second) {
					t.Errorf("one call decoded %.1f s: more than a 30 s piece", float64(n)/pcm.SampleRate)
				}
				sum += n
			}
			switch {
			case gate && (sum >= len(audio) || sum < len(audio)-pcm.Samples(45*time.Second)):
				t.Errorf("with the gate %.1f s of %.1f s were decoded; want all but the silent pieces", float64(sum)/pcm.SampleRate, float64(len(audio))/pcm.SampleRate)
			case !gate && sum != len(audio):
				t.Errorf("without the gate %d of %d samples were decoded; want each once", sum, len(audio))
			}
			var doc transcript.JSONDoc
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("JSON: %v\n%s", err, out.String())
			}
			if doc.AudioMs != pcm.Millis(len(audio)) || len(doc.Segments) != len(f.Calls) {
				t.Fatalf("audio_ms %d, %d segments; want %d ms and one segment per call (%d)", doc.AudioMs, len(doc.Segments), pcm.Millis(len(audio)), len(f.Calls))
			}
			var end int64
			for i, s := range doc.Segments {
				if s.StartMs < end || s.EndMs <= s.StartMs || s.EndMs > doc.AudioMs {
					t.Errorf("segment %d [%d, %d] ms: out of order (after %d) or outside the file", i, s.StartMs, s.EndMs, end)
				}
				if !gate && s.StartMs != end {
					t.Errorf("segment %d starts at %d ms, want %d (where the piece before ended)", i, s.StartMs, end)
				}
				end = s.EndMs
			}
			if end != doc.AudioMs {
				t.Errorf("the last segment ends at %d ms, want the file's end %d", end, doc.AudioMs)
			}
		})
	}
}

// TestFileHeaders: several files printed as text on stdout get a header
// line each, as head(1) prints them, with a blank line between files; one
// file gets none, nor does a file with no speech (silence prints nothing);
// JSON lines carry the file name instead.
func TestFileHeaders(t *testing.T) {
	dir := t.TempDir()
	a := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	b := decodetest.WriteWAV(t, filepath.Join(dir, "b.wav"), decodetest.Speech(3*time.Second))
	quiet := decodetest.WriteWAV(t, filepath.Join(dir, "quiet.wav"), decodetest.Silence(2*time.Second))
	missing := filepath.Join(dir, "missing.wav")
	for _, tc := range []struct {
		name   string
		files  []string
		output string
		want   string
	}{
		{"one file", []string{a}, "txt", "2s\n"},
		{"two files", []string{a, b}, "txt", "==> " + a + " <==\n2s\n\n==> " + b + " <==\n3s\n"},
		{"a silent file prints nothing", []string{a, quiet, b}, "txt", "==> " + a + " <==\n2s\n\n==> " + b + " <==\n3s\n"},
		{"silence alone prints nothing", []string{quiet, quiet}, "txt", ""},
		{"a failed file has none", []string{missing, a, b}, "txt", "==> " + a + " <==\n2s\n\n==> " + b + " <==\n3s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConfig()
			c.Files = tc.files
			c.Output = tc.output
			c.MaxDuration = time.Hour
			var out, errb bytes.Buffer
			c.Run(context.Background(), discard, &decodetest.Recognizer{}, &out, &errb)
			if got := out.String(); got != tc.want {
				t.Errorf("stdout = %q\nwant     %q", out.String(), tc.want)
			}
		})
	}
	c := newConfig()
	c.Files = []string{a, b}
	c.Output = "json"
	c.MaxDuration = time.Hour
	var out bytes.Buffer
	if err := c.Run(context.Background(), discard, &decodetest.Recognizer{}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "==>") || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("JSON of two files = %q, want two JSON lines without headers", out.String())
	}
}
