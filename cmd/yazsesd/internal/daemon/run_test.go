package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/yazses/yazses/cmd/yazsesd/internal/desk"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
)

// fakeChild is a child that signals readiness and then reads its stdin
// until the daemon closes it or stops it: enough for the daemon to run.
var fakeChild = []string{"/bin/sh", "-c", `echo >&"$YAZ_READY_FD"; exec cat >/dev/null`}

// testDesktop is a Desktop of the test's: its hotkey and injector, no
// notifications.
type testDesktop struct {
	hotkey desk.Hotkey
	open   func(name string, pasteOverChars int) (desk.Injector, error)
}

func (d testDesktop) Notify(context.Context, string) {}
func (d testDesktop) OpenInjector(name string, pasteOverChars int) (desk.Injector, error) {
	if d.open == nil {
		return nil, errors.New("no typing in this test")
	}
	return d.open(name, pasteOverChars)
}
func (d testDesktop) OpenHotkey() (desk.Hotkey, error) {
	if d.hotkey == nil {
		return nil, errors.New("no hotkey in this test")
	}
	return d.hotkey, nil
}

// keys is a Hotkey that runs a function.
type keys func(ctx context.Context, press func(down bool)) error

func (k keys) Listen(ctx context.Context, press func(down bool)) error { return k(ctx, press) }

// A hotkey release decodes and types after the key is up, on the hold's
// own goroutine: Run waits for it before it closes the audit log, so the
// stop's audit event is written, and no goroutine outlives Run (goleak, in
// TestMain). The release is taken before the hotkey's next event is read,
// so the hold is in its tail (1.5 s) when the daemon is told to stop; the
// tail is cut short and the hold ends too short. (The stop used to run
// outside Run's WaitGroup: its event was lost to a closed log, and its
// goroutine outlived Run. Later it ran on a goroutine of its own that
// could reach the hold after the daemon stopped: the hold was dropped
// without its event, 2 runs in 30.)
func TestRunWaitsForHotkeyStop(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Children.Gate, cfg.Children.Speak, cfg.Children.Decode, cfg.Children.Capture = fakeChild, fakeChild, fakeChild, fakeChild
	cfg.Hotkey.Enabled = true
	cfg.Dictation.TailMs = 1500
	cfg.Dictation.MinUtteranceMs = 60000
	released := make(chan struct{})
	d, err := New(Options{
		Config:     cfg,
		Log:        slog.New(slog.DiscardHandler),
		RuntimeDir: filepath.Join(dir, "run"),
		AuditPath:  filepath.Join(dir, "audit.jsonl"),
		Desktop: testDesktop{hotkey: keys(func(ctx context.Context, press func(bool)) error {
			press(true)
			press(false)
			close(released)
			<-ctx.Done()
			return nil
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx, nil) }()
	<-released // the release was taken: the hold is in its tail
	cancel()
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	evs, err := audit.Read(filepath.Join(dir, "audit.jsonl"), 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	stop, stopped := slices.Index(kinds, "dictation.too_short"), slices.Index(kinds, "daemon.stopped")
	if stop < 0 || stopped < 0 || stop > stopped {
		t.Errorf("audit %q: want dictation.too_short (the hotkey's stop) before daemon.stopped", kinds)
	}
}
