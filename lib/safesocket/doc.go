// Package safesocket is the yazsesd daemon socket: an AF_UNIX stream socket
// at RUNTIME/yazses/yazsesd.sock that only the daemon's own user can reach,
// with one daemon per user; and beside it, through [Listener.Beside], the
// control socket RUNTIME/yazses/control.sock ([ControlName]), under the
// same lock and behind the same walls ([DialName] dials it). RUNTIME is chosen by the caller (package
// daemonapi's RuntimeBase: $XDG_RUNTIME_DIR, else a private /run/user/$UID);
// this package reads no environment variable.
//
// The walls, outermost first:
//
//   - [Dir] is RUNTIME/yazses, created 0700. A folder there that is a
//     symlink, not a directory, or owned by another uid is refused. One of
//     ours with group or other bits is tightened to 0700 when those bits
//     only allow reading or traversal, and refused when they allow writing
//     (another user may have planted entries in it; remove it by hand).
//     RUNTIME itself must be absolute, a directory, ours and not writable
//     by group or others.
//   - [Listen] takes an exclusive, non-blocking flock on yazsesd.lock in
//     that folder and stores its pid there; a second daemon fails with
//     [ErrAlreadyRunning] naming that pid. The kernel drops the lock when
//     the holder dies, however it dies. [Lock] is that lock for any file:
//     yazsesd also takes one in its state folder, which every daemon of
//     the user sees whatever its runtime folder, and stores its socket
//     there too, so the second daemon's error names both.
//   - Holding the lock, Listen dials the socket first (and Beside its
//     own: only the lock holder, which alone has a Listener, replaces one). Only a refused
//     connection proves the socket stale; then it is replaced. Anything
//     that answers is left alone ([ErrSocketInUse]): a live daemon is never
//     stolen, even one that lost its lock file. A path that is not a socket
//     is never removed.
//   - The socket is bound under a temporary name in the 0700 folder,
//     chmod'ed to 0600, and only then renamed to yazsesd.sock, so the public
//     name never exists with a wider mode and never refuses connections
//     while it is being set up, whatever the process umask is (changing the
//     umask would be racy: it is process-wide).
//   - Every accepted connection's peer is read with SO_PEERCRED; a peer
//     with another uid is closed at once and reported to
//     [Listener.OnReject], never returned. With the folder at 0700 and the
//     socket at 0600 such a peer cannot connect in the first place; the
//     check is the second wall.
//   - [Dial] checks the folder the same way and the listening peer's uid
//     (SO_PEERCRED on the client side), so a client never talks to a socket
//     set up by another user.
//
// There is no TCP, UDP or HTTP anywhere in this package. It is Linux only
// (SO_PEERCRED) and pure Go.
package safesocket
