package testdesk

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// TestDesk: a real GNOME Shell comes up, answers Eval, shows its session
// bus and Wayland socket to the host, and a GTK 4 and a GTK 3 field each
// take the focus and report their text; at the end no mount of the desk
// is left on the host.
func TestDesk(t *testing.T) {
	var scratch string
	t.Run("up", func(t *testing.T) {
		d := Start(t)
		scratch = d.Runtime
		ctx := testwait.Context(t)
		got, err := d.Eval(ctx, "Main.overview.visible")
		if err != nil || got != "false" {
			t.Fatalf("Eval(Main.overview.visible) = %q, %v; want false", got, err)
		}
		if fi, err := os.Stat(d.WaylandSocket); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("the Wayland socket %s on the host: %v", d.WaylandSocket, err)
		}
		for _, gtk := range []int{4, 3} {
			f := d.Field(t, FieldOptions{GTK: gtk})
			if f.Text() != "" {
				t.Fatalf("GTK %d: a new field holds %q", gtk, f.Text())
			}
		}
	})
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if scratch != "" && strings.Contains(string(mounts), filepath.Dir(scratch)) {
		t.Errorf("a mount of the desk is left on the host:\n%s", mounts)
	}
}

// TestDeskDiesWithTest: a test process killed with SIGKILL (no cleanup
// runs) takes its desk with it: the desk's init, and so every process of
// its PID namespace, ends, and its mounts were never the host's.
func TestDeskDiesWithTest(t *testing.T) {
	if os.Getenv("YAZ_TESTDESK_HELPER") == "1" {
		d := Start(t)
		fmt.Printf("DESK %d %s\n", d.Pid(), d.Runtime)
		select {} // until killed
	}
	Root(t) // skips or fails here, not in the helper, without a desk
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeskDiesWithTest$", "-test.v")
	cmd.Env = append(os.Environ(), "YAZ_TESTDESK_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	var pid int
	var run string
	for pid == 0 {
		line := testwait.Recv(t, lines, "the helper's desk")
		if _, err := fmt.Sscanf(line, "DESK %d %s", &pid, &run); err != nil {
			pid = 0
		}
	}
	ended, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, exited, "the killed helper's end")
	testwait.Closed(t, ended, "the desk's init to end with the killed test")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), run) {
		t.Errorf("a mount of the killed test's desk is on the host:\n%s", mounts)
	}
	// Its folders are the killed test's leftovers: remove them.
	os.RemoveAll(filepath.Dir(run))
}

// TestBusAddress: a socket path is escaped as D-Bus addresses are, so a
// folder named for a benchmark ("route=ibus") or holding a comma or a
// space is one path, and plain characters stay as they are.
func TestBusAddress(t *testing.T) {
	for path, want := range map[string]string{
		"/tmp/run/bus":                "unix:path=/tmp/run/bus",
		"/tmp/BenchX_route=ibus1/bus": "unix:path=/tmp/BenchX_route%3dibus1/bus",
		"/tmp/a,b c/bus":              "unix:path=/tmp/a%2cb%20c/bus",
	} {
		if got := BusAddress(path); got != want {
			t.Errorf("BusAddress(%q) = %q, want %q", path, got, want)
		}
	}
}
