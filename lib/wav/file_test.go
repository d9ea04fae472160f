package wav

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// readFileFast runs ReadFile16k and fails the test if it does not return
// within testwait.Hang (a call that blocks never does); unblock, if set,
// is called to free a hung call.
func readFileFast(t *testing.T, path string, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := ReadFile16k(path, 16000)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(testwait.Hang):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("waiting for ReadFile16k(%s) to return: it hung for %v", path, testwait.Hang)
		return nil
	}
}

func TestReadFile16k(t *testing.T) {
	dir := t.TempDir()
	l := layout{tag: 1, bits: 16, channels: 2, rate: 16000}
	src := content(1600)
	path := filepath.Join(dir, "a.wav")
	if err := os.WriteFile(path, l.build(l.encode(monoFrames(src, 2))), 0o600); err != nil {
		t.Fatal(err)
	}
	got, info, err := ReadFile16k(path, 16000)
	if err != nil {
		t.Fatalf("ReadFile16k: %v", err)
	}
	if info.Channels != 2 {
		t.Errorf("Info.Channels = %d, want 2", info.Channels)
	}
	if diff := cmp.Diff(pcm.ToFloat32(nil, src), got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	// A symlink to a regular file is fine.
	link := filepath.Join(dir, "link.wav")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile16k(link, 16000); err != nil {
		t.Errorf("ReadFile16k(symlink): %v", err)
	}
	if _, _, err := ReadFile16k(path, 1000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile16k with a small limit: %v, want ErrTooLarge", err)
	}
	if _, _, err := ReadFile16k(filepath.Join(dir, "missing.wav"), 16000); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile16k(missing): %v, want fs.ErrNotExist", err)
	}
	mp3 := filepath.Join(dir, "song.mp3")
	if err := os.WriteFile(mp3, append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb"), make([]byte, 300)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile16k(mp3, 16000); !errors.Is(err, ErrNotWAV) {
		t.Errorf("ReadFile16k(mp3): %v, want ErrNotWAV", err)
	}
}

func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// If ReadFile16k opened the FIFO blocking, it would wait for a writer;
	// a non-blocking writer open releases it so the test can fail cleanly.
	unblockFIFO := func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	linkToFIFO := filepath.Join(dir, "fifo.wav")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, kind string
		unblock    func()
	}{
		{dir, "directory", nil},
		{fifo, "FIFO", unblockFIFO},
		{linkToFIFO, "FIFO", unblockFIFO},
		{"/dev/zero", "character device", nil},
		{"/dev/null", "character device", nil},
	} {
		var before, after runtimeMem
		before.read()
		err := readFileFast(t, tc.path, tc.unblock)
		after.read()
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile16k(%s) = %v, want ErrNotRegular", tc.path, err)
			continue
		}
		if want := "read wav file: not a regular file (" + tc.kind + ")"; err.Error() != want {
			t.Errorf("ReadFile16k(%s) error %q, want %q", tc.path, err, want)
		}
		if a := after.total - before.total; a > 1<<20 {
			t.Errorf("ReadFile16k(%s) allocated %d bytes", tc.path, a)
		}
	}
}

// TestOpenNoBlockFIFO: the descriptor check catches a FIFO that the path
// check did not see (a swap between Stat and open): the open itself must
// not block.
func TestOpenNoBlockFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := openNoBlock(fifo)
		if err == nil {
			var st fs.FileInfo
			st, err = f.Stat()
			f.Close()
			if err == nil {
				err = regular(st)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("open and check of a FIFO: %v, want ErrNotRegular", err)
		}
	case <-time.After(testwait.Hang):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("waiting for openNoBlock to return: it blocked on a FIFO for %v", testwait.Hang)
	}
}
