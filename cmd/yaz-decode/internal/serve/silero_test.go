package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
)

// TestServeSpeechCheckSilero: in serve mode Silero decides whether an
// utterance holds speech. Steady noise that starts abruptly after digital
// silence, which the energy rule takes for speech, is answered with an
// empty result and never reaches whisper; speech (also under that noise)
// is decoded.
func TestServeSpeechCheckSilero(t *testing.T) {
	m, err := silero.Load(testvad.Path(t), silero.Options{Skip: silero.DigitalSilence})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	noise := make([]int16, 7*pcm.SampleRate)
	for i := range noise {
		noise[i] = int16(rng.NormFloat64() * 1500) // about −27 dBFS
	}
	abrupt := append(decodetest.Silence(3*time.Second), noise...)
	speech := decodetest.JFK(t)
	noisy := append([]int16(nil), speech...)
	for i := range noisy {
		noisy[i] += noise[i%len(noise)] / 2
	}
	if !vad.HasSpeech(abrupt, newConfig().VAD.Energy()) {
		t.Fatal("the energy rule finds no speech in the abrupt noise: this case no longer tells the detectors apart")
	}
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	for _, u := range [][]int16{abrupt, speech, noisy} {
		w.Audio(u)
		w.End()
	}
	c := newConfig()
	c.VAD.Threshold = 0.5
	c.Detector = voice.New(m)
	defer c.Detector.Close()
	f := &decodetest.Recognizer{}
	var out bytes.Buffer
	if err := c.Run(context.Background(), discard, f, &in, &out); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r frame.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, r.Text)
	}
	if len(texts) != 3 || texts[0] != "" || texts[1] == "" || texts[2] == "" {
		t.Errorf("results %q, want no text for the noise and text for both speeches", texts)
	}
	if len(f.Calls) != 2 {
		t.Errorf("whisper ran %d times, want 2 (the speech only)", len(f.Calls))
	}
}
