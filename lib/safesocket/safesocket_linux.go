package safesocket

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Names inside the runtime folder.
const (
	DirName    = "yazses"
	SocketName = "yazsesd.sock"
	LockName   = "yazsesd.lock"
	// ControlName is the control socket beside SocketName: the daemon
	// serves only hold.* and status there, on a server of its own
	// (package daemonapi).
	ControlName = "control.sock"
	// tempName is where the socket is bound before it is renamed into
	// place. Only the lock holder binds, so one fixed name is enough.
	tempName = ".yazsesd.sock.new"
)

var (
	// ErrAlreadyRunning: another process holds the daemon lock. The error
	// returned by Listen is an *AlreadyRunningError.
	ErrAlreadyRunning = errors.New("yazsesd is already running")
	// ErrSocketInUse: something answers on the socket although we hold the
	// lock (a daemon that lost its lock file); it is left alone.
	ErrSocketInUse = errors.New("socket answers but its owner holds no lock")
	// ErrNotRunning: Dial found no socket, or a stale one.
	ErrNotRunning = errors.New("yazsesd is not running")
)

// AlreadyRunningError is the error of Listen and Lock when another process
// holds the lock. It matches ErrAlreadyRunning with errors.Is.
type AlreadyRunningError struct {
	PID int // the holder's pid as stored in the lock file; 0 if unknown
	// Socket is the socket the holder listens on, as it stored it in the
	// lock file (Lock's info); "" if unknown.
	Socket string
}

func (e *AlreadyRunningError) Error() string {
	switch {
	case e.PID > 0 && e.Socket != "":
		return fmt.Sprintf("%v (pid %d, socket %s)", ErrAlreadyRunning, e.PID, e.Socket)
	case e.PID > 0:
		return fmt.Sprintf("%v (pid %d)", ErrAlreadyRunning, e.PID)
	}
	return ErrAlreadyRunning.Error()
}

// Is makes errors.Is(err, ErrAlreadyRunning) true.
func (e *AlreadyRunningError) Is(target error) bool { return target == ErrAlreadyRunning }

// SocketPath is the socket's path inside dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// ControlPath is the control socket's path inside dir.
func ControlPath(dir string) string { return filepath.Join(dir, ControlName) }

// Dir returns base/yazses, creating it with mode 0700. base is the runtime
// folder the caller chose (package daemonapi's RuntimeBase: the one place
// that decides it); it must be absolute, a directory, ours and not writable
// by group or others. See the package documentation for what Dir refuses
// and what it tightens in the yazses folder.
func Dir(base string) (string, error) {
	if !filepath.IsAbs(base) {
		return "", fmt.Errorf("safesocket dir: runtime folder %q is not an absolute path", base)
	}
	var st unix.Stat_t
	if err := unix.Stat(base, &st); err != nil {
		return "", fmt.Errorf("safesocket dir: runtime folder %s: %w", base, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", fmt.Errorf("safesocket dir: runtime folder %s is not a directory", base)
	case int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("safesocket dir: runtime folder %s is owned by uid %d, not by us (uid %d)", base, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return "", fmt.Errorf("safesocket dir: runtime folder %s has mode %04o: writable by group or others", base, st.Mode&0o7777)
	}
	dir := filepath.Join(base, DirName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("safesocket dir: %w", err)
	}
	if err := checkDir(dir, true); err != nil {
		return "", fmt.Errorf("safesocket dir: %w", err)
	}
	return dir, nil
}

// checkDir requires dir to be a real directory (not a symlink) owned by us
// with mode 0700. With tighten, a mode whose group and other bits allow no
// writing is set to 0700 instead of refused. The checks and the chmod go
// through one descriptor opened with O_NOFOLLOW, so nothing can swap the
// folder in between.
func checkDir(dir string, tighten bool) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s is a symlink or not a directory", dir)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not by us (uid %d)", dir, st.Uid, os.Geteuid())
	}
	perm := st.Mode & 0o7777
	if perm == 0o700 {
		return nil
	}
	if !tighten {
		return fmt.Errorf("%s has mode %04o, want 0700", dir, perm)
	}
	if perm&0o022 != 0 {
		return fmt.Errorf("%s has mode %04o: group or others could have written to it; remove it", dir, perm)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// Listener is the daemon's listening socket. It implements net.Listener;
// Accept returns *Conn values whose peer has our uid.
type Listener struct {
	// OnReject, when set, is told the uid and pid of each peer that was
	// refused because its uid differs from ours (for the audit log). Set it
	// before the first Accept. It runs on the accepting goroutine.
	OnReject func(uid, pid int)

	ul   *net.UnixListener
	path string
	ino  uint64
	lock *os.File // nil for a socket of Beside: its lock is the first one's
	uid  int

	closeOnce sync.Once
	closeErr  error
}

// Listen becomes the one daemon for dir (from Dir) and listens on its
// socket. It fails with an *AlreadyRunningError when another process holds
// the lock, and with ErrSocketInUse when something that holds no lock
// answers on the socket.
func Listen(dir string) (*Listener, error) {
	if err := checkDir(dir, false); err != nil {
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	lock, err := Lock(filepath.Join(dir, LockName), "")
	if err != nil {
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	path := SocketPath(dir)
	if err := clearStale(path); err != nil {
		lock.Close()
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	ul, ino, err := bind(dir, path)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	return &Listener{ul: ul, path: path, ino: ino, lock: lock, uid: os.Geteuid()}, nil
}

// Beside listens on a second socket, name, in l's folder, under the lock
// l holds: the same stale-socket rule (only a refused connect proves it
// stale, and only the lock holder replaces it), the same bind under a
// temporary name at 0600 and the same SO_PEERCRED check on every
// connection. Closing it removes its socket and leaves the lock to l;
// close it before l.
func (l *Listener) Beside(name string) (*Listener, error) {
	if name == "" || name != filepath.Base(name) || name == SocketName || name == LockName || name == tempName {
		return nil, fmt.Errorf("safesocket listen: %q is not a socket name of its own", name)
	}
	dir := filepath.Dir(l.path)
	path := filepath.Join(dir, name)
	if err := clearStale(path); err != nil {
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	ul, ino, err := bind(dir, path)
	if err != nil {
		return nil, fmt.Errorf("safesocket listen: %w", err)
	}
	return &Listener{ul: ul, path: path, ino: ino, uid: l.uid}, nil
}

// Lock takes an exclusive, non-blocking flock on the file at path (created
// 0600; a symlink, or a file that is not a regular file of ours, is
// refused) and writes our pid into it, and info on the next line (the
// daemon puts its socket there). When another process holds the lock it
// fails with an *AlreadyRunningError naming the holder's pid and info. The
// kernel drops the lock when the holder dies, however it dies; closing the
// file releases it.
//
// The pid and info are written in place, over what an earlier holder left
// (then cut to length), so a lock file that exists takes no new space: on
// a full disk the lock is still taken, and a write that fails leaves only
// the holder unnamed (not an error).
func Lock(path, info string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat lock: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("lock %s is not a regular file of ours", path)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, readHolder(f)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	body := strconv.Itoa(os.Getpid()) + "\n"
	if info != "" {
		body += strings.ReplaceAll(info, "\n", " ") + "\n"
	}
	if _, err := f.WriteAt([]byte(body), 0); err == nil {
		_ = f.Truncate(int64(len(body)))
	} else {
		_ = f.Truncate(0) // no stale pid: the holder stays unnamed
	}
	return f, nil
}

// readHolder reads the pid and info a lock holder wrote.
func readHolder(f *os.File) *AlreadyRunningError {
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	first, rest, _ := strings.Cut(string(b[:n]), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return &AlreadyRunningError{}
	}
	info, _, _ := strings.Cut(rest, "\n")
	return &AlreadyRunningError{PID: pid, Socket: strings.TrimSpace(info)}
}

// clearStale removes a socket at path only when a connect to it is
// refused. Anything that answers, anything that is not a socket, and any
// probe result other than "refused" is left alone.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; not removing it", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%w: %s", ErrSocketInUse, path)
	case errors.Is(err, syscall.ENOENT):
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale socket: %w", err)
		}
		return nil
	default:
		// A full backlog (EAGAIN) or a timeout means something lives there.
		return fmt.Errorf("probe socket %s: %w", path, err)
	}
}

// bind listens under a temporary name, sets mode 0600, then renames the
// socket into place, and returns it with the inode now at path.
func bind(dir, path string) (*net.UnixListener, uint64, error) {
	tmp := filepath.Join(dir, tempName)
	if len(tmp) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, 0, fmt.Errorf("socket path %s is too long for AF_UNIX", tmp)
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, 0, fmt.Errorf("listen: %w", err)
	}
	ul.SetUnlinkOnClose(false) // the name moves; Close removes it itself
	fail := func(err error) (*net.UnixListener, uint64, error) {
		ul.Close()
		os.Remove(tmp)
		return nil, 0, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(fmt.Errorf("chmod socket: %w", err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("rename socket into place: %w", err))
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		ul.Close()
		os.Remove(path)
		return nil, 0, fmt.Errorf("stat socket: %w", err)
	}
	return ul, st.Ino, nil
}

// Accept waits for the next connection whose peer has our uid. Peers with
// another uid are closed and reported to OnReject.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		uc, err := l.ul.AcceptUnix()
		if err != nil {
			return nil, err
		}
		cred, err := peerCred(uc)
		if err != nil {
			uc.Close() // cannot tell who it is: refuse
			continue
		}
		if int(cred.Uid) != l.uid {
			uc.Close()
			if l.OnReject != nil {
				l.OnReject(int(cred.Uid), int(cred.Pid))
			}
			continue
		}
		return newConn(uc, cred), nil
	}
}

// Addr is the socket's address (its final path).
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Close stops listening, removes the socket (if it is still the one we
// made) and then releases the lock. Connections already accepted stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.ul.Close()
		var st unix.Stat_t
		if err := unix.Lstat(l.path, &st); err == nil && st.Ino == l.ino {
			if err := os.Remove(l.path); err != nil && l.closeErr == nil {
				l.closeErr = fmt.Errorf("safesocket close: remove socket: %w", err)
			}
		}
		if l.lock == nil {
			return // Beside's: the lock stays with the first listener
		}
		l.lock.Truncate(0)
		if err := l.lock.Close(); err != nil && l.closeErr == nil {
			l.closeErr = fmt.Errorf("safesocket close: release lock: %w", err)
		}
	})
	return l.closeErr
}

// Conn is a connection whose peer was identified with SO_PEERCRED.
type Conn struct {
	*net.UnixConn
	pid, uid, gid int
}

func newConn(uc *net.UnixConn, cred *unix.Ucred) *Conn {
	return &Conn{UnixConn: uc, pid: int(cred.Pid), uid: int(cred.Uid), gid: int(cred.Gid)}
}

// PeerCred is the peer's process id, user id and group id as the kernel
// recorded them when the connection (or, for a dialled conn, the listening
// socket) was set up.
func (c *Conn) PeerCred() (pid, uid, gid int) { return c.pid, c.uid, c.gid }

func peerCred(uc *net.UnixConn) (*unix.Ucred, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return nil, fmt.Errorf("peer credentials: %w", credErr)
	}
	return cred, nil
}

// Dial connects to the daemon socket in dir. It refuses a folder that
// fails the same checks as Listen, and a server running as another uid.
// No socket, or a stale one, gives an error matching ErrNotRunning. The
// returned net.Conn is a *Conn.
func Dial(ctx context.Context, dir string) (net.Conn, error) { return DialName(ctx, dir, SocketName) }

// DialName is Dial for the socket name in dir (ControlName: the control
// socket), with the same checks.
func DialName(ctx context.Context, dir, name string) (net.Conn, error) {
	if err := checkDir(dir, false); err != nil {
		return nil, fmt.Errorf("safesocket dial: %w", err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", filepath.Join(dir, name))
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("safesocket dial: %w: %w", ErrNotRunning, err)
	}
	if err != nil {
		return nil, fmt.Errorf("safesocket dial: %w", err)
	}
	uc := nc.(*net.UnixConn)
	cred, err := peerCred(uc)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("safesocket dial: %w", err)
	}
	if int(cred.Uid) != os.Geteuid() {
		uc.Close()
		return nil, fmt.Errorf("safesocket dial: server runs as uid %d, not as us (uid %d)", cred.Uid, os.Geteuid())
	}
	return newConn(uc, cred), nil
}
