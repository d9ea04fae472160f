package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yazsesd/internal/desk"
	"github.com/yazses/yazses/lib/config"
)

// healthLines is a Service that records the health lines.
type healthLines struct{ lines *[]string }

func (h healthLines) Ready(string)           {}
func (h healthLines) Health(s string)        { *h.lines = append(*h.lines, s) }
func (h healthLines) Reloading()             {}
func (h healthLines) Reloaded(config.Config) {}

// A reload (SIGHUP) that is refused shows in status and on the systemd
// status line ("config: reload refused at line N: …") until a reload is
// taken, not only in the log while status says "ready"; and
// dictation.paste_over_chars, a [dictation] key, is applied by a reload:
// the typing backend is opened again with it. (The refusal was only
// logged, and paste_over_chars kept its value until a restart though the
// file's header says [dictation] applies at once.)
func TestReloadRefusedShowsInStatusUntilAGoodOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[dictation]\npaste_over_chars = 3000\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Children.Gate, cfg.Children.Speak, cfg.Children.Decode, cfg.Children.Capture = fakeChild, fakeChild, fakeChild, fakeChild
	var opened []int
	var lines []string
	d, err := New(Options{
		Config:     cfg,
		ConfigPath: path,
		Log:        slog.New(slog.DiscardHandler),
		RuntimeDir: filepath.Join(dir, "run"),
		AuditPath:  filepath.Join(dir, "audit.jsonl"),
		Desktop: testDesktop{open: func(name string, pasteOverChars int) (desk.Injector, error) {
			opened = append(opened, pasteOverChars)
			return nil, errors.New("no typing here")
		}},
		Service: healthLines{&lines},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	health := func() string { return d.healthLine(d.health.Summary()) }

	write("[dictation]\n\npaste_over_chars = -1\n")
	d.reload(ctx)
	want := "config: reload refused at line 3: dictation.paste_over_chars: must be between 0 and 1000000, got -1"
	if h := health(); !strings.Contains(h, want) {
		t.Errorf("status health after a refused reload = %q, want it to hold %q", h, want)
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], want) {
		t.Errorf("systemd status lines %q, want the last to hold %q", lines, want)
	}
	if d.config().Dictation.PasteOverChars != 3000 {
		t.Errorf("paste_over_chars = %d after a refused reload, want the old 3000", d.config().Dictation.PasteOverChars)
	}

	write("[dictation]\npaste_over_chars = 200\n")
	d.reload(ctx)
	if h := health(); strings.Contains(h, "config:") {
		t.Errorf("status health after a good reload = %q, want no refusal", h)
	}
	if len(lines) < 2 || strings.Contains(lines[len(lines)-1], "config:") {
		t.Errorf("systemd status lines %q, want the last without the refusal", lines)
	}
	if !slices.Equal(opened, []int{200}) {
		t.Errorf("the typing backend was opened with paste_over_chars %v, want once with 200 (the reloaded value)", opened)
	}
	if keys := config.NeedsRestart(cfg, d.config()); slices.Contains(keys, "dictation.paste_over_chars") {
		t.Errorf("NeedsRestart names dictation.paste_over_chars: %v", keys)
	}
}
