package portal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testdesk"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/typewire"
)

// outside has what a US layout (the desk's) has no key for: a letter
// with an umlaut, a dash, Greek, the euro sign and an emoji.
const outside = "Grüße — ψυχή kostet 5 € 😀 fertig"

// TestProgramOnGNOME runs `yaz-type -b portal` against the real
// xdg-desktop-portal 1.20 with xdg-desktop-portal-gnome 48 and mutter
// (testdesk), whose consent window the shell answers as a person would
// (Tab, Tab, Space; Escape to decline): ASCII arrives in a GTK 4 field
// as keys, exactly, exit 0 (typed); a text with characters outside the
// layout arrives exactly through the portal's own clipboard and Ctrl+V,
// exit 3 (pasted: the field's fetch is seen, not what it shows), in GTK 4
// and GTK 3, and what the clipboard held before yaz-type started is put
// back after; the second and later sessions with the kept restore token
// start without a window; a declined window is exit 7 with the cause
// (unavailable, and the refusal in words), at once, with nothing typed.
func TestProgramOnGNOME(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	d := testdesk.Start(t)
	d.InstallEntry(t) // as make install does: the portal knows who asks
	ctx := testwait.Context(t)
	if err := d.AnswerConsent(ctx, testdesk.Share); err != nil {
		t.Fatal(err)
	}
	// yaz-type runs in the desk, as a program of the session does: the
	// portal tells callers apart by their process (a host process is
	// refused its session: its pid is not in the desk's namespace), and
	// the clipboard's pipes come as file descriptors, which a relay of
	// the bus's bytes would not carry.
	inside := filepath.Join(d.Runtime, "yaz-type")
	if err := copyFile(prog, inside); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(d.Runtime, "state")
	run := func(t *testing.T, stateDir, text string) (int, string) {
		t.Helper()
		cmd := d.Command(t, inside, "-b", "portal", "--log-level", "debug", "--state-dir", stateDir, text)

		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		t.Logf("yaz-type stderr:\n%s", stderr.String())
		if strings.Contains(stderr.String(), "did not take YazSes's application id") {
			t.Errorf("the portal did not take the application id:\n%s", stderr.String())
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, stderr.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), stderr.String()
		}
		t.Fatalf("yaz-type: %v", err)
		return -1, ""
	}

	windows := func(t *testing.T) int {
		t.Helper()
		n, titles, err := d.ConsentWindows(testwait.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("consent windows answered: %d; focused windows: %s", n, titles)
		return n
	}

	f4 := d.Field(t, testdesk.FieldOptions{GTK: 4})
	const ascii = "Hello, world: 1+2=3 (ok)"
	if code, _ := run(t, state, ascii); code != 0 {
		windows(t)
		t.Fatalf("yaz-type -b portal %q: exit %d, want 0 (typed)", ascii, code)
	}
	f4.WaitText(t, ascii)
	if n := windows(t); n != 1 {
		t.Fatalf("%d consent windows for the first session, want 1", n)
	}
	if code, stderr := run(t, state, outside); code != 3 || !strings.Contains(stderr, "pasted") {
		t.Fatalf("yaz-type -b portal (characters outside the layout): exit %d, want 3 (pasted)", code)
	}
	f4.WaitText(t, ascii+outside)
	restored := windows(t) == 1

	// A copy made before yaz-type starts is put back after its paste:
	// mutter says who owns the clipboard as the session gets it, and the
	// paste waits for that word before it offers its own text.
	f3 := d.Field(t, testdesk.FieldOptions{GTK: 3})
	const earlier = "vor dem Start kopiert"
	if err := d.SetClipboard(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	if code, _ := run(t, state, outside); code != 3 {
		t.Fatalf("yaz-type -b portal into GTK 3: exit %d, want 3 (pasted)", code)
	}
	f3.WaitText(t, outside)
	if err := d.Chord(ctx, "Control_L", "v"); err != nil {
		t.Fatal(err)
	}
	f3.WaitText(t, outside+earlier)
	if code, _ := run(t, state, ascii); code != 0 {
		t.Fatalf("yaz-type -b portal into GTK 3: exit %d, want 0 (typed)", code)
	}
	f3.WaitText(t, outside+earlier+ascii)
	if !restored {
		t.Errorf("the second session showed a consent window again: the restore token did not restore it")
	} else if n := windows(t); n != 1 {
		t.Errorf("%d consent windows for four sessions with a kept token, want 1", n)
	}

	// A copy made while a session lives (as the daemon's does) is put
	// back after its next paste, and stays after yaz-type has ended:
	// Ctrl+V pastes it.
	const copied = "vorher kopiert"
	cmd := d.Command(t, inside, "-b", "portal", "--log-level", "debug", "--state-dir", state)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	lines := &testwait.Buffer{}
	cmd.Stderr = lines
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "eins\n"); err != nil {
		t.Fatal(err)
	}
	want := outside + earlier + ascii + "eins"
	f3.WaitText(t, want)
	if err := d.SetClipboard(ctx, copied); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Until(ctx, func() bool { return strings.Contains(lines.String(), "clipboard's owner changed\" text=true") }, lines); err != nil {
		t.Fatalf("the session never heard of the copy: %v\n%s", err, lines.String())
	}
	if _, err := io.WriteString(stdin, outside+"\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	err = cmd.Wait()
	t.Logf("yaz-type stderr:\n%s", lines.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("yaz-type -b portal, two lines: %v, want exit 3 (the second pasted)", err)
	}
	want += " " + outside
	f3.WaitText(t, want)
	if err := d.Chord(ctx, "Control_L", "v"); err != nil {
		t.Fatal(err)
	}
	want += copied
	f3.WaitText(t, want)

	// Declined: a state folder with no token, so the window shows.
	if err := d.AnswerConsent(ctx, testdesk.Decline); err != nil {
		t.Fatal(err)
	}
	before := windows(t)
	code, stderr := run(t, filepath.Join(d.Runtime, "fresh"), "abgelehnt")
	if code != 7 || !strings.Contains(stderr, "(unavailable)") || !strings.Contains(stderr, "refused") {
		t.Errorf("yaz-type -b portal with the window declined: exit %d, want 7 saying unavailable and refused", code)
	}
	if n := windows(t); n != before+1 {
		t.Errorf("%d consent windows answered, want %d", n, before+1)
	}
	if got := f3.Text(); got != want {
		t.Errorf("the field holds %q after the declined window, want %q", got, want)
	}
}

// copyFile copies the program src to dst (mode 0755).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestServeOnGNOME runs `yaz-type --serve -b portal`, the daemon's typing
// child, on the real GNOME desk: the consent notification comes before
// the window, the one session it keeps types ASCII (typed) and pastes a
// text with characters outside the layout (pasted) exactly into a GTK 4
// field, and, while it lives, serves the clipboard itself: a text copied
// after its start is put back after its paste, and Ctrl+V in the field
// then pastes the copy (served by the session).
func TestServeOnGNOME(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	d := testdesk.Start(t)
	d.InstallEntry(t) // as make install does: the portal knows who asks
	ctx := testwait.Context(t)
	if err := d.AnswerConsent(ctx, testdesk.Share); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(d.Runtime, "yaz-type")
	if err := copyFile(prog, inside); err != nil {
		t.Fatal(err)
	}
	f := d.Field(t, testdesk.FieldOptions{GTK: 4})
	cmd := d.Command(t, inside, "--serve", "-b", "portal", "--log-level", "debug", "--state-dir", filepath.Join(d.Runtime, "state"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testwait.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan typewire.Event, 16)
	go func() {
		defer close(events)
		dec := json.NewDecoder(stdout)
		for {
			var ev typewire.Event
			if err := dec.Decode(&ev); err != nil {
				return
			}
			events <- ev
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		for range events {
		}
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("yaz-type --serve stderr:\n%s", logs.String())
		}
	})
	if ev := testwait.Recv(t, events, "the consent notification"); ev.Notify != NotifyConsent {
		t.Fatalf("first event %+v, want the %q notification", ev, NotifyConsent)
	}
	logged := func(what string) {
		t.Helper()
		if err := testwait.Until(ctx, func() bool { return strings.Contains(logs.String(), what) }, logs); err != nil {
			t.Fatalf("waiting for %q in the log: %v", what, err)
		}
	}
	logged("state=ready")
	enc := json.NewEncoder(stdin)
	send := func(id, text string) typewire.Event {
		t.Helper()
		if err := enc.Encode(typewire.Request{ID: id, Op: typewire.OpType, Text: text}); err != nil {
			t.Fatal(err)
		}
		ev := testwait.Recv(t, events, "the outcome of "+id)
		if ev.ID != id {
			t.Fatalf("event %+v, want the outcome of %s", ev, id)
		}
		return ev
	}
	const ascii = "Hello, world: 1+2=3 (ok)"
	if ev := send("1", ascii); ev.Outcome != typewire.OutcomeTyped {
		t.Fatalf("outcome %+v, want typed", ev)
	}
	f.WaitText(t, ascii)
	if ev := send("2", outside); ev.Outcome != typewire.OutcomePasted {
		t.Fatalf("outcome %+v, want pasted", ev)
	}
	f.WaitText(t, ascii+outside)
	const copied = "vorher kopiert"
	if err := d.SetClipboard(ctx, copied); err != nil {
		t.Fatal(err)
	}
	logged("clipboard's owner changed\" text=true session_is_owner=false")
	if ev := send("3", outside); ev.Outcome != typewire.OutcomePasted {
		t.Fatalf("outcome %+v, want pasted", ev)
	}
	f.WaitText(t, ascii+outside+outside)
	if err := d.Chord(ctx, "Control_L", "v"); err != nil {
		t.Fatal(err)
	}
	f.WaitText(t, ascii+outside+outside+copied)
}
