package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// listen makes the receiving socket, as systemd does.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// receive reads the next datagram; after testwait.Hang it fails.
func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testwait.Hang))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("waiting for the notification datagram: %v", err)
	}
	return string(buf[:n])
}

func TestNotifyPathAndAbstract(t *testing.T) {
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify"),
		fmt.Sprintf("@yazses-sdnotify-test-%d", os.Getpid()),
	} {
		t.Run(name[:1], func(t *testing.T) {
			c := listen(t, name)
			n := New(name)
			if err := n.Notify(Ready, Status("Listening\non 1 device")); err != nil {
				t.Fatal(err)
			}
			if got, want := receive(t, c), "READY=1\nSTATUS=Listening on 1 device\n"; got != want {
				t.Errorf("datagram %q, want %q", got, want)
			}
			if err := n.Notify(Reloading()); err != nil {
				t.Fatal(err)
			}
			got := receive(t, c)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if len(lines) != 2 || lines[0] != "RELOADING=1" || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") {
				t.Fatalf("datagram %q", got)
			}
			if us, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "MONOTONIC_USEC="), 10, 64); err != nil || us <= 0 {
				t.Errorf("MONOTONIC_USEC %q", lines[1])
			}
			if err := n.Notify(Stopping); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, c); got != "STOPPING=1\n" {
				t.Errorf("datagram %q", got)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	name := filepath.Join(t.TempDir(), "notify")
	c := listen(t, name)
	t.Setenv(Env, name)
	n := FromEnv(true)
	if _, ok := os.LookupEnv(Env); ok {
		t.Errorf("%s still set", Env)
	}
	if err := n.Notify(Ready); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, c); got != "READY=1\n" {
		t.Errorf("datagram %q", got)
	}
}

func TestDisabledAndErrors(t *testing.T) {
	t.Setenv(Env, "")
	var nilN *Notifier
	for _, n := range []*Notifier{nilN, New(""), FromEnv(false)} {
		if n.Enabled() || n.Notify(Ready) != nil {
			t.Errorf("%v: a notifier without a socket sends or fails", n)
		}
	}
	n := New(filepath.Join(t.TempDir(), "nobody-listens"))
	if err := n.Notify(Ready); err == nil {
		t.Error("Notify to a missing socket succeeded")
	}
	if err := New("@x").Notify("no equals sign"); !errors.Is(err, ErrBadState) {
		t.Errorf("bad state: %v", err)
	}
	if err := New("relative").Notify(Ready); err == nil {
		t.Error("relative socket name accepted")
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "20000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	if got := WatchdogInterval(); got != 10*time.Second {
		t.Errorf("WatchdogInterval = %v", got)
	}
	t.Setenv("WATCHDOG_PID", "1")
	if got := WatchdogInterval(); got != 0 {
		t.Errorf("other pid: %v", got)
	}
	t.Setenv("WATCHDOG_USEC", "")
	if got := WatchdogInterval(); got != 0 {
		t.Errorf("unset: %v", got)
	}
}
