package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// rmsWindows returns the RMS of consecutive 20 ms windows of raw s16le PCM.
func rmsWindows(b []byte) []float64 {
	const win = 320
	var out []float64
	for i := 0; i+2*win <= len(b); i += 2 * win {
		var sum float64
		for j := 0; j < win; j++ {
			v := float64(int16(binary.LittleEndian.Uint16(b[i+2*j:]))) / 32768
			sum += v * v
		}
		out = append(out, math.Sqrt(sum/win))
	}
	return out
}

// loudSpan is the time between the first and the last 20 ms window above
// the threshold.
func loudSpan(w []float64, thr float64) time.Duration {
	first, last := -1, -1
	for i, r := range w {
		if r > thr {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0
	}
	return time.Duration(last-first+1) * 20 * time.Millisecond
}

// TestSpeakPlaysIntoCapture: yaz-speak plays a sentence into the PulseAudio
// null sink while yaz-capture records its monitor; the recording holds the
// speech, as loud and as long as the synthesized audio.
func TestSpeakPlaysIntoCapture(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const sentence = "Testing the speaker and the microphone of YazSes."
	ref, stderr, code := command(t, ctx, nil, "yaz-speak", "--out", "-", sentence)
	if code != 0 {
		t.Fatalf("yaz-speak --out -: exit %d: %s", code, stderr)
	}
	refSpan := loudSpan(rmsWindows([]byte(ref)), 0.01)
	if refSpan < time.Second {
		t.Fatalf("synthesized speech is only %s long", refSpan)
	}

	rec := filepath.Join(t.TempDir(), "rec.pcm")
	f, err := os.Create(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	capture := exec.CommandContext(ctx, filepath.Join(world.bin, "yaz-capture"), "--backend", "pulseaudio", "--seconds", "8")
	capture.Stdout = f
	var capErr syncBuffer
	capture.Stderr = &capErr
	grew, err := testwait.WatchFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer grew.Close()
	if err := capture.Start(); err != nil {
		t.Fatal(err)
	}
	// Play only once the capture stream really runs (its first bytes are out):
	// an idle null sink starts late.
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if testwait.Until(wctx, func() bool { st, _ := f.Stat(); return st.Size() > 0 }, grew) != nil {
		t.Fatalf("yaz-capture wrote nothing in 5 s: %s", capErr.String())
	}
	_, stderr, code = command(t, ctx, nil, "yaz-speak", "--backend", "pulseaudio", sentence)
	if code != 0 {
		t.Fatalf("yaz-speak: exit %d: %s", code, stderr)
	}
	if err := capture.Wait(); err != nil {
		t.Fatalf("yaz-capture: %v: %s", err, capErr.String())
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(b), 8*16000*2; got != want {
		t.Errorf("recording is %d bytes, want exactly %d (8 s)", got, want)
	}
	w := rmsWindows(b)
	span := loudSpan(w, 0.01)
	if d := span - refSpan; d < -200*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("recorded speech lasts %s, synthesized %s: want within 200 ms", span, refSpan)
	}
	var peak float64
	for _, r := range w {
		peak = max(peak, r)
	}
	if refPeak := maxOf(rmsWindows([]byte(ref))); math.Abs(peak-refPeak) > 0.25*refPeak {
		t.Errorf("recorded peak RMS %.3f, synthesized %.3f: want within 25%%", peak, refPeak)
	}
}

func maxOf(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestStreamRealTime pipes jfk.wav in real time (yaz-capture --file plays it
// out as a microphone would) into yaz-decode's stream mode: utterances come
// out while the audio still plays, inside the known speech span, in order.
func TestStreamRealTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c",
		`"$BIN/yaz-capture" --file "$JFK" | "$BIN/yaz-decode" -m "$MODEL" -t 2 --json`)
	cmd.Env = append(os.Environ(), "BIN="+world.bin, "JFK="+world.jfk, "MODEL="+world.mini)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type line struct {
		StartMs, EndMs int64
		at             time.Duration
	}
	var lines []line
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var l struct {
			StartMs int64  `json:"start_ms"`
			EndMs   int64  `json:"end_ms"`
			Text    string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, line{l.StartMs, l.EndMs, time.Since(start)})
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, stderr.String())
	}
	total := time.Since(start)
	if total < 10*time.Second {
		t.Errorf("pipeline took %s: yaz-capture --file did not play in real time", total)
	}
	if len(lines) < 2 {
		t.Fatalf("got %d utterances from jfk.wav, want at least 2 (it has pauses)", len(lines))
	}
	if lines[0].at > 9*time.Second {
		t.Errorf("first utterance printed after %s: stream mode waited for more input", lines[0].at)
	}
	var prevEnd int64
	for i, l := range lines {
		// jfk.wav: 11 s, speech from about 0.3 s to 10.6 s; boundaries
		// include 300 ms of pre-roll and 200 ms of post-roll.
		if l.StartMs < 0 || l.EndMs > 11000 || l.EndMs <= l.StartMs || l.StartMs < prevEnd {
			t.Errorf("utterance %d [%d, %d] ms: outside the speech span or out of order (previous end %d)", i, l.StartMs, l.EndMs, prevEnd)
		}
		prevEnd = l.EndMs
	}
}

// TestLivePipeline is the headline use, `yaz-capture | yaz-decode`, on a
// real sound server: yaz-speak talks into the null sink, the capture of its
// monitor is cut into an utterance and decoded as it arrives.
func TestLivePipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// tee copies what the capture writes to a file the test watches: the
	// idle null sink delivers its first capture callback up to 2 s late,
	// and the sentence is played once the capture's first bytes are out.
	tap := filepath.Join(t.TempDir(), "tap.pcm")
	flowing, err := testwait.WatchFile(tap)
	if err != nil {
		t.Fatal(err)
	}
	defer flowing.Close()
	cmd := exec.CommandContext(ctx, "sh", "-c",
		`"$BIN/yaz-capture" --backend pulseaudio --seconds 8 | tee "$TAP" | "$BIN/yaz-decode" -m "$MODEL" -t 2 --json`)
	cmd.Env = append(os.Environ(), "BIN="+world.bin, "MODEL="+world.mini, "TAP="+tap)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if testwait.Until(wctx, func() bool { st, err := os.Stat(tap); return err == nil && st.Size() > 0 }, flowing) != nil {
		t.Fatalf("the capture wrote nothing in 10 s\n%s", stderr.String())
	}
	if _, serr, code := command(t, ctx, nil, "yaz-speak", "--backend", "pulseaudio", "Ask not what your country can do for you."); code != 0 {
		t.Fatalf("yaz-speak: exit %d: %s", code, serr)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no utterance decoded from the live capture; stderr:\n%s", stderr.String())
	}
	for _, l := range lines {
		var u struct {
			StartMs int64  `json:"start_ms"`
			EndMs   int64  `json:"end_ms"`
			Text    string `json:"text"`
		}
		if err := json.Unmarshal([]byte(l), &u); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		// Speech was played once the capture ran; it lasts about 3 s.
		if u.StartMs > 6000 || u.EndMs > 8000 || u.EndMs-u.StartMs < 500 || u.Text == "" {
			t.Errorf("utterance [%d, %d] ms %q: not the spoken sentence", u.StartMs, u.EndMs, u.Text)
		}
	}
}
