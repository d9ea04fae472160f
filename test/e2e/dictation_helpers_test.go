package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testbus"
	"github.com/yazses/yazses/internal/testnotify"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// The X server and the recording xterm are internal/testx's (shared with
// cmd/yaz-type/internal/inject's tests).

// xserver is a private Xvfb.
type xserver = *testx.X

// startX starts a private Xvfb. A missing Xvfb (or X tool) fails the
// test: scripts/install-deps.sh installs them.
func startX(t testing.TB) xserver { return testx.Start(t) }

// recorder is an xterm that records every byte it receives.
type recorder struct{ *testx.Recorder }

// startRecorder opens the xterm, with xterm's own paste keys (Shift+Insert
// pastes PRIMARY).
func startRecorder(t testing.TB, x xserver) *recorder {
	return &recorder{testx.StartRecorder(t, x.Env)}
}

var (
	runTool = testx.RunTool
	setClip = testx.SetClip
	getClip = testx.Clip
)

// settled returns everything the window received once every key sent
// before the call has arrived (testx.Recorder.Settled: a marker typed
// after them): a late key (an Enter typed after the text) shows up here.
func (r *recorder) settled(t testing.TB) string {
	t.Helper()
	return r.Settled(t)
}

var speechWAVs struct {
	mu    sync.Mutex
	dir   string
	paths map[time.Duration]string
}

// speechWAV is jfk.wav cut (or looped) to d, as a 16 kHz mono WAV file,
// made once per duration for the suite.
func speechWAV(t testing.TB, d time.Duration) string {
	t.Helper()
	speechWAVs.mu.Lock()
	defer speechWAVs.mu.Unlock()
	if p, ok := speechWAVs.paths[d]; ok {
		return p
	}
	if speechWAVs.dir == "" {
		dir, err := os.MkdirTemp("", "yazses-speech-")
		if err != nil {
			t.Fatal(err)
		}
		speechWAVs.dir, speechWAVs.paths = dir, map[time.Duration]string{}
	}
	src, _, err := wav.ReadFile16k(world.jfk, 16000*3600)
	if err != nil {
		t.Fatalf("read jfk.wav: %v", err)
	}
	n := pcm.Samples(d)
	out := make([]float32, 0, n)
	for len(out) < n {
		out = append(out, src[:min(len(src), n-len(out))]...)
	}
	data := pcm.Encode(nil, pcm.FromFloat32(nil, out))
	p := filepath.Join(speechWAVs.dir, fmt.Sprintf("jfk-%dms.wav", d.Milliseconds()))
	if err := os.WriteFile(p, append(pcm.WAVHeader(int64(len(data))), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	speechWAVs.paths[d] = p
	return p
}

// wavDuration is the length of a 16 kHz mono 16-bit WAV file.
func wavDuration(t testing.TB, path string) time.Duration {
	t.Helper()
	s, _, err := wav.ReadFile16k(path, 16000*3600)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return pcm.Duration(len(s))
}

// holdWhileSpeaking opens a hold and keeps it while the capture child replays its
// file (it ends with the file), then returns. The hold stays open.
func (d *daemon) holdWhileSpeaking(c *daemonapi.Client, speech time.Duration) {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStart)
	if err != nil || r.Hold != daemonapi.HoldHolding {
		d.T.Fatalf("hold.start = %+v, %v", r, err)
	}
	d.waitReplayed(speech)
}

// holdUntil opens a hold and returns once the capture child has replayed
// at of its file. The time is taken from the child's start as the
// daemon logged it ("child started": the file is paced in real time from
// there, after the few milliseconds the child takes to start), so a
// release lands at a chosen place in the audio whatever the machine's
// load, as a person's finger follows their own voice.
func (d *daemon) holdUntil(c *daemonapi.Client, at time.Duration) {
	d.T.Helper()
	n := len(d.Records("capture", "child started"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStart)
	if err != nil || r.Hold != daemonapi.HoldHolding {
		d.T.Fatalf("hold.start = %+v, %v", r, err)
	}
	d.WaitLog(10*time.Second, "the capture child to start", func(m map[string]any) bool {
		return len(d.Records("capture", "child started")) > n
	})
	recs := d.Records("capture", "child started")
	started, err := time.Parse(time.RFC3339Nano, fmt.Sprint(recs[len(recs)-1]["time"]))
	if err != nil {
		d.T.Fatalf("child started record time: %v", err)
	}
	time.Sleep(time.Until(started.Add(at)))
}

// waitReplayed waits until the capture child has replayed its file:
// it ran and is no longer running (a file of length speech).
func (d *daemon) waitReplayed(speech time.Duration) {
	d.T.Helper()
	start := time.Now()
	seen := false
	d.WaitFor(speech+30*time.Second, "the capture child to replay its file", func() bool {
		st := d.Child("capture").State
		if st == "running" {
			seen = true
			return false
		}
		return (seen || time.Since(start) > speech+2*time.Second) && time.Since(start) > speech
	})
}

// stopHold ends the hold and returns its result.
func (d *daemon) stopHold(c *daemonapi.Client) daemonapi.HoldResult {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStop)
	if err != nil {
		d.T.Fatalf("hold.stop: %v\n%s", err, d.LogTail(30))
	}
	return r
}

// lastByCtl is `yazsesd ctl last`, run as a separate process, parsed.
func (d *daemon) lastByCtl() daemonapi.Last {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, stderr, code := d.Ctl(ctx, "last")
	if code != 0 {
		d.T.Fatalf("yazsesd ctl last: exit %d: %s", code, stderr)
	}
	var l daemonapi.Last
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		d.T.Fatalf("yazsesd ctl last printed %q: %v", out, err)
	}
	return l
}

// notes is a notification server of the test's own (internal/testnotify)
// on a private session bus that the daemon is pointed at: it records every
// notification the daemon sends over D-Bus, one line each (summary|body).
type notes struct {
	env string // DBUS_SESSION_BUS_ADDRESS for the daemon
	srv *testnotify.Server
}

// notificationServer starts a private bus with the server on it.
func notificationServer(t testing.TB) notes {
	t.Helper()
	dir, err := os.MkdirTemp("", "yen-") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return notesOn(t, testbus.Start(t, dir).Addr)
}

// notesOn starts the server on the bus at addr.
func notesOn(t testing.TB, addr string) notes {
	t.Helper()
	return notes{env: "DBUS_SESSION_BUS_ADDRESS=" + addr, srv: testnotify.Start(t, addr, false)}
}

func (n notes) lines() []string {
	var out []string
	for _, note := range n.srv.Notes() {
		out = append(out, note.Summary+"|"+note.Body)
	}
	return out
}

// waitFor waits until a notification contains s (the server's signal on
// every call).
func (n notes) waitFor(t testing.TB, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	has := func() bool {
		return slices.ContainsFunc(n.lines(), func(l string) bool { return strings.Contains(l, s) })
	}
	if testwait.Until(ctx, has, n.srv) != nil {
		t.Fatalf("no notification with %q; got %q", s, n.lines())
	}
}
