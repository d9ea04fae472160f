package transcribe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tone16k is seconds of a 300 Hz tone at 16 kHz with silent gaps: gaps
// maps a gap's start to its length.
func tone16k(seconds float64, gaps map[time.Duration]time.Duration) []int16 {
	s := make([]int16, int(seconds*pcm.SampleRate))
	for i := range s {
		s[i] = int16(8000 * math.Sin(2*math.Pi*300*float64(i)/pcm.SampleRate))
	}
	for at, n := range gaps {
		clear(s[pcm.Samples(at):min(len(s), pcm.Samples(at+n))])
	}
	return s
}

// wav16k is s as a 16 kHz mono WAV file.
func wav16k(t *testing.T, s []int16) string {
	t.Helper()
	data := pcm.Encode(nil, s)
	p := filepath.Join(t.TempDir(), "a.wav")
	if err := os.WriteFile(p, append(pcm.WAVHeader(int64(len(data))), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// slowServe plays `yaz-decode --serve` on the decoder's pipes as
// internal/fakedecode does: each utterance takes perSecond per second of
// audio, an X after its E abandons it at once (contract 1), and every
// answer has one segment [0, length]. It logs "utt N n" for each
// utterance of n samples it answers and "utt N abandoned".
type slowServe struct {
	mu    sync.Mutex
	log   []string
	ended chan int // utterance numbers as their E arrives
	done  chan struct{}
}

func startSlowServe(t *testing.T, d *child.Decoder, perSecond time.Duration) *slowServe {
	t.Helper()
	in, err := d.OpenStdin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.OpenStdout()
	if err != nil {
		t.Fatal(err)
	}
	d.Started(1, 0)
	f := &slowServe{ended: make(chan int, 16), done: make(chan struct{})}
	type job struct{ utt, n int }
	jobs := make(chan job, 16)
	abandon := make(chan int, 16)
	go func() {
		defer close(jobs)
		r := frame.NewReader(in)
		utt, n := 0, 0
		for {
			fr, err := r.Next()
			if err != nil {
				return
			}
			switch fr.Type {
			case frame.Audio:
				n += len(fr.Payload) / 2
			case frame.End:
				utt++
				f.ended <- utt
				jobs <- job{utt, n}
				n = 0
			case frame.Abandon:
				abandon <- utt
			}
		}
	}()
	go func() {
		defer close(f.done)
		defer in.Close()
		defer out.Close()
		enc := json.NewEncoder(out)
		dropped := map[int]bool{}
		for j := range jobs {
			ms := pcm.Millis(j.n)
			res := frame.Result{Utt: j.utt, Text: "p", AudioMs: ms, Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: "p"}}}
			timer := time.NewTimer(time.Duration(ms) * perSecond / 1000)
		wait:
			for !dropped[j.utt] {
				select {
				case <-timer.C:
					break wait
				case u := <-abandon:
					dropped[u] = true
				}
			}
			timer.Stop()
			if dropped[j.utt] {
				res.Text, res.Segments, res.Error = "", []frame.Segment{}, "abandoned"
				f.add(fmt.Sprintf("utt %d abandoned", j.utt))
			} else {
				f.add(fmt.Sprintf("utt %d %d", j.utt, j.n))
			}
			enc.Encode(res)
		}
	}()
	return f
}

func (f *slowServe) add(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}

func (f *slowServe) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// atFile is the decoder child at file priority (Decoder).
type atFile struct{ *child.Decoder }

func (a atFile) Decode(ctx context.Context, samples []int16) (frame.Result, error) {
	return a.Decoder.Decode(ctx, turn.File, samples, nil)
}

// A hold that comes while a file's piece is being decoded has the piece
// abandoned and is decoded at once; the piece is sent again after it, and
// the file's transcript is whole, its segments on the file's timeline.
func TestDecodeFileGivesWay(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dec := child.NewDecoder(supervise.Spec{Name: "decode"}, "", log)
	files := New(atFile{dec}, log)
	f := startSlowServe(t, dec, 50*time.Millisecond) // a 25 s piece: 1.25 s
	defer func() { dec.Close(); <-f.done }()

	src := tone16k(70, map[time.Duration]time.Duration{25 * time.Second: 300 * time.Millisecond, 52 * time.Second: 300 * time.Millisecond})
	r, err := wav.OpenFile16k(wav16k(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type fileOut struct {
		res  []int64
		text string
		ms   int64
		err  error
	}
	fileDone := make(chan fileOut, 1)
	var progress []int64 // written by decodeFile, read after fileDone
	prog := &fileProgress{f: func(done, total int64) {
		if total != 70000 {
			t.Errorf("progress %d of %d, want of 70000 ms", done, total)
		}
		progress = append(progress, done)
	}, total: 70000, last: -1}
	go func() {
		out, err := files.decodeFile(context.Background(), r, prog)
		var ends []int64
		for _, s := range out.Segments {
			ends = append(ends, s.StartMs, s.EndMs)
		}
		fileDone <- fileOut{ends, out.Text, out.AudioMs, err}
	}()
	if n := <-f.ended; n != 1 { // the first piece is being decoded
		t.Fatalf("first utterance numbered %d", n)
	}
	res, err := dec.Decode(context.Background(), turn.Hold, make([]int16, 16000), nil)
	if err != nil || res.Error != "" || res.AudioMs != 1000 {
		t.Fatalf("the hold = %+v, %v; want its own answer", res, err)
	}
	select {
	case o := <-fileDone:
		t.Fatalf("the file was done (%+v) before the hold was answered", o)
	default:
	}
	o := <-fileDone
	if o.err != nil {
		t.Fatal(o.err)
	}
	ev := f.events()
	if len(ev) < 2 || ev[0] != "utt 1 abandoned" || ev[1] != "utt 2 16000" {
		t.Errorf("the decoder's account %q: want the first piece abandoned, then the hold", ev)
	}
	// Pieces cut in the two pauses: about [0, 25.15], [25.15, 52.15], [52.15, 70] s.
	if len(o.res) != 6 || o.res[0] != 0 || o.res[1] != o.res[2] || o.res[3] != o.res[4] || o.res[5] != 70000 || o.ms != 70000 {
		t.Errorf("segments %v (audio %d ms), want three pieces covering 0 to 70000 ms", o.res, o.ms)
	}
	for i, want := range []int64{25000, 52000} {
		if got := o.res[2*i+1]; got < want || got > want+300 {
			t.Errorf("piece %d ends at %d ms, want in the pause at %d ms", i+1, got, want)
		}
	}
	if o.text != "p p p" {
		t.Errorf("text %q, want the three pieces' in order", o.text)
	}
	// Progress: the end of each piece once it is decoded (the first
	// once, though it was decoded twice), in ms of audio.
	if len(o.res) == 6 && !slices.Equal(progress, []int64{o.res[1], o.res[3], o.res[5]}) {
		t.Errorf("progress %v, want the pieces' ends %v", progress, []int64{o.res[1], o.res[3], o.res[5]})
	}
}

// fakeDecoder is a Decoder whose answers the test chooses.
type fakeDecoder struct {
	decode func(ctx context.Context, samples []int16) (frame.Result, error)
	waitUp func(ctx context.Context) error
}

func (f *fakeDecoder) Decode(ctx context.Context, s []int16) (frame.Result, error) {
	return f.decode(ctx, s)
}

func (f *fakeDecoder) WaitUp(ctx context.Context) error {
	if f.waitUp == nil {
		return nil
	}
	return f.waitUp(ctx)
}

// answering answers every piece with one segment over its whole length.
func answering(ctx context.Context, s []int16) (frame.Result, error) {
	ms := pcm.Millis(len(s))
	return frame.Result{Text: "p", AudioMs: ms, DecodeMs: 1, Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: "p"}}}, nil
}

// wantCode checks that err is the fixed error of code with message msg.
func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != code || rpc.Message != msg {
		t.Errorf("error %v, want code %d %q", err, code, msg)
	}
}

// TestTranscribeRefuses: a file that is not one, not a WAV file this
// decoder reads, or longer than 4 hours by its header is refused before
// the decoder's turn is taken, with a fixed sentence (never the path).
func TestTranscribeRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 4 hours and a second by its header, the data sparse.
	long := write("long.wav", pcm.WAVHeader(int64(pcm.Samples(4*time.Hour+time.Second)*pcm.FrameBytes)))
	if err := os.Truncate(long, 44+int64(pcm.Samples(4*time.Hour+time.Second)*pcm.FrameBytes)); err != nil {
		t.Fatal(err)
	}
	const notFile, notWAV = "not a readable regular file", "not a WAV file this decoder reads"
	for _, c := range []struct {
		name, path string
		code       int
		msg        string
	}{
		{"missing", filepath.Join(dir, "gone.wav"), daemonapi.CodeBadFile, notFile},
		{"folder", dir, daemonapi.CodeBadFile, notFile},
		{"text", write("a.txt", []byte("hello\n")), daemonapi.CodeBadFile, notWAV},
		{"over 4 hours", long, daemonapi.CodeBadFile, "longer than 4 hours of audio"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec := &fakeDecoder{decode: func(context.Context, []int16) (frame.Result, error) {
				t.Error("the decoder was asked")
				return frame.Result{}, nil
			}}
			var progress []int64
			_, err := New(dec, nil).Transcribe(context.Background(), c.path, func(done, _ int64) { progress = append(progress, done) })
			wantCode(t, err, c.code, c.msg)
			if len(progress) > 0 {
				t.Errorf("progress %v for a refused file, want none", progress)
			}
		})
	}
}

// TestTranscribeCutShort: a file whose header declares more audio than it
// holds (an interrupted download) is transcribed as far as it goes, as
// yaz-decode does, in pieces as any file, with WarningCutShort in the
// result; progress ends at what it holds. A cut inside a sample too.
func TestTranscribeCutShort(t *testing.T) {
	src := tone16k(40, map[time.Duration]time.Duration{25 * time.Second: 300 * time.Millisecond})
	data := pcm.Encode(nil, src)
	for _, extra := range []int{0, 1} {
		p := filepath.Join(t.TempDir(), "cut.wav")
		// The header declares 60 s; the file holds 40 s (and a byte).
		b := append(pcm.WAVHeader(int64(pcm.Samples(60*time.Second)*pcm.FrameBytes)), data...)
		if err := os.WriteFile(p, append(b, make([]byte, extra)...), 0o600); err != nil {
			t.Fatal(err)
		}
		var progress []int64
		out, err := New(&fakeDecoder{decode: answering}, nil).Transcribe(context.Background(), p, func(done, _ int64) { progress = append(progress, done) })
		if err != nil || out.Text != "p p" || out.AudioMs != 40000 || out.Warning != daemonapi.WarningCutShort {
			t.Errorf("cut short (+%d byte): %+v, %v; want two pieces of the 40000 ms it holds and the warning", extra, out, err)
		}
		if len(progress) == 0 || progress[len(progress)-1] != 40000 {
			t.Errorf("cut short: progress %v, want it to end at the 40000 ms the file holds", progress)
		}
	}
	out, err := New(&fakeDecoder{decode: answering}, nil).Transcribe(context.Background(), wav16k(t, src), nil)
	if err != nil || out.Warning != "" {
		t.Errorf("a whole file: %+v, %v; want no warning", out, err)
	}
}

// TestTranscribeDecoderFails: each way the decoder can fail a file, and
// what the caller is told. A decoder that died under a piece is waited for
// once and the piece sent again; a second loss, a decoder that does not
// come back, or one that is down for good fails the call with
// CodeUnavailable; a caller that goes away gets the cancelled sentence.
func TestTranscribeDecoderFails(t *testing.T) {
	src := tone16k(40, map[time.Duration]time.Duration{25 * time.Second: 300 * time.Millisecond})
	path := wav16k(t, src)
	const failed, cancelled = "the decoder failed", "cancelled: the caller went away"
	errDown := errors.New("the decoder is down for good")
	for _, c := range []struct {
		name   string
		answer []error // the decoder's answer to each call; past the end: answering
		waitUp error
		cancel bool // the caller goes away during the first decode
		msg    string
		calls  int
	}{
		{name: "lost once", answer: []error{child.ErrLost}, calls: 3},
		{name: "lost twice", answer: []error{nil, child.ErrLost, child.ErrLost}, msg: failed, calls: 3},
		{name: "lost, not back", answer: []error{child.ErrLost}, waitUp: context.DeadlineExceeded, msg: failed, calls: 1},
		{name: "yielded", answer: []error{child.ErrYielded, child.ErrYielded}, calls: 4},
		{name: "down for good", answer: []error{errDown}, msg: failed, calls: 1},
		{name: "error answer", answer: []error{nil, errors.New("decoder: failed")}, msg: failed, calls: 2},
		{name: "caller gone", cancel: true, msg: cancelled, calls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			dec := &fakeDecoder{
				decode: func(dctx context.Context, s []int16) (frame.Result, error) {
					calls++
					if c.cancel {
						cancel()
						<-dctx.Done()
						return frame.Result{}, dctx.Err()
					}
					if i := calls - 1; i < len(c.answer) && c.answer[i] != nil {
						return frame.Result{}, c.answer[i]
					}
					return answering(dctx, s)
				},
				waitUp: func(context.Context) error { return c.waitUp },
			}
			out, err := New(dec, nil).Transcribe(ctx, path, nil)
			if c.msg == "" {
				if err != nil || out.Text != "p p" || out.AudioMs != 40000 {
					t.Errorf("Transcribe = %+v, %v; want two pieces, 40000 ms", out, err)
				}
			} else {
				wantCode(t, err, daemonapi.CodeUnavailable, c.msg)
			}
			if calls != c.calls {
				t.Errorf("%d decoder calls, want %d", calls, c.calls)
			}
		})
	}
}

// TestTranscribeBusy: one file decodes and four wait; the sixth call is
// refused busy at once, and a waiter whose caller goes away leaves its
// place with the cancelled sentence. Each file gets the decoder in turn.
func TestTranscribeBusy(t *testing.T) {
	path := wav16k(t, tone16k(1, nil))
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		dec := &fakeDecoder{decode: func(ctx context.Context, s []int16) (frame.Result, error) {
			<-release
			return answering(ctx, s)
		}}
		files := New(dec, nil)
		ctx := context.Background()
		gone, cancel := context.WithCancel(ctx)
		errs := make(chan error, 5)
		for i := range 1 + fileWaiting {
			c := ctx
			if i == 2 {
				c = gone
			}
			go func() {
				_, err := files.Transcribe(c, path, nil)
				errs <- err
			}()
			synctest.Wait() // decoding, or in line
		}
		_, err := files.Transcribe(ctx, path, nil)
		wantCode(t, err, daemonapi.CodeBusy, "busy: as many files as the daemon takes are being transcribed or waiting; try again later")
		cancel()
		synctest.Wait()
		wantCode(t, <-errs, daemonapi.CodeUnavailable, "cancelled: the caller went away")
		close(release)
		for range fileWaiting {
			if err := <-errs; err != nil {
				t.Errorf("a file in line: %v", err)
			}
		}
	})
}
