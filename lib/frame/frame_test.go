package frame

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/yazses/yazses/lib/pcm"
)

// raw builds a frame by hand, independent of the Writer.
func raw(t byte, payload []byte) []byte {
	b := []byte{t, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func ramp(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(i*7919 - 12345)
	}
	return s
}

// readAll reads frames until an error, copying each payload.
func readAll(t *testing.T, b []byte) ([]Frame, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(b))
	var got []Frame
	for {
		f, err := r.Next()
		if err != nil {
			return got, err
		}
		got = append(got, Frame{Type: f.Type, Payload: append([]byte{}, f.Payload...)})
	}
}

func TestRoundTrip(t *testing.T) {
	big := ramp(maxSamples*2 + 3) // three frames: full, full, 3 samples
	tests := []struct {
		name  string
		write func(w *Writer) error
		want  []Frame
	}{
		{"nothing", func(w *Writer) error { return nil }, nil},
		{"end", (*Writer).End, []Frame{{End, []byte{}}}},
		{"abandon", (*Writer).Abandon, []Frame{{Abandon, []byte{}}}},
		{"prompt and context", func(w *Writer) error {
			if err := w.Prompt("Kubernetes"); err != nil {
				return err
			}
			return w.Context("and so my fellow")
		}, []Frame{{Prompt, []byte("Kubernetes")}, {Context, []byte("and so my fellow")}}},
		{"empty audio writes nothing", func(w *Writer) error { return w.Audio(nil) }, nil},
		{"one sample", func(w *Writer) error { return w.Audio([]int16{-2}) },
			[]Frame{{Audio, []byte{0xfe, 0xff}}}},
		{"utterance", func(w *Writer) error {
			if err := w.Audio(ramp(160)); err != nil {
				return err
			}
			if err := w.Audio(ramp(3)); err != nil {
				return err
			}
			return w.End()
		}, []Frame{
			{Audio, pcm.Encode(nil, ramp(160))},
			{Audio, pcm.Encode(nil, ramp(3))},
			{End, []byte{}},
		}},
		{"exactly MaxPayload", func(w *Writer) error { return w.Audio(ramp(maxSamples)) },
			[]Frame{{Audio, pcm.Encode(nil, ramp(maxSamples))}}},
		{"split", func(w *Writer) error { return w.Audio(big) }, []Frame{
			{Audio, pcm.Encode(nil, big[:maxSamples])},
			{Audio, pcm.Encode(nil, big[maxSamples:2*maxSamples])},
			{Audio, pcm.Encode(nil, big[2*maxSamples:])},
		}},
		{"abandon then new utterance", func(w *Writer) error {
			if err := w.Audio([]int16{1, 2}); err != nil {
				return err
			}
			if err := w.Abandon(); err != nil {
				return err
			}
			if err := w.Audio([]int16{3}); err != nil {
				return err
			}
			return w.End()
		}, []Frame{
			{Audio, []byte{1, 0, 2, 0}},
			{Abandon, []byte{}},
			{Audio, []byte{3, 0}},
			{End, []byte{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(NewWriter(&buf)); err != nil {
				t.Fatalf("write: %v", err)
			}
			// The bytes on the wire are exactly the hand-built frames.
			var want []byte
			for _, f := range tt.want {
				want = append(want, raw(f.Type, f.Payload)...)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("wire bytes differ from hand-built frames (%d vs %d bytes)", buf.Len(), len(want))
			}
			got, err := readAll(t, buf.Bytes())
			if err != io.EOF {
				t.Fatalf("Next() error = %v, want io.EOF", err)
			}
			// Compare payloads with bytes.Equal: a diff of megabyte slices is slow.
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitFramesAreWholeWrites(t *testing.T) {
	var w recordWriter
	if err := NewWriter(&w).Audio(ramp(maxSamples + 1)); err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 2 {
		t.Fatalf("Write calls = %d, want 2 (one per frame)", len(w.writes))
	}
	for i, n := range w.writes {
		if n > HeaderSize+MaxPayload {
			t.Errorf("write %d is %d bytes, more than one frame", i, n)
		}
	}
}

type recordWriter struct {
	writes []int
}

func (w *recordWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return len(p), nil
}

func TestFrameSamples(t *testing.T) {
	want := ramp(50)
	f := Frame{Type: Audio, Payload: pcm.Encode(nil, want)}
	if diff := cmp.Diff(want, f.Samples(nil)); diff != "" {
		t.Errorf("Samples (-want +got):\n%s", diff)
	}
}

func TestReaderErrors(t *testing.T) {
	tooLarge := []byte{Audio, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(tooLarge[1:], MaxPayload+2)
	huge := []byte{Audio, 0xff, 0xff, 0xff, 0xff}
	tests := []struct {
		name  string
		in    []byte
		valid int // frames read before the error
		want  error
	}{
		{"empty stream", nil, 0, io.EOF},
		{"clean end", raw(End, nil), 1, io.EOF},
		{"truncated header", []byte{Audio, 2, 0}, 0, io.ErrUnexpectedEOF},
		{"only a type byte", []byte{End}, 0, io.ErrUnexpectedEOF},
		{"truncated payload", raw(Audio, []byte{1, 2, 3, 4})[:7], 0, io.ErrUnexpectedEOF},
		{"header without payload", raw(Audio, []byte{1, 2})[:5], 0, io.ErrUnexpectedEOF},
		{"truncated after a frame", append(raw(End, nil), Abandon, 0), 1, io.ErrUnexpectedEOF},
		{"bad type", raw('Z', nil), 0, ErrBadType},
		{"lower-case type", raw('a', []byte{0, 0}), 0, ErrBadType},
		{"bad type after frames", append(raw(Audio, []byte{1, 0}), raw(0, nil)...), 1, ErrBadType},
		{"too large", tooLarge, 0, ErrTooLarge},
		{"4 GiB declared", huge, 0, ErrTooLarge},
		{"odd audio", raw(Audio, []byte{1, 2, 3}), 0, ErrOddAudio},
		{"end with payload", raw(End, []byte{0}), 0, ErrControlPayload},
		{"abandon with payload", raw(Abandon, []byte{1, 2}), 0, ErrControlPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.in))
			for i := range tt.valid {
				if _, err := r.Next(); err != nil {
					t.Fatalf("Next() #%d error = %v, want a frame", i, err)
				}
			}
			_, err := r.Next()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Next() error = %v, want %v", err, tt.want)
			}
			if tt.want == io.EOF && err != io.EOF {
				t.Fatalf("Next() error = %#v, want io.EOF itself", err)
			}
			if tt.want != io.EOF && errors.Is(err, io.EOF) {
				t.Fatalf("Next() error = %v wraps io.EOF mid-frame", err)
			}
			// Errors are final.
			if _, again := r.Next(); !errors.Is(again, tt.want) {
				t.Errorf("Next() after error = %v, want %v again", again, tt.want)
			}
		})
	}
}

func TestWriteFrameRejects(t *testing.T) {
	tests := []struct {
		name string
		f    Frame
		want error
	}{
		{"bad type", Frame{Type: 'Q'}, ErrBadType},
		{"odd audio", Frame{Type: Audio, Payload: []byte{1}}, ErrOddAudio},
		{"too large", Frame{Type: Audio, Payload: make([]byte, MaxPayload+2)}, ErrTooLarge},
		{"end with payload", Frame{Type: End, Payload: []byte{1}}, ErrControlPayload},
		{"prompt too large", Frame{Type: Prompt, Payload: make([]byte, MaxPrompt+1)}, ErrTooLarge},
		{"context too large", Frame{Type: Context, Payload: make([]byte, MaxPrompt+1)}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := NewWriter(&buf).WriteFrame(tt.f); !errors.Is(err, tt.want) {
				t.Errorf("WriteFrame() error = %v, want %v", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteFrame() wrote %d bytes of a rejected frame", buf.Len())
			}
		})
	}
}

type failWriter struct{ n int }

func (w failWriter) Write(p []byte) (int, error) { return min(w.n, len(p)), nil }

type errWriter struct{}

var errBroken = errors.New("broken pipe")

func (errWriter) Write(p []byte) (int, error) { return 0, errBroken }

func TestWriterErrors(t *testing.T) {
	if err := NewWriter(failWriter{3}).Audio([]int16{1, 2}); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("Audio() on a short writer = %v, want io.ErrShortWrite", err)
	}
	if err := NewWriter(errWriter{}).End(); !errors.Is(err, errBroken) {
		t.Errorf("End() on a broken writer = %v, want %v", err, errBroken)
	}
	if err := NewWriter(errWriter{}).Abandon(); !errors.Is(err, errBroken) {
		t.Errorf("Abandon() on a broken writer = %v, want %v", err, errBroken)
	}
	if err := NewWriter(errWriter{}).Audio(ramp(maxSamples + 5)); !errors.Is(err, errBroken) {
		t.Errorf("Audio() on a broken writer = %v, want %v", err, errBroken)
	}
}

// allocated reports the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReaderBoundsAllocation(t *testing.T) {
	tests := []struct {
		name     string
		declared uint32
		sent     int
		want     error
		maxAlloc uint64
	}{
		// A hostile length is refused before any buffer is made.
		{"4 GiB declared", 0xfffffffe, 100, ErrTooLarge, 16 << 10},
		{"MaxPayload+2 declared", MaxPayload + 2, 100, ErrTooLarge, 16 << 10},
		// A valid large length costs memory only as its bytes arrive.
		{"MaxPayload declared, 10 bytes sent", MaxPayload, 10, io.ErrUnexpectedEOF, 2 * readChunk},
		// And a full frame never costs much more than MaxPayload.
		{"MaxPayload sent", MaxPayload, MaxPayload, nil, 2*MaxPayload + readChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make([]byte, HeaderSize+tt.sent)
			in[0] = Audio
			binary.LittleEndian.PutUint32(in[1:], tt.declared)
			src := bytes.NewReader(in)
			var err error
			n := allocated(func() {
				_, err = NewReader(src).Next()
			})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Next() error = %v, want %v", err, tt.want)
			}
			if n > tt.maxAlloc {
				t.Errorf("Next() allocated %d bytes, want at most %d", n, tt.maxAlloc)
			}
		})
	}
}

func TestReaderReusesBuffer(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for range 50 {
		if err := w.Audio(ramp(4096)); err != nil {
			t.Fatal(err)
		}
	}
	src := bytes.NewReader(buf.Bytes())
	r := NewReader(src)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(40, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Next() allocates %v times per frame once warm, want 0", allocs)
	}
}

func TestResultJSON(t *testing.T) {
	r := Result{
		Utt:      3,
		Text:     "hi",
		Segments: []Segment{{StartMs: 0, EndMs: 640, Text: "hi"}},
		AudioMs:  900,
		DecodeMs: 120,
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"utt":3,"text":"hi","segments":[{"start_ms":0,"end_ms":640,"text":"hi"}],"audio_ms":900,"decode_ms":120}`
	if string(b) != want {
		t.Errorf("json = %s\nwant   %s", b, want)
	}
	r.Error = "decode_failed"
	b, _ = json.Marshal(r)
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// FuzzFrame feeds arbitrary bytes to the Reader: it never panics, and every
// frame it accepts re-encodes to exactly the bytes it was read from.
func FuzzFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(raw(End, nil))
	f.Add(raw(Abandon, nil))
	f.Add(raw(Audio, nil))
	f.Add(append(raw(Audio, []byte{1, 2, 3, 4}), raw(End, nil)...))
	f.Add(raw(Audio, []byte{1, 2, 3}))
	f.Add([]byte{Audio, 0xff, 0xff, 0xff, 0xff})
	f.Add(raw(End, []byte{9}))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		var out bytes.Buffer
		w := NewWriter(&out)
		for {
			fr, err := r.Next()
			if err != nil {
				if err == io.EOF && out.Len() != len(in) {
					t.Fatalf("io.EOF after %d of %d bytes", out.Len(), len(in))
				}
				break
			}
			if len(fr.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes", len(fr.Payload))
			}
			if err := w.WriteFrame(fr); err != nil {
				t.Fatalf("WriteFrame(accepted frame) = %v", err)
			}
			if fr.Type == Audio && len(fr.Payload) > 0 {
				// The typed writer makes the same bytes for the same audio.
				var again bytes.Buffer
				if err := NewWriter(&again).Audio(fr.Samples(nil)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again.Bytes(), raw(Audio, fr.Payload)) {
					t.Fatalf("Audio() re-encoding differs")
				}
			}
		}
		if !bytes.HasPrefix(in, out.Bytes()) {
			t.Fatalf("re-encoded frames are not a prefix of the input")
		}
	})
}
