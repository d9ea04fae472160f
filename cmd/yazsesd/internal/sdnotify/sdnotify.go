// Package sdnotify tells systemd how the service is doing: the sd_notify(3)
// protocol, written by hand (no libsystemd, no cgo).
//
// Each message is one datagram of newline-separated KEY=VALUE lines sent to
// the unix datagram socket named by $NOTIFY_SOCKET; a name that starts with
// '@' is in the abstract namespace. Without $NOTIFY_SOCKET (not started by
// systemd, or a unit that is not Type=notify) every call does nothing.
//
// yazsesd sends [Ready] once its socket listens and each child it starts
// at boot is up or has failed its first start, [Reloading] then [Ready]
// around a SIGHUP reload, [Stopping] when it shuts down, and [Status] lines
// that `systemctl --user status yazsesd` shows: its health line ("ready",
// or each child that is down and why, e.g. "decode: model not found: PATH —
// fetch one with yaz-fetch-model base.en"), sent with Ready and whenever it
// changes. Status texts never hold a transcript.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Env is the variable that names the socket.
const Env = "NOTIFY_SOCKET"

// States.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Watchdog = "WATCHDOG=1"
)

// ErrBadState is a state that is not KEY=VALUE on one line.
var ErrBadState = errors.New("sd_notify state must be KEY=VALUE on one line")

// Reloading is "RELOADING=1" with the MONOTONIC_USEC that systemd wants
// with it (Type=notify-reload requires it; Type=notify accepts it).
func Reloading() string {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	usec := ts.Nano() / 1000
	return "RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(usec, 10)
}

// Status is a "STATUS=" line; line breaks and other control characters in s
// become spaces.
func Status(s string) string {
	return "STATUS=" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// Notifier sends to one socket. The zero value (and nil) sends nothing.
type Notifier struct {
	addr string
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET. With unset, the variable is
// removed from the environment so that child processes do not inherit it.
func FromEnv(unset bool) *Notifier {
	n := &Notifier{addr: os.Getenv(Env)}
	if unset {
		os.Unsetenv(Env)
	}
	return n
}

// New returns a Notifier for the socket addr ("" sends nothing).
func New(addr string) *Notifier { return &Notifier{addr: addr} }

// Enabled reports whether there is a socket to send to.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != "" }

// Notify sends the states in one datagram. Without a socket it does
// nothing and returns nil.
func (n *Notifier) Notify(states ...string) error {
	if !n.Enabled() || len(states) == 0 {
		return nil
	}
	for _, s := range states {
		for _, line := range strings.Split(s, "\n") {
			if k, _, ok := strings.Cut(line, "="); !ok || k == "" {
				return fmt.Errorf("sd_notify: %w", ErrBadState)
			}
		}
	}
	addr := n.addr
	if addr[0] != '@' && addr[0] != '/' {
		return fmt.Errorf("sd_notify: %s is neither a path nor an abstract name", Env)
	}
	// Go's unix sockets put a leading '@' into the abstract namespace.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(strings.Join(states, "\n") + "\n")); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// WatchdogInterval is how often systemd wants Watchdog (half of
// $WATCHDOG_USEC, as sd_watchdog_enabled(3) advises); 0 when the watchdog
// is off or meant for another process.
func WatchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}
