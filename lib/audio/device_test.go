package audio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

// startPulse starts a private PulseAudio (scripts/pulse-test-server.sh) in
// a temporary folder, points this process at it and stops it when the test
// ends. Its default sink is the null sink "yaz" (16 kHz mono), its default
// source the sink's monitor: what Play plays, Capture records, bit-exact.
func startPulse(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pulseaudio"); err != nil {
		t.Fatalf("pulseaudio is not installed (CI installs it: apt-get install pulseaudio pulseaudio-utils): %v", err)
	}
	script, err := filepath.Abs("../../scripts/pulse-test-server.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() // the socket path must fit in sun_path (108 bytes)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(testwait.Context(t), script, "start", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s start: %v\n%s", script, err, stderr.Bytes())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
		defer cancel()
		if out, err := exec.CommandContext(ctx, script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("%s stop: %v\n%s", script, err, out)
		}
	})
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("%s start printed %q, want only KEY=value lines", script, sc.Text())
		}
		t.Setenv(k, v)
		n++
	}
	if n < 2 {
		t.Fatalf("%s start printed %d env lines, want XDG_RUNTIME_DIR and PULSE_SERVER", script, n)
	}
}

// tone is a sine of freq Hz, amplitude amp (of full scale), d long.
func tone(freq, amp float64, d time.Duration) []int16 {
	n := pcm.Samples(d)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/pcm.SampleRate)))
	}
	return s
}

// recorder runs Capture in the background and keeps what it records.
type recorder struct {
	mu      sync.Mutex
	samples []int16
	got     testwait.Signal // notified at each delivery
	ready   chan struct{}
	err     chan error
	cancel  context.CancelFunc
}

func record(t *testing.T, cfg Config) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(testwait.Context(t))
	r := &recorder{ready: make(chan struct{}), err: make(chan error, 1), cancel: cancel}
	go func() {
		r.err <- Capture(ctx, cfg, func() { close(r.ready) }, func(s []int16) {
			r.mu.Lock()
			r.samples = append(r.samples, s...)
			r.mu.Unlock()
			r.got.Notify()
		})
	}()
	t.Cleanup(func() { r.stop(t) })
	select {
	case <-r.ready:
	case err := <-r.err:
		t.Fatalf("Capture ended before its first callback: %v", err)
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for Capture's first callback: none within %v", testwait.Hang)
	}
	return r
}

// waitToneEnd waits until the recording *rec (guarded by mu; changed is
// notified at each delivery) holds a loud part followed by quiet of
// audio: the tone has come through the monitor, which lags the sink a
// little, and ended there. It counts audio delivered, not time, so a
// slow machine only makes it later.
func waitToneEnd(t *testing.T, mu *sync.Mutex, rec *[]int16, changed *testwait.Signal, quiet time.Duration) {
	t.Helper()
	ended := func() bool {
		mu.Lock()
		defer mu.Unlock()
		end := loudEnd(*rec, 0.1)
		return end >= 0 && len(*rec)-end >= pcm.Samples(quiet)
	}
	if err := testwait.Until(testwait.Context(t), ended, changed); err != nil {
		mu.Lock()
		n := len(*rec)
		mu.Unlock()
		t.Fatalf("waiting for the tone and %v of quiet after it in the recording: %v (%v recorded)", quiet, err, pcm.Duration(n))
	}
}

// stop cancels the capture and returns everything recorded.
func (r *recorder) stop(t *testing.T) []int16 {
	t.Helper()
	if r.cancel == nil {
		return r.samples
	}
	r.cancel()
	r.cancel = nil
	if err := testwait.Recv(t, r.err, "Capture to return after its cancel"); err != nil {
		t.Errorf("Capture after cancel = %v, want nil", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.samples
}

// loudPart returns the span of 10 ms windows whose RMS is above thresh (of
// full scale): the samples from the first to the last loud window.
func loudPart(s []int16, thresh float64) []int16 {
	const w = pcm.SampleRate / 100
	first, last := -1, -1
	for i := 0; i+w <= len(s); i += w {
		if rms(s[i:i+w]) > thresh {
			if first < 0 {
				first = i
			}
			last = i + w
		}
	}
	if first < 0 {
		return nil
	}
	return s[first:last]
}

// loudEnd returns the index just past the last 10 ms window whose RMS is
// above thresh, or -1.
func loudEnd(s []int16, thresh float64) int {
	const w = pcm.SampleRate / 100
	end := -1
	for i := 0; i+w <= len(s); i += w {
		if rms(s[i:i+w]) > thresh {
			end = i + w
		}
	}
	return end
}

func rms(s []int16) float64 {
	var sum float64
	for _, v := range s {
		f := float64(v) / 32768
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(s)))
}

// dominantHz estimates the frequency from sign changes (two per period).
func dominantHz(s []int16) float64 {
	n := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] >= 0) != (s[i] >= 0) {
			n++
		}
	}
	return float64(n) / 2 / pcm.Duration(len(s)).Seconds()
}

// TestToneLoop plays a 1 kHz tone into the null sink and records it from
// the monitor: the real capture and playback paths through PulseAudio.
func TestToneLoop(t *testing.T) {
	t0 := time.Now()
	startPulse(t)
	devs, err := ListDevices(Config{Backend: "pulseaudio"})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	var haveMon, haveSink bool
	for _, d := range devs {
		haveMon = haveMon || (d.ID == "yaz.monitor" && d.Capture)
		haveSink = haveSink || (d.ID == "yaz" && !d.Capture)
	}
	if !haveMon || !haveSink {
		t.Fatalf("ListDevices = %+v, want capture yaz.monitor and playback yaz", devs)
	}

	// The source by name substring, the sink by ID.
	rec := record(t, Config{Backend: "pulseaudio", Device: "monitor of YAZ"})
	want := tone(1000, 0.3, time.Second)
	var startedAt time.Time
	playStart := time.Now()
	n, err := Play(testwait.Context(t), Config{Backend: "pulseaudio", Device: "yaz"}, want, func() { startedAt = time.Now() }, nil)
	playTook := time.Since(playStart)
	if err != nil {
		t.Fatalf("Play: %v", err)
	}
	if n != len(want) {
		t.Errorf("Play = %d samples, want %d", n, len(want))
	}
	if startedAt.IsZero() {
		t.Error("Play returned without calling started")
	}
	// Play waits until the device has played the audio: it cannot return
	// sooner than the audio lasts. (A floor only: a loaded machine may
	// take longer, and testwait's context bounds a hang.)
	if playTook < 900*time.Millisecond {
		t.Errorf("Play of 1 s took %v, want at least 0.9 s (it must wait for the device)", playTook)
	}
	// The monitor lags the sink a little: the whole tone is recorded once
	// 200 ms of quiet have come after it.
	waitToneEnd(t, &rec.mu, &rec.samples, &rec.got, 200*time.Millisecond)
	got := rec.stop(t)

	loud := loudPart(got, 0.1)
	d := pcm.Duration(len(loud))
	t.Logf("recorded %v, loud %v, rms %.3f, %.0f Hz; Play took %v; test %v",
		pcm.Duration(len(got)), d, rms(loud), dominantHz(loud), playTook, time.Since(t0))
	if d < 800*time.Millisecond || d > 1200*time.Millisecond {
		t.Fatalf("loud part = %v, want 1 s ± 0.2 s", d)
	}
	if r := rms(loud); r < 0.19 || r > 0.235 { // 0.3/√2 = 0.212
		t.Errorf("RMS of the tone = %.3f, want about 0.212", r)
	}
	if f := dominantHz(loud); f < 950 || f > 1050 {
		t.Errorf("dominant frequency = %.0f Hz, want about 1000", f)
	}
}

// TestPlayedWhenHeard plays a tone into an idle null sink (nothing records
// its monitor until the tone has started, as when yazsesd opens the
// microphone only to listen for an answer): the sink starts playing a
// while after the samples were handed over (0.2-2 s), so "started plus the
// tone's length" comes early. played must not: when it is called, the
// monitor has already delivered the whole tone. The recorder's position
// when played is called is compared with where the tone ends in the
// recording; the slack, 100 ms, is a few capture deliveries (the monitor
// hands audio over every 20 ms), far less than the sink's late start.
func TestPlayedWhenHeard(t *testing.T) {
	startPulse(t)
	samples := tone(1000, 0.3, 600*time.Millisecond)
	for i := range 3 {
		var (
			mu     sync.Mutex
			rec    []int16
			got    testwait.Signal // notified at each delivery
			cancel context.CancelFunc
			capErr = make(chan error, 1)
		)
		posAtPlayed := -1
		var startedAt time.Time
		n, err := Play(testwait.Context(t), Config{Backend: "pulseaudio"}, samples, func() {
			startedAt = time.Now()
			var ctx context.Context
			ctx, cancel = context.WithCancel(testwait.Context(t))
			go func() {
				capErr <- Capture(ctx, Config{Backend: "pulseaudio"}, nil, func(s []int16) {
					mu.Lock()
					rec = append(rec, s...)
					mu.Unlock()
					got.Notify()
				})
			}()
		}, func() {
			mu.Lock()
			posAtPlayed = len(rec)
			mu.Unlock()
		})
		playedAfter := time.Since(startedAt)
		if err != nil || n != len(samples) {
			t.Fatalf("Play = %d, %v; want %d, nil", n, err, len(samples))
		}
		if posAtPlayed < 0 {
			t.Fatal("Play returned nil without calling played")
		}
		// The recorder catches up: the tone's end, and 500 ms of quiet
		// after it, have come through the monitor.
		waitToneEnd(t, &mu, &rec, &got, 500*time.Millisecond)
		cancel()
		if err := testwait.Recv(t, capErr, "Capture to return after its cancel"); err != nil {
			t.Fatalf("Capture: %v", err)
		}
		toneEnd := loudEnd(rec, 0.1)
		if toneEnd < 0 {
			t.Fatalf("play %d: the monitor recorded no tone", i)
		}
		slack := pcm.Samples(100 * time.Millisecond)
		t.Logf("play %d: tone of %v; played %v after started; the tone ended in the recording %v after the recorder's position at played",
			i, pcm.Duration(len(samples)), playedAfter.Round(time.Millisecond), pcm.Duration(toneEnd-posAtPlayed))
		if toneEnd > posAtPlayed+slack {
			t.Errorf("play %d: played was called %v of audio before the tone left the device, want at most %v",
				i, pcm.Duration(toneEnd-posAtPlayed), pcm.Duration(slack))
		}
		// The sink goes idle again, so that the next play starts on an
		// idle sink as the first did: real time passing is the point, and
		// the server reports no event for it (no suspend module is loaded
		// to say when).
		time.Sleep(time.Second)
	}
}

// TestPlayCancel: cancelling stops playback at once (barge-in), after
// started, with the count of what reached the device.
func TestPlayCancel(t *testing.T) {
	startPulse(t)
	rec := record(t, Config{Backend: "pulseaudio"})
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	samples := tone(1000, 0.3, 3*time.Second)
	started := false
	begin := time.Now()
	n, err := Play(ctx, Config{Backend: "pulseaudio"}, samples, func() {
		started = true
		time.AfterFunc(300*time.Millisecond, cancel)
	}, func() { t.Error("played called for a cancelled Play") })
	took := time.Since(begin)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Play after cancel = %d, %v; want context.Canceled", n, err)
	}
	if !started {
		t.Error("started was not called")
	}
	if n <= 0 || n >= len(samples) {
		t.Errorf("Play handed %d of %d samples, want some but not all", n, len(samples))
	}
	// The cut tone has come through the monitor once 200 ms of quiet
	// follow it there.
	waitToneEnd(t, &rec.mu, &rec.samples, &rec.got, 200*time.Millisecond)
	loud := pcm.Duration(len(loudPart(rec.stop(t), 0.1)))
	t.Logf("cancelled Play returned after %v with %d samples; %v audible", took, n, loud)
	// Measured in audio, not wall time: a Play that ignored the cancel
	// plays all 3 s; a loaded machine may let some more than 0.3 s out
	// before the cancel lands, never most of it.
	if loud >= 2*time.Second || loud == 0 {
		t.Errorf("audible part after a cancel at 0.3 s of 3 s = %v, want some, well under 3 s", loud)
	}
}

func TestDeviceErrors(t *testing.T) {
	startPulse(t)
	ctx := testwait.Context(t)
	err := Capture(ctx, Config{Backend: "pulseaudio", Device: "nonexistent"}, nil, func([]int16) {})
	if !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("Capture(nonexistent) = %v, want ErrNoSuchDevice", err)
	}
	wantMsg := `open capture device "nonexistent" (backend pulseaudio): no such device; list devices with yaz-capture --list-devices`
	if err != nil && err.Error() != wantMsg {
		t.Errorf("Capture(nonexistent) error:\n got %s\nwant %s", err, wantMsg)
	}
	if _, err := Play(ctx, Config{Backend: "pulseaudio", Device: "nonexistent"}, []int16{1}, nil, nil); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("Play(nonexistent) = %v, want ErrNoSuchDevice", err)
	}

	// A sound server that is not there.
	t.Setenv("PULSE_SERVER", "unix:"+filepath.Join(t.TempDir(), "none"))
	err = Capture(ctx, Config{Backend: "pulseaudio"}, nil, func([]int16) {})
	if !errors.Is(err, ErrBackendUnavailable) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Capture without a server = %v, want one line wrapping ErrBackendUnavailable", err)
	}
	if _, err := ListDevices(Config{Backend: "sndfile"}); err == nil || !strings.Contains(err.Error(), "auto, pulseaudio, alsa, null") {
		t.Errorf("ListDevices(bad backend) = %v, want the list of backends", err)
	}
}

// TestCaptureServerGone: a device that goes away ends Capture with an
// error, not a hang.
func TestCaptureServerGone(t *testing.T) {
	defer func(d time.Duration) { stallTimeout = d }(stallTimeout)
	stallTimeout = time.Second
	startPulse(t)
	// Only a guard: the capture must end with the server, not with this.
	ctx := testwait.Context(t)
	errc := make(chan error, 1)
	ready := make(chan struct{})
	go func() { errc <- Capture(ctx, Config{Backend: "pulseaudio"}, func() { close(ready) }, func([]int16) {}) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("Capture: %v", err)
	}
	script, _ := filepath.Abs("../../scripts/pulse-test-server.sh")
	dir := filepath.Dir(os.Getenv("XDG_RUNTIME_DIR"))
	if out, err := exec.CommandContext(testwait.Context(t), script, "stop", dir).CombinedOutput(); err != nil {
		t.Fatalf("stop server: %v\n%s", err, out)
	}
	err := testwait.Recv(t, errc, "Capture to end after its server went away")
	if ctx.Err() != nil {
		t.Fatalf("Capture still ran %v after its server went away", testwait.Hang)
	}
	if !errors.Is(err, ErrDeviceStopped) {
		t.Errorf("Capture after the server went away = %v, want ErrDeviceStopped", err)
	}
}

// TestNullBackend: the null backend runs in real time, silent, with no
// sound server at all.
func TestNullBackend(t *testing.T) {
	cfg := Config{Backend: "null"}
	devs, err := ListDevices(cfg)
	if err != nil || len(devs) != 2 || !devs[0].Capture || devs[1].Capture {
		t.Fatalf("ListDevices(null) = %+v, %v; want one capture and one playback device", devs, err)
	}
	ctx, cancel := context.WithCancel(testwait.Context(t))
	var got int
	var nonzero bool
	begin := time.Now()
	err = Capture(ctx, cfg, func() {
		time.AfterFunc(500*time.Millisecond, cancel)
	}, func(s []int16) {
		got += len(s)
		for _, v := range s {
			nonzero = nonzero || v != 0
		}
	})
	if err != nil {
		t.Fatalf("Capture(null) = %v", err)
	}
	if d := pcm.Duration(got); d < 300*time.Millisecond || d > time.Since(begin)+100*time.Millisecond {
		t.Errorf("Capture(null) gave %v of audio in %v", d, time.Since(begin))
	}
	if nonzero {
		t.Error("null capture is not silent")
	}

	samples := tone(440, 0.5, 300*time.Millisecond)
	begin = time.Now()
	n, err := Play(testwait.Context(t), cfg, samples, nil, nil)
	if err != nil || n != len(samples) {
		t.Fatalf("Play(null) = %d, %v; want %d, nil", n, err, len(samples))
	}
	if took := time.Since(begin); took < 300*time.Millisecond {
		t.Errorf("Play(null) of 300 ms returned after %v", took)
	}
	if n, err := Play(testwait.Context(t), cfg, nil, func() { t.Error("started called for no samples") }, nil); n != 0 || err != nil {
		t.Errorf("Play(nothing) = %d, %v", n, err)
	}
}

// TestCaptureOverrunIsLogged: a consumer that stalls longer than the ring
// holds loses samples, and the loss is counted in a warning.
func TestCaptureOverrunIsLogged(t *testing.T) {
	defer func(n int) { ringSamples = n }(ringSamples)
	ringSamples = 1024 // 64 ms
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	ctx, cancel := context.WithCancel(testwait.Context(t))
	got := 0
	stalled := false
	var first time.Time
	err := Capture(ctx, Config{Backend: "null", Log: log}, nil, func(s []int16) {
		got += len(s)
		if !stalled {
			stalled = true
			first = time.Now()
			// The stall is what is under test: the consumer is slow for
			// longer than the ring holds.
			time.Sleep(300 * time.Millisecond)
			time.AfterFunc(100*time.Millisecond, cancel)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The device delivers in real time: without drops, the audio delivered
	// is about the time since the first delivery, however late the cancel
	// comes on a slow machine; a 300 ms stall with a 64 ms ring drops
	// about 236 ms of it.
	ran := time.Since(first)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "level=WARN msg=\"capture overrun") || !strings.Contains(logs.String(), "dropped=") {
		t.Errorf("no overrun warning after a 300 ms stall with a 64 ms ring; log:\n%s", logs.String())
	}
	if d := pcm.Duration(got); d > ran-100*time.Millisecond {
		t.Errorf("delivered %v of audio in %v with a 64 ms ring and a 300 ms stall: samples were not dropped", d, ran.Round(time.Millisecond))
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
