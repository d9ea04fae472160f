// Package testwait is what tests wait on instead of sleeping: a Buffer that
// a child process writes (its log) and that says when it grew, a File
// watched with inotify (a file another process writes), and Until, which
// re-checks a condition each time one of them changes.
//
// Nothing here polls on a timer: a condition is evaluated once at the
// start and then only after a change that could have made it true, so a
// test that waits for "the daemon logged X" wakes when the daemon writes,
// not up to a period later, and costs nothing while nothing happens.
package testwait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/bcast"
)

// Source is something that changes: Changed returns a channel that is
// closed at its next change (take it before checking, as Until does, and
// no change is missed).
type Source interface {
	Changed() <-chan struct{}
}

// Signal is a Source that changes when Notify is called: lib/bcast's
// Signal under the names of a Source. The zero value is ready.
type Signal struct{ b bcast.Signal }

// Changed returns a channel closed at the next Notify.
func (s *Signal) Changed() <-chan struct{} { return s.b.C() }

// Notify wakes every waiter.
func (s *Signal) Notify() { s.b.Broadcast() }

// Until evaluates cond now and after every change of any source, until it
// holds (nil) or ctx ends (ctx's error).
func Until(ctx context.Context, cond func() bool, sources ...Source) error {
	cases := make([]reflect.SelectCase, len(sources)+1)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	for {
		for i, s := range sources {
			cases[i+1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.Changed())}
		}
		if cond() {
			return nil
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			return ctx.Err()
		}
	}
}

// Buffer is a bytes.Buffer that a process's copying goroutine may write
// while the test reads it, and a Source that changes on every write.
type Buffer struct {
	Signal
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p and wakes the waiters.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.b.Write(p)
	b.mu.Unlock()
	b.Notify()
	return n, err
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// File is a Source that changes when a file is created, written, moved
// into place or removed (inotify on its folder, so the file need not exist
// yet). Close stops the watch.
type File struct {
	Signal
	Path string
	f    *os.File
	done chan struct{}
}

// WatchFile starts watching path; its folder must exist.
func WatchFile(path string) (*File, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	const mask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO |
		syscall.IN_DELETE | syscall.IN_ATTRIB
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(path), mask); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", filepath.Dir(path), err)
	}
	// A non-blocking descriptor goes to the runtime's poller, so Close
	// interrupts the Read below.
	w := &File{Path: path, f: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{})}
	go w.read(filepath.Base(path))
	return w, nil
}

func (w *File) read(name string) {
	defer close(w.done)
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			raw := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			if string(bytes.TrimRight(raw, "\x00")) == name {
				w.Notify()
			}
		}
	}
}

// Close stops watching and waits for the reader to end.
func (w *File) Close() error {
	err := w.f.Close()
	<-w.done
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// Exited returns a channel closed when process pid has exited (or had
// already, or never existed): a pidfd the runtime's poller watches, so any
// process can be waited for, not only a child of this one. An exited
// process that its parent has not reaped yet counts as exited.
func Exited(pid int) (<-chan struct{}, error) {
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		close(done)
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		defer close(done)
		defer f.Close()
		// A pidfd turns readable when the process exits; Read waits for
		// that in the poller whenever the function says "not yet".
		rc.Read(func(fd uintptr) bool {
			n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return n > 0
		})
	}()
	return done, nil
}
