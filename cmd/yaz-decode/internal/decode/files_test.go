package decode

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
