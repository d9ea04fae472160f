package e2e

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testsound"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// sileroModel is the real Silero VAD model, from the tests' model cache
// (internal/testvad: make setup puts it there).
func sileroModel(t testing.TB) string {
	t.Helper()
	return testvad.Path(t)
}

// Generated sounds, float32 at 16 kHz.

const sr = pcm.SampleRate

// The sounds of internal/testsound under this package's names.
var (
	zeros      = testsound.Silence
	dbfs       = testsound.DBFS
	whiteNoise = testsound.White
	pinkNoise  = testsound.Pink
	mainsHum   = testsound.Hum
	rmsOf32    = testsound.RMS
	join       = testsound.Concat
)

// clickTrain is short decaying clicks (a keyboard, a ticking clock) of
// peak a at random intervals of 80–400 ms.
func clickTrain(rng *rand.Rand, secs, a float64) []float32 {
	out := make([]float32, int(secs*sr))
	for i := int(0.1 * sr); i < len(out); i += int((0.08 + 0.32*rng.Float64()) * sr) {
		for k := 0; k < 80 && i+k < len(out); k++ {
			out[i+k] = float32(a * math.Exp(-float64(k)/12) * (2*rng.Float64() - 1))
		}
	}
	return out
}

// jfkSamples is jfk.wav as float32.
func jfkSamples(t testing.TB) []float32 {
	t.Helper()
	a, _, err := wav.ReadFile16k(world.jfk, 60*sr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// soundExtent is where a clean recording's sound is, in samples: the first
// and last sample above −40 dBFS.
func soundExtent(s []float32) (from, to int) {
	th := float32(dbfs(-40))
	from, to = -1, -1
	for i, x := range s {
		if x > th || x < -th {
			if from < 0 {
				from = i
			}
			to = i + 1
		}
	}
	return from, to
}

// writeWAVFile writes float32 samples as a 16 kHz mono s16 WAV file.
func writeWAVFile(t testing.TB, path string, s []float32) string {
	t.Helper()
	s16 := pcm.FromFloat32(nil, s)
	if err := os.WriteFile(path, append(pcm.WAVHeader(int64(2*len(s16))), pcm.Encode(nil, s16)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// logRecords parses JSON log lines (--log-format json); whisper.cpp's own
// records are among them at debug level.
func logRecords(t testing.TB, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("stderr line %q is not a JSON record: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// withMsg are the records whose message is msg.
func withMsg(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func field(r map[string]any, key string) float64 {
	v, _ := r[key].(float64)
	return v
}
