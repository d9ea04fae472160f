// Package audiofile checks the path a transcribe call names before anything
// runs: it must resolve (symbolic links followed) to a readable regular
// file within the size and duration caps, holding a WAV header YazSes can
// decode. Directories, FIFOs, devices and sockets are refused from their
// metadata alone, without being opened for reading, so no check can hang.
//
// Errors are one of the sentinel errors below, never the path or the text of
// a system error: callers turn them into the public error vocabulary.
package audiofile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/yazses/yazses/lib/wav"
)

// Caps on what transcribe accepts.
const (
	// MaxBytes is the largest file accepted: 1 GiB.
	MaxBytes int64 = 1 << 30
	// MaxDuration is the longest audio accepted (yaz-decode's own default
	// --max-duration).
	MaxDuration = 4 * time.Hour
)

// The reasons a path is refused.
var (
	ErrNotFound    = errors.New("not_found")          // missing, unreadable, or a dangling link
	ErrNotAFile    = errors.New("not_a_file")         // directory, FIFO, device, socket
	ErrUnsupported = errors.New("unsupported_format") // not a WAV file wav can decode (also empty)
	ErrEmpty       = errors.New("empty")              // 0 bytes; it is ErrUnsupported too
	ErrTooLarge    = errors.New("too_large")          // over MaxBytes or MaxDuration
	ErrInvalid     = errors.New("invalid_argument")   // empty path or one with a NUL byte
)

// File is an audio file that passed every check, held open.
type File struct {
	// F is the file, opened read-only and non-blocking; Close closes it.
	F *os.File
	// Path is the absolute path with every symbolic link resolved.
	Path string
	// Size is the file's size in bytes.
	Size int64
	// Duration is the audio length the header and the size allow.
	Duration time.Duration
	// Info is the WAV stream's format.
	Info wav.Info
}

// Close closes the file.
func (f *File) Close() error { return f.F.Close() }

// Open checks path and opens it. See the package comment.
func Open(path string) (*File, error) {
	if path == "" || containsNUL(path) {
		return nil, ErrInvalid
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: absolute path: %w", ErrNotFound, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: resolve: %w", ErrNotFound, err)
	}
	st, err := os.Lstat(resolved)
	if err != nil {
		return nil, fmt.Errorf("%w: lstat: %w", ErrNotFound, err)
	}
	if err := checkInfo(st); err != nil {
		return nil, err
	}
	// O_NOFOLLOW: the resolved path must not have become a link since;
	// O_NONBLOCK: a FIFO swapped in since the check cannot block the open.
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: open: %w", ErrNotAFile, err)
		}
		return nil, fmt.Errorf("%w: open: %w", ErrNotFound, err)
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: fstat: %w", ErrNotFound, err)
	}
	if err := checkInfo(fst); err != nil {
		f.Close()
		return nil, err
	}
	if !os.SameFile(st, fst) {
		f.Close()
		return nil, fmt.Errorf("%w: the file changed while it was checked", ErrNotFound)
	}
	af := &File{F: f, Path: resolved, Size: fst.Size()}
	if err := af.readHeader(); err != nil {
		f.Close()
		return nil, err
	}
	return af, nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// checkInfo refuses anything but a regular file within MaxBytes.
func checkInfo(st fs.FileInfo) error {
	m := st.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%w: mode %s", ErrNotAFile, m.Type())
	}
	if st.Size() > MaxBytes {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, st.Size())
	}
	return nil
}

// readHeader parses the WAV header, works out the duration and rewinds.
func (af *File) readHeader() error {
	r, err := wav.NewReader(io.LimitReader(af.F, min(af.Size, 2<<20)))
	if err != nil {
		if errors.Is(err, wav.ErrEmpty) {
			return fmt.Errorf("%w: %w: %w", ErrUnsupported, ErrEmpty, err)
		}
		if errors.Is(err, wav.ErrNotWAV) || errors.Is(err, wav.ErrUnsupported) || errors.Is(err, wav.ErrTruncated) ||
			errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return fmt.Errorf("%w: read header: %w", ErrNotFound, err)
	}
	af.Info = r.Info()
	pos, err := af.F.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("%w: seek: %w", ErrNotFound, err)
	}
	data := max(af.Size-pos, 0)
	if d := af.Info.DataBytes; d >= 0 && d < data {
		data = d
	}
	frame := int64(af.Info.Channels) * int64(af.Info.BitsPerSample/8)
	if frame <= 0 || af.Info.SampleRate <= 0 {
		return fmt.Errorf("%w: bad format", ErrUnsupported)
	}
	frames := data / frame
	af.Duration = time.Duration(frames) * time.Second / time.Duration(af.Info.SampleRate)
	if af.Duration > MaxDuration {
		return fmt.Errorf("%w: %s of audio", ErrTooLarge, af.Duration)
	}
	if _, err := af.F.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: seek: %w", ErrNotFound, err)
	}
	return nil
}
