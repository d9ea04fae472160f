package filedecode

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// stream is a 16 kHz stream from memory, handed out in blocks of at most
// 7000 samples (as a file reader hands out what it has).
type stream struct {
	s   []float32
	pos int
}

func (r *stream) Read(dst []float32) (int, error) {
	if r.pos == len(r.s) {
		return 0, io.EOF
	}
	n := copy(dst[:min(len(dst), 7000)], r.s[r.pos:])
	r.pos += n
	return n, nil
}

// speechWithPauses is a loud tone with 300 ms of silence at each of gaps
// (in seconds), secs long in all.
func speechWithPauses(secs float64, gaps ...float64) []float32 {
	s := make([]float32, int(secs*pcm.SampleRate))
	for i := range s {
		s[i] = 0.5
		if i%2 == 1 {
			s[i] = -0.5
		}
	}
	for _, g := range gaps {
		from := int(g * pcm.SampleRate)
		clear(s[from : from+pcm.SampleRate*3/10])
	}
	return s
}

// recorder is a Decoder that keeps each piece and answers with one
// segment over the whole piece named by its number; an empty piece text
// for the pieces in silent.
type recorder struct {
	pieces [][]int16
	silent map[int]bool
	fail   int // the piece that fails (0: none)
}

func (d *recorder) Decode(_ context.Context, samples []int16) (frame.Result, error) {
	d.pieces = append(d.pieces, slices.Clone(samples))
	n := len(d.pieces)
	if n == d.fail {
		return frame.Result{}, errors.New("decoder: decode_failed")
	}
	ms := pcm.Millis(len(samples))
	if d.silent[n] {
		return frame.Result{Utt: n, Segments: []frame.Segment{}, AudioMs: ms, DecodeMs: 1}, nil
	}
	t := "p" + strconv.Itoa(n)
	return frame.Result{Utt: n, Text: " " + t + " ", Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: t}}, AudioMs: ms, DecodeMs: 10}, nil
}

// TestTranscribePieces: the pieces are the whole stream in order, each at
// most 30 s, each full one cut in a pause of its last 10 s; the segments
// come back on the file's timeline, the texts joined by single spaces (a
// silent piece adds none), progress after each piece.
func TestTranscribePieces(t *testing.T) {
	src := speechWithPauses(100.5, 4, 25, 27, 52, 60, 81, 95)
	dec := &recorder{silent: map[int]bool{2: true}}
	var done []int64
	res, err := Transcribe(context.Background(), &stream{s: src}, dec, func(ms int64) { done = append(done, ms) })
	if err != nil {
		t.Fatal(err)
	}
	var got []int16
	var want []daemonapi.Segment
	var ends []int64
	for i, p := range dec.pieces {
		if len(p) > pcm.Samples(PieceMax) {
			t.Errorf("piece %d: %d samples, more than 30 s", i+1, len(p))
		}
		end := len(got) + len(p)
		if end < len(src) && src[end-1] != 0 && src[end] != 0 {
			t.Errorf("piece %d cut at %.3f s, not in a pause", i+1, float64(end)/pcm.SampleRate)
		}
		if end < len(src) && len(p) < pcm.Samples(PieceMax-PieceSearch) {
			t.Errorf("piece %d of %d samples cut before its last 10 s", i+1, len(p))
		}
		if i+1 != 2 {
			want = append(want, daemonapi.Segment{StartMs: pcm.Millis(len(got)), EndMs: pcm.Millis(len(got)) + pcm.Millis(len(p)), Text: "p" + strconv.Itoa(i+1)})
		}
		got = append(got, p...)
		ends = append(ends, pcm.Millis(end))
	}
	if !slices.Equal(got, pcm.FromFloat32(nil, src)) {
		t.Errorf("the pieces (%d samples) are not the stream (%d)", len(got), len(src))
	}
	if len(dec.pieces) != 4 {
		t.Errorf("%d pieces of 100.5 s, want 4", len(dec.pieces))
	}
	if diff := cmp.Diff(want, res.Segments); diff != "" {
		t.Errorf("segments (-want +got):\n%s", diff)
	}
	if res.Text != "p1 p3 p4" || res.AudioMs != 100500 || res.Pieces != 4 || res.DecodeMs != 31 {
		t.Errorf("result = %q, %d ms, %d pieces, decode %d ms", res.Text, res.AudioMs, res.Pieces, res.DecodeMs)
	}
	if !slices.Equal(done, ends) {
		t.Errorf("progress %v, want the end of each piece %v", done, ends)
	}
}

// TestTranscribeEnds: a stream past the limit, a decoder that fails and a
// caller that goes away each end the file with their error; an empty
// stream is an empty transcript without a decode.
func TestTranscribeEnds(t *testing.T) {
	src := speechWithPauses(70)
	if _, err := transcribe(context.Background(), &stream{s: src}, &recorder{}, nil, 40*pcm.SampleRate); !errors.Is(err, ErrTooLong) {
		t.Errorf("70 s with a 40 s limit: %v, want ErrTooLong", err)
	}
	dec := &recorder{fail: 2}
	if _, err := Transcribe(context.Background(), &stream{s: src}, dec, nil); err == nil || len(dec.pieces) != 2 {
		t.Errorf("a failed second piece: %v after %d pieces, want its error and no third", err, len(dec.pieces))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dec = &recorder{}
	if _, err := Transcribe(ctx, &stream{s: src}, dec, nil); !errors.Is(err, context.Canceled) || len(dec.pieces) != 0 {
		t.Errorf("cancelled: %v after %d pieces", err, len(dec.pieces))
	}
	dec = &recorder{}
	res, err := Transcribe(context.Background(), &stream{}, dec, nil)
	if err != nil || res.Text != "" || len(res.Segments) != 0 || res.Segments == nil || res.AudioMs != 0 || len(dec.pieces) != 0 {
		t.Errorf("empty stream: %+v, %v, %d pieces", res, err, len(dec.pieces))
	}
}

// TestFlags: every setting of [decode] but the prompt, and every one of
// [vad], reaches the decoder's flags as one word each (a value that starts
// with "-" is never read as a flag).
func TestFlags(t *testing.T) {
	got := Flags(config.Decode{Model: "/m/ggml-base.bin", Language: "de", Threads: 3, Prompt: "private", BeamSize: 5, Device: "gpu:1"},
		config.VAD{Engine: "silero", Model: "-odd.bin", Threshold: 0.65})
	want := []string{"--model=/m/ggml-base.bin", "--language=de", "--threads=3", "--beam-size=5", "--device=gpu:1",
		"--vad=silero", "--vad-model=-odd.bin", "--vad-threshold=0.65"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Flags (-want +got):\n%s", diff)
	}
	// A configuration not filled in leaves yaz-decode's defaults.
	if got := Flags(config.Decode{Model: "m.bin"}, config.VAD{}); !slices.Equal(got, []string{"--model=m.bin"}) {
		t.Errorf("Flags of zero settings = %q, want the model alone", got)
	}
}
