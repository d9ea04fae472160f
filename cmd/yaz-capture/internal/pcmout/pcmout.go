// Package pcmout writes yaz-capture's standard output: wire-format PCM (or
// WAV), whole frames only, stopping at an exact sample count when asked.
//
// With WAV on a pipe the header is pcm.StreamWAVHeader (length unknown).
// With WAV on a regular, seekable file the same header is written first and
// its sizes are patched in Close, so the file is valid whether the
// recording ends by itself, by a signal, or (unpatched, still readable as a
// stream) by a crash.
package pcmout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/pcm"
)

// Formats are the names of the output formats.
var Formats = []string{"raw", "wav"}

// seekable is what header patching needs: a regular file.
type seekable interface {
	io.Writer
	io.WriterAt
	io.Seeker
	Stat() (os.FileInfo, error)
}

// Writer writes samples to one output.
type Writer struct {
	fw        *pcm.FrameWriter
	limit     int64 // samples to write in all; < 0 means no limit
	wav       bool
	patch     seekable // non-nil: a WAV header at headerOff to patch
	headerOff int64
	log       *slog.Logger
}

// New starts an output on w in format "raw" or "wav", to stop after limit
// samples (limit < 0: no limit). For WAV it writes the header now.
func New(w io.Writer, format string, limit int64, log *slog.Logger) (*Writer, error) {
	out := &Writer{fw: pcm.NewFrameWriter(w), limit: limit, log: log}
	switch format {
	case "raw", "":
		return out, nil
	case "wav":
		out.wav = true
	default:
		return nil, fmt.Errorf("output format %q: unknown; use raw or wav", format)
	}
	if f, ok := w.(seekable); ok && !appending(f) {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				out.patch, out.headerOff = f, off
			}
		}
	}
	if _, err := w.Write(pcm.StreamWAVHeader()); err != nil {
		return nil, fmt.Errorf("write wav header: %w", err)
	}
	return out, nil
}

// Write writes samples, cut at the limit. done reports that the limit has
// been reached (nothing more will be written).
func (o *Writer) Write(samples []int16) (done bool, err error) {
	if o.limit >= 0 {
		room := o.limit - o.fw.Samples()
		if room <= 0 {
			return true, nil
		}
		if int64(len(samples)) > room {
			samples = samples[:room]
		}
	}
	if err := o.fw.Write(samples); err != nil {
		return false, err
	}
	return o.limit >= 0 && o.fw.Samples() >= o.limit, nil
}

// Samples is the number of samples written.
func (o *Writer) Samples() int64 { return o.fw.Samples() }

// Close patches the WAV header of a regular file with the real sizes. It
// does not close the underlying writer.
func (o *Writer) Close() error {
	if o.patch == nil {
		return nil
	}
	data := o.fw.Samples() * pcm.FrameBytes
	if data > 0xFFFFFFFF-36 {
		o.log.Warn("recording exceeds the 4 GiB WAV limit; header left as a stream header")
		return nil
	}
	var sizes [4]byte
	binary.LittleEndian.PutUint32(sizes[:], uint32(data+36))
	if _, err := o.patch.WriteAt(sizes[:], o.headerOff+4); err != nil {
		return fmt.Errorf("patch wav header: %w", err)
	}
	binary.LittleEndian.PutUint32(sizes[:], uint32(data))
	if _, err := o.patch.WriteAt(sizes[:], o.headerOff+40); err != nil {
		return fmt.Errorf("patch wav header: %w", err)
	}
	return nil
}

// appending reports whether w is a file opened with O_APPEND (>>), which
// cannot be written at an offset: such output keeps the stream header,
// which readers accept.
func appending(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_APPEND != 0
}

// IsClosedPipe reports whether err means the reader of the output went away
// (EPIPE): a clean end, not a failure.
func IsClosedPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)
}
