package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// jfkOfLength writes jfk.wav repeated and cut to secs seconds (as
// `sox jfk.wav rep.wav repeat N; sox rep.wav out.wav trim 0 SECS` does) into
// dir and returns its path.
func jfkOfLength(t testing.TB, dir string, secs float64) string {
	t.Helper()
	f32, _, err := wav.ReadFile16k(world.jfk, 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	one := pcm.FromFloat32(nil, f32)
	n := int(secs * pcm.SampleRate)
	samples := make([]int16, 0, n)
	for len(samples) < n {
		samples = append(samples, one[:min(len(one), n-len(samples))]...)
	}
	p := filepath.Join(dir, fmt.Sprintf("jfk-%gs.wav", secs))
	data := append(pcm.WAVHeader(int64(2*len(samples))), pcm.Encode(nil, samples)...)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// progressLengths are the file lengths (seconds) swept with the progress bar
// on: the ones that crashed before the fix (whisper.cpp reports more than
// 100 % when a window's seek jumps past the end: 40, 45, 50, 55, 66, 70, 75,
// 80 and 100 s), and the boundaries: a second, either side of the first
// 30 s window and just past the second. (The sweep had 25 lengths, up to
// 120 s: 1,619 s of audio to decode for the same proof; these are 704 s.)
var progressLengths = []float64{
	1, 29.5, 31, 40, 45, 50, 55, 61, 66, 70, 75, 80, 100,
}

// TestDecodeProgressSweep runs the real yaz-decode with --progress always
// over many file lengths: each exits 0 with a transcript, and the bar on
// stderr never shows a percentage outside 0–100.
func TestDecodeProgressSweep(t *testing.T) {
	dir := t.TempDir()
	for _, secs := range progressLengths {
		t.Run(fmt.Sprintf("%gs", secs), func(t *testing.T) {
			path := jfkOfLength(t, dir, secs)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", world.mini, "-t", "2", "--progress", "always", "-o", "json", path)
			if code != 0 {
				t.Fatalf("yaz-decode --progress always on %g s: exit %d\n%s", secs, code, tail(stderr, 15))
			}
			var doc jsonDoc
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("no transcript for %g s: %v\n%s", secs, err, stdout)
			}
			if want := int64(secs * 1000); doc.AudioMs != want {
				t.Errorf("audio_ms = %d, want %d", doc.AudioMs, want)
			}
			bars := 0
			for _, m := range barRE.FindAllStringSubmatch(stderr, -1) {
				bars++
				if pct, err := strconv.Atoi(m[1]); err != nil || pct < 0 || pct > 100 {
					t.Errorf("progress bar shows %s%%", m[1])
				}
			}
			if bars == 0 {
				t.Errorf("--progress always drew no bar on stderr: %q", tail(stderr, 5))
			}
		})
	}
}

// barRE finds the percentage of yaz-decode's progress bar:
// "\rLABEL [=====     ]  42% 3s".
var barRE = regexp.MustCompile(`\]\s+(-?\d+)%`)

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
