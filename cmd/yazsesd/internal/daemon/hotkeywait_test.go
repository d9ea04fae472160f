package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
)

// waitingKeys is a WaitingHotkey that says what it waits for when the
// test says so.
type waitingKeys struct{ says, done chan string }

func (k waitingKeys) Listen(ctx context.Context, press func(bool)) error {
	<-ctx.Done()
	return nil
}

func (k waitingKeys) ListenWaiting(ctx context.Context, press func(bool), waiting func(string)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case what := <-k.says:
			waiting(what)
			k.done <- what
		}
	}
}

// TestHotkeyStatusWaiting: what the key source waits for (the desktop's
// portal at login) is in the status while it waits, and gone once it
// listens.
func TestHotkeyStatusWaiting(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Children.Gate, cfg.Children.Speak, cfg.Children.Decode, cfg.Children.Capture = fakeChild, fakeChild, fakeChild, fakeChild
	cfg.Hotkey.Enabled = true
	cfg.Hotkey.Source = config.HotkeySourcePortal
	k := waitingKeys{says: make(chan string, 1), done: make(chan string, 1)}
	d, err := New(Options{
		Config:     cfg,
		Log:        slog.New(slog.DiscardHandler),
		RuntimeDir: filepath.Join(dir, "run"),
		AuditPath:  filepath.Join(dir, "audit.jsonl"),
		Desktop:    testDesktop{hotkey: k},
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
	defer func() {
		cancel()
		if err := testwait.Recv(t, runErr, "Run to end"); err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	say := func(what string) {
		t.Helper()
		k.says <- what
		testwait.Recv(t, k.done, "the key source to have said it")
	}
	say("the desktop portal")
	if st := d.desk.Hotkey(); !st.Listening || st.Waiting != "the desktop portal" {
		t.Errorf("status %+v while waiting, want listening and waiting for the desktop portal", st)
	}
	say("")
	if st := d.desk.Hotkey(); !st.Listening || st.Waiting != "" {
		t.Errorf("status %+v once bound, want listening, waiting for nothing", st)
	}
}
