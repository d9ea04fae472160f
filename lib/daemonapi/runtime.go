package daemonapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/safesocket"
)

// userRunRoot holds the per-user runtime folders that systemd-logind (or
// elogind) makes at login: /run/user/UID. It is a variable only so that
// the test builds of the programs (internal/testbin, with go build
// -ldflags -X) look in a folder of the test run instead, and the tests
// never reach, or touch, the user's own daemon; nothing at run time (no
// flag, no environment variable) can change it.
var userRunRoot = "/run/user"

// UserRunRoot is the folder of the per-user runtime folders: /run/user
// (a test build's own folder in the programs internal/testbin builds).
func UserRunRoot() string { return userRunRoot }

// ErrNoRuntimeDir matches the error of RuntimeBase when there is no folder
// to keep the daemon socket in.
var ErrNoRuntimeDir = errors.New("no runtime folder for the daemon socket")

// RuntimeDirError is RuntimeBase's error: what was looked for and why it
// was not used. It matches ErrNoRuntimeDir with errors.Is.
type RuntimeDirError struct {
	// XDG is the value of XDG_RUNTIME_DIR ("" when unset).
	XDG string
	// Fallback is the per-user folder looked at when XDG is "".
	Fallback string
	// Reason says why the folder in use was refused ("does not exist",
	// "has mode 0755, want 0700", ...).
	Reason string
}

func (e *RuntimeDirError) Error() string {
	if e.XDG != "" {
		return fmt.Sprintf("%v: XDG_RUNTIME_DIR %q %s", ErrNoRuntimeDir, e.XDG, e.Reason)
	}
	return fmt.Sprintf("%v: XDG_RUNTIME_DIR is not set, and %s %s", ErrNoRuntimeDir, e.Fallback, e.Reason)
}

// Is makes errors.Is(err, ErrNoRuntimeDir) true.
func (e *RuntimeDirError) Is(target error) bool { return target == ErrNoRuntimeDir }

// RuntimeBase is the one place that decides where the daemon socket lives,
// for the daemon (SocketDir, to listen) and its clients (Dial):
//
//   - $XDG_RUNTIME_DIR when it is set (and absolute), as a login session or
//     `systemctl --user` gives it;
//   - else /run/user/$UID, the folder logind makes for this user, which
//     MCP hosts and some service managers do not name in the environment
//     they give a program. It is used only when it is a real directory
//     (not a symlink) owned by this uid with mode 0700 (no group or other
//     bits);
//   - else nothing: never a shared or world-writable folder such as /tmp.
//
// The socket folder inside it (yazses/) and the socket keep their own
// checks (package safesocket). The error is a *RuntimeDirError.
func RuntimeBase() (string, error) {
	uid := os.Geteuid()
	return resolveBase(os.Getenv("XDG_RUNTIME_DIR"), filepath.Join(userRunRoot, strconv.Itoa(uid)), uid)
}

// resolveBase is RuntimeBase with its inputs named, for tests.
func resolveBase(xdg, fallback string, uid int) (string, error) {
	if xdg != "" {
		if !filepath.IsAbs(xdg) {
			return "", &RuntimeDirError{XDG: xdg, Reason: "is not an absolute path"}
		}
		return filepath.Clean(xdg), nil
	}
	if reason := userRunDirRefused(fallback, uid); reason != "" {
		return "", &RuntimeDirError{Fallback: fallback, Reason: reason}
	}
	return fallback, nil
}

// userRunDirRefused says why dir is not a private runtime folder of uid,
// or "" when it is one.
func userRunDirRefused(dir string, uid int) string {
	var st unix.Stat_t
	err := unix.Lstat(dir, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return "does not exist"
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return "is a symlink"
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "is not a directory"
	case int(st.Uid) != uid:
		return fmt.Sprintf("is owned by uid %d, not by us (uid %d)", st.Uid, uid)
	case st.Mode&0o7777 != 0o700:
		return fmt.Sprintf("has mode %04o, want 0700 (no group or other bits)", st.Mode&0o7777)
	}
	return ""
}

// SocketDir is the daemon's socket folder, RuntimeBase()/yazses, created
// with mode 0700 and checked by safesocket.Dir: what the daemon listens in.
func SocketDir() (string, error) {
	base, err := RuntimeBase()
	if err != nil {
		return "", err
	}
	return safesocket.Dir(base)
}
