package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// The health proofs: a daemon that cannot decode says
// why, where the person looks: its own ERROR line, `yazsesd status`, the
// result of hold.stop, one desktop notification, and the systemd status
// line, which it sends with READY=1 only once its children are up or have
// failed. The daemon runs with a NOTIFY_SOCKET of the test's own, as
// systemd would give it.

// sdNotify is a systemd notification socket: every datagram the daemon
// sends, in order.
type sdNotify struct {
	path string
	msgs chan string
}

func listenNotify(t *testing.T) *sdNotify {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	s := &sdNotify{path: path, msgs: make(chan string, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

func (s *sdNotify) env() string { return "NOTIFY_SOCKET=" + s.path }

// ready waits for the datagram with READY=1 and returns the STATUS= text
// in force then (from it, or the last one before it).
func (s *sdNotify) ready(t *testing.T, d *daemon) (status string, before []string) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		select {
		case m := <-s.msgs:
			before = append(before, m)
			for _, line := range strings.Split(m, "\n") {
				if v, ok := strings.CutPrefix(line, "STATUS="); ok {
					status = v
				}
			}
			if strings.Contains("\n"+m, "\nREADY=1") {
				return status, before
			}
		case <-d.Done:
			t.Fatalf("yazsesd exited before READY=1\n%s", d.LogTail(30))
		case <-deadline:
			t.Fatalf("no READY=1 within 90 s; got %q\n%s", before, d.LogTail(30))
		}
	}
}

// badModels are model files a person may end up with, each with the cause
// the decoder gives and words its message must hold.
func badModels(t *testing.T, dir string) []struct{ name, path, cause, says string } {
	t.Helper()
	text := filepath.Join(dir, "ggml-small.en.bin")
	os.WriteFile(text, []byte("<html><body>502 Bad Gateway</body></html>\n"), 0o644)
	vad := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	os.WriteFile(vad, []byte("lmgg\x0a\x00\x00\x00silero-16k\x06\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"), 0o644)
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "ggml-tiny.en.bin")
	os.WriteFile(cut, b.Bytes()[:b.Len()/2], 0o644)
	missing := filepath.Join(dir, "models", "ggml-base.en.bin")
	return []struct{ name, path, cause, says string }{
		{"missing", missing, "model_missing", "model not found: " + missing + " — fetch one with yaz-fetch-model base.en"},
		{"html", text, "model_invalid", text + `: not a ggml model file (it starts with "<html><body>502")`},
		{"vad", vad, "model_invalid", vad + " is a Silero VAD model (silero-16k 6.2.0), not a whisper or Parakeet model"},
		{"truncated", cut, "model_invalid", cut + ": model file is truncated"},
	}
}

// TestDaemonWithoutUsableModel: the real yazsesd and the real yaz-decode
// with a model that is missing, an HTML page, a Silero VAD model or a model
// cut in half. The decoder is not restarted (exit 125); READY=1 comes once
// it has failed, with the cause as the systemd status line; the daemon's
// own ERROR line, `yazsesd status` (JSON and text) and hold.start carry the
// message; one notification says it (the missing model; the others check
// the rest).
func TestDaemonWithoutUsableModel(t *testing.T) {
	t.Parallel()
	for _, m := range badModels(t, t.TempDir()) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			sd := listenNotify(t)
			n := notificationServer(t)
			d := newDaemon(t, baseConfig().With("decode.model", q(m.path)), sd.env(), n.env)
			d.Start()
			status, _ := sd.ready(t, d)
			if want := "decode: " + m.says; !strings.Contains(status, want) {
				t.Errorf("systemd status at READY=1 = %q, want it to say %q", status, want)
			}
			dc := d.Child("decode")
			if dc.State != "exited" || dc.Restarts != 0 || dc.Cause != m.cause || !strings.HasPrefix(dc.Reason, m.says) {
				t.Errorf("status of decode = %+v, want exited, never restarted, cause %s, reason %q", dc, m.cause, m.says)
			}
			if st := d.Status(); !strings.Contains(st.Health, m.says) {
				t.Errorf("status health = %q, want the cause", st.Health)
			}
			// The daemon's own ERROR line (not only the child's, relabelled).
			own := 0
			for _, r := range d.LogRecords() {
				if r["child"] == nil && r["level"] == "ERROR" && strings.HasPrefix(r["msg"].(string), "decode: ") &&
					strings.Contains(r["msg"].(string), m.says) && r["cause"] == m.cause {
					own++
				}
			}
			if own != 1 {
				t.Errorf("the daemon logged %d ERROR lines of its own with the cause, want 1\n%s", own, d.LogTail(20))
			}
			if m.name != "missing" {
				return
			}
			if dc.Reason != m.says {
				t.Errorf("decode reason = %q, want exactly %q", dc.Reason, m.says)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, stderr, code := d.Ctl(ctx, "status")
			if code != 0 || !strings.Contains(out, `"cause": "model_missing"`) {
				t.Errorf("yazsesd ctl status: exit %d, %s %s", code, out, stderr)
			}
			cmd := execIn(ctx, d, "status")
			text, err := cmd.Output()
			if err != nil || !strings.Contains(string(text), "decode: "+m.says) {
				t.Errorf("yazsesd status: %v\n%s\nwant the line %q", err, text, "decode: "+m.says)
			}
			// The hold is refused at its start (the decoder is down for
			// good): the person is not asked to speak first, and one
			// pressing the key learns why from a notification, one per
			// refusal window (30 s per cause) however often the key is
			// pressed: five presses here give one.
			c := d.Client()
			first := time.Now()
			for i := range 5 {
				method := daemonapi.MethodHoldStart
				if i%2 == 1 {
					method = daemonapi.MethodHoldToggle
				}
				r, err := c.Hold(ctx, method)
				if err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "failed" || r.Cause != "model_missing" || !strings.Contains(r.Reason, m.says) {
					t.Errorf("%s %d = %+v, %v; want idle, failed with cause model_missing and the message as reason", method, i+1, r, err)
				}
			}
			windows := 1 + int(time.Since(first)/(30*time.Second)) // a loaded machine may have taken longer
			n.waitFor(t, "Not listening")
			// A transcribe (yaz-mcp's resident path) is refused at once,
			// so the caller can decode elsewhere, instead of waiting for
			// a decoder that will not come.
			tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer tcancel()
			_, err = d.Client().Transcribe(tctx, answerWAV())
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != daemonapi.CodeUnavailable {
				t.Errorf("transcribe with the decoder down = %v, want the unavailable error (code %d)", err, daemonapi.CodeUnavailable)
			}
			c.Close()
			d.Stop() // every notification posted is shown before the daemon exits
			down, refused := 0, 0
			for _, l := range n.lines() {
				switch {
				case strings.Contains(l, "No speech model: dictation cannot work"):
					down++
				case strings.Contains(l, "Not listening: no speech model") && strings.Contains(l, "yazsesd status"):
					refused++
				}
			}
			if down != 1 {
				t.Errorf("%d notifications that the model is missing, want 1 (when the decoder went down): %q", down, n.lines())
			}
			if refused < 1 || refused > windows {
				t.Errorf("%d notifications for 5 refused holds in %d refusal window(s), want 1 per window: %q", refused, windows, n.lines())
			}
			if k := d.Count("child.exited", "model_missing"); k != 1 {
				t.Errorf("audit has %d child.exited model_missing, want 1", k)
			}
		})
	}
}

// execIn is a yazsesd client command in the daemon's environment.
func execIn(ctx context.Context, d *daemon, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin("yazsesd"), args...)
	cmd.Env = d.Env
	return cmd
}

// TestDaemonReadyOnceChildrenUp: with a usable model READY=1 comes once
// the gate, the speaker and the decoder are running (not as soon as the
// socket listens), and the systemd status line then says so.
func TestDaemonReadyOnceChildrenUp(t *testing.T) {
	t.Parallel()
	sd := listenNotify(t)
	d := newDaemon(t, baseConfig().With("decode.model", q(world.tinyEn)), sd.env())
	d.Start()
	status, _ := sd.ready(t, d)
	st := d.Status()
	for _, c := range st.Children {
		if c.Name != "capture" && c.State != "running" {
			t.Errorf("at READY=1 child %s is %s, want running", c.Name, c.State)
		}
	}
	if status != "ready" || st.Health != "ready" {
		t.Errorf("systemd status %q, health %q at READY=1; want ready", status, st.Health)
	}
}

// TestDaemonStatusShowsSetup: `yazsesd status` shows what the daemon
// runs with: each child's version (from its own --version), the model, the
// device the decoder loaded it on (decode.device auto: the CPU here, where
// lavapipe is the only GPU and auto never takes a software one), the
// typing backends "auto" resolves to, the capture device and whether the
// hotkey listener runs (here on a FIFO standing in for an input device);
// and, when it cannot, why.
func TestDaemonStatusShowsSetup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "event0")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig().With("hotkey.enabled", "true").With("hotkey.device", q(fifo)).
		With("capture.device", q("yaz.monitor"))
	d := startDaemon(t, cfg, "DISPLAY=:99", "WAYLAND_DISPLAY=")
	var st daemonapi.Status
	d.WaitFor(20*time.Second, "every version", func() bool {
		st = d.Status()
		for _, c := range st.Children {
			if c.Version == "" {
				return false
			}
		}
		return true
	})
	d.WaitRunning("decode") // ready: it has named its device
	st = d.Status()
	out, _ := exec.Command(bin("yaz-decode"), "--version").Output()
	want := strings.TrimSpace(string(out))
	for _, c := range st.Children {
		if c.Name == "decode" && !strings.Contains(want, c.Version) {
			t.Errorf("decode version %q, yaz-decode --version says %q", c.Version, want)
		}
	}
	if st.Model != world.mini {
		t.Errorf("status model = %q, want %q", st.Model, world.mini)
	}
	if dd := st.DecodeDevice; dd.Setting != "auto" || dd.Device == nil || dd.Device.Name != "CPU" || dd.Device.Kind != "cpu" {
		t.Errorf("status decode_device = %+v (device %+v), want auto on the CPU", dd, dd.Device)
	}
	if st.Typing.Inject != "auto" || strings.Join(st.Typing.Backends, ",") != "x11,clipboard" || st.Typing.Route != "x11" {
		t.Errorf("status typing = %+v, want auto resolved to x11, clipboard", st.Typing)
	}
	if st.CaptureDevice != "yaz.monitor" {
		t.Errorf("status capture device = %q", st.CaptureDevice)
	}
	if !st.Hotkey.Enabled || !st.Hotkey.Listening || st.Hotkey.Key != "KEY_RIGHTCTRL" {
		t.Errorf("status hotkey = %+v, want enabled and listening for KEY_RIGHTCTRL", st.Hotkey)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text, err := execIn(ctx, d, "status").Output()
	for _, w := range []string{"model\t", world.mini, "auto → CPU", "typing", "auto → x11, clipboard", "yaz.monitor", "hotkey", "KEY_RIGHTCTRL (listening)"} {
		w = strings.ReplaceAll(w, "\t", "")
		if err != nil || !strings.Contains(string(text), w) {
			t.Errorf("yazsesd status: %v; want %q in\n%s", err, w, text)
		}
	}

	// No display and no input device: status says so.
	d2 := startDaemon(t, baseConfig().With("hotkey.enabled", "true").With("hotkey.device", q(filepath.Join(dir, "nope"))),
		"DISPLAY=", "WAYLAND_DISPLAY=")
	d2.WaitFor(20*time.Second, "the hotkey listener's end", func() bool { return d2.Status().Hotkey.Error != "" })
	st = d2.Status()
	if st.Hotkey.Listening || !strings.Contains(st.Hotkey.Error, "nope") {
		t.Errorf("status hotkey = %+v, want not listening, with the error", st.Hotkey)
	}
	if len(st.Typing.Backends) != 0 || st.Typing.Error == "" {
		t.Errorf("status typing = %+v, want no backend and why", st.Typing)
	}
}
