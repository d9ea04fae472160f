package pcmout

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/pcm"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func seq(from, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(from + i)
	}
	return s
}

func TestLimit(t *testing.T) {
	tests := []struct {
		limit  int64
		writes []int
		want   int64
		done   []bool
	}{
		{-1, []int{320, 320, 5}, 645, []bool{false, false, false}},
		{16000, []int{10000, 10000, 10}, 16000, []bool{false, true, true}},
		{640, []int{320, 320}, 640, []bool{false, true}},
		{1, []int{320}, 1, []bool{true}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w, err := New(&buf, "raw", tt.limit, discard)
		if err != nil {
			t.Fatal(err)
		}
		var dones []bool
		var in []int16
		for _, n := range tt.writes {
			s := seq(len(in), n)
			in = append(in, s...)
			done, err := w.Write(s)
			if err != nil {
				t.Fatal(err)
			}
			dones = append(dones, done)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if w.Samples() != tt.want || int64(buf.Len()) != tt.want*2 {
			t.Errorf("limit %d: Samples() = %d, %d bytes; want %d samples", tt.limit, w.Samples(), buf.Len(), tt.want)
		}
		if !cmp.Equal(pcm.Decode(nil, buf.Bytes()), in[:tt.want]) {
			t.Errorf("limit %d: output is not the first %d samples in", tt.limit, tt.want)
		}
		if diff := cmp.Diff(tt.done, dones); diff != "" {
			t.Errorf("limit %d: done flags (-want +got):\n%s", tt.limit, diff)
		}
	}
}

func TestWAVOnPipeKeepsStreamHeader(t *testing.T) {
	var buf bytes.Buffer
	w, err := New(&buf, "wav", -1, discard)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(seq(0, 100))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := buf.Bytes()[:44]; !bytes.Equal(got, pcm.StreamWAVHeader()) {
		t.Errorf("header on a pipe = % x, want the stream header", got)
	}
	if buf.Len() != 44+200 {
		t.Errorf("wrote %d bytes, want 244", buf.Len())
	}
}

func TestWAVOnFileIsPatched(t *testing.T) {
	for _, prefix := range []string{"", "something before "} {
		p := filepath.Join(t.TempDir(), "out.wav")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(prefix) // the header must be patched where it starts
		w, err := New(f, "wav", 1000, discard)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(seq(0, 600))
		w.Write(seq(600, 600))
		if err := w.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		f.Close()
		b, _ := os.ReadFile(p)
		b = b[len(prefix):]
		if !bytes.Equal(b[:44], pcm.WAVHeader(2000)) {
			t.Errorf("prefix %q: header = % x, want % x", prefix, b[:44], pcm.WAVHeader(2000))
		}
		if len(b) != 44+2000 {
			t.Errorf("prefix %q: %d bytes after the prefix, want 2044", prefix, len(b))
		}
	}
}

func TestWAVOnAppendedFileKeepsStreamHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.wav")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(f, "wav", -1, discard)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(seq(0, 10))
	if err := w.Close(); err != nil {
		t.Fatalf("Close on an O_APPEND file = %v, want nil", err)
	}
	f.Close()
	b, _ := os.ReadFile(p)
	if !bytes.Equal(b[:44], pcm.StreamWAVHeader()) || len(b) != 64 {
		t.Errorf("appended file: header % x, %d bytes", b[:44], len(b))
	}
	if binary.LittleEndian.Uint32(b[40:]) != 0xFFFFFFFF {
		t.Error("data size was patched through O_APPEND (it would land at the end)")
	}
}

func TestClosedPipe(t *testing.T) {
	r, wr := io.Pipe()
	r.Close()
	w, err := New(wr, "raw", -1, discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Write(seq(0, 4))
	if !IsClosedPipe(err) {
		t.Errorf("Write to a closed pipe = %v; IsClosedPipe = false", err)
	}
	if _, err := New(&bytes.Buffer{}, "flac", -1, discard); err == nil {
		t.Error("New(flac) = nil error")
	}
}
