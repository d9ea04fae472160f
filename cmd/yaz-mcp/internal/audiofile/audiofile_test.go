package audiofile

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

// writeWAV writes a 16 kHz mono s16 WAV file of n samples of silence.
func writeWAV(t *testing.T, path string, n int) {
	t.Helper()
	data := append(pcm.WAVHeader(int64(2*n)), make([]byte, 2*n)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sparse makes a file of size bytes that starts with head, without using
// the disk space.
func sparse(t *testing.T, path string, head []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// watchOpens reports every open(2) of path (inotify IN_OPEN) until stop.
func watchOpens(t *testing.T, path string) (opened func() bool) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		t.Fatalf("inotify watch: %v", err)
	}
	return func() bool {
		var buf [4096]byte
		n, _ := unix.Read(fd, buf[:])
		return n > 0
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.wav")
	writeWAV(t, good, 16000)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(good, filepath.Join(dir, "link.wav")))
	must(os.Symlink(filepath.Join(dir, "gone.wav"), filepath.Join(dir, "dangling.wav")))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.Symlink(filepath.Join(dir, "fifo"), filepath.Join(dir, "fifo-link.wav")))
	must(os.Mkdir(filepath.Join(dir, "sub.wav"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "empty.wav"), nil, 0o644))
	must(os.WriteFile(filepath.Join(dir, "text.wav"), []byte("just some text, not audio\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "short.wav"), pcm.WAVHeader(32)[:20], 0o644))
	sparse(t, filepath.Join(dir, "huge.wav"), pcm.WAVHeader(MaxBytes), MaxBytes+1)
	// 16 kHz s16 mono: 4 h is 460.8 MB, under MaxBytes but over MaxDuration.
	long := int64(MaxDuration/time.Second)*2*16000 + 44 + 3200
	sparse(t, filepath.Join(dir, "long.wav"), pcm.WAVHeader(long-44), long)
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	must(err)
	defer ln.Close()

	cases := []struct {
		name string
		path string
		want error // nil: accepted
	}{
		{"wav", good, nil},
		{"symlink to wav", filepath.Join(dir, "link.wav"), nil},
		{"empty path", "", ErrInvalid},
		{"missing", filepath.Join(dir, "missing.wav"), ErrNotFound},
		{"dangling link", filepath.Join(dir, "dangling.wav"), ErrNotFound},
		{"under a file", filepath.Join(good, "x.wav"), ErrNotFound},
		{"nul byte", dir + "/a\x00b", ErrInvalid},
		{"directory", filepath.Join(dir, "sub.wav"), ErrNotAFile},
		{"fifo", filepath.Join(dir, "fifo"), ErrNotAFile},
		{"link to fifo", filepath.Join(dir, "fifo-link.wav"), ErrNotAFile},
		{"socket", sock, ErrNotAFile},
		{"char device", "/dev/zero", ErrNotAFile},
		{"null device", "/dev/null", ErrNotAFile},
		{"empty file", filepath.Join(dir, "empty.wav"), ErrUnsupported},
		{"text file", filepath.Join(dir, "text.wav"), ErrUnsupported},
		{"truncated header", filepath.Join(dir, "short.wav"), ErrUnsupported},
		{"over 1 GiB", filepath.Join(dir, "huge.wav"), ErrTooLarge},
		{"over 4 hours", filepath.Join(dir, "long.wav"), ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var f *File
			var err error
			go func() {
				defer close(done)
				f, err = Open(c.path)
			}()
			// Open must not block (a FIFO, a device): one that does never
			// returns, and the test fails after testwait.Hang.
			testwait.Closed(t, done, fmt.Sprintf("Open(%s) to return", c.name))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Open(%s) = %v, want success", c.name, err)
				}
				defer f.Close()
				if f.Path != good {
					t.Errorf("Path = %q, want %q", f.Path, good)
				}
				if f.Duration != time.Second {
					t.Errorf("Duration = %v, want 1s", f.Duration)
				}
				if f.Info.SampleRate != 16000 || f.Info.Channels != 1 {
					t.Errorf("Info = %+v", f.Info)
				}
				if pos, _ := f.F.Seek(0, 1); pos != 0 {
					t.Errorf("file left at offset %d, want 0", pos)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Open(%s) = %v, want %v", c.name, err, c.want)
			}
		})
	}
}

// TestSpecialFilesNotOpened: a FIFO, a link to it and a directory are
// refused from their metadata; inotify sees no open(2) of them.
func TestSpecialFilesNotOpened(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.wav")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []struct{ watch, open string }{{fifo, fifo}, {fifo, link}, {sub, sub}} {
		opened := watchOpens(t, target.watch)
		if _, err := Open(target.open); !errors.Is(err, ErrNotAFile) {
			t.Fatalf("Open(%s) = %v, want ErrNotAFile", target.open, err)
		}
		if opened() {
			t.Errorf("Open(%s) opened %s", target.open, target.watch)
		}
	}
	// The watch itself works: opening the FIFO non-blocking is seen.
	opened := watchOpens(t, fifo)
	f, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !opened() {
		t.Fatal("inotify did not report an open of the FIFO: the test proves nothing")
	}
}
