package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

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

// The piecer hands out the whole stream, in order, in pieces of at most
// 30 s, each full one cut in a pause of its last 10 s.
func TestPiecer(t *testing.T) {
	gaps := map[time.Duration]time.Duration{}
	for at := 4 * time.Second; at < 100*time.Second; at += 7 * time.Second {
		gaps[at] = 250 * time.Millisecond
	}
	src := tone16k(100.5, gaps)
	r, err := wav.OpenFile16k(wav16k(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := newPiecer(r, len(src))
	var got []int16
	for {
		piece, at, err := p.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if at != int64(len(got)) {
			t.Fatalf("piece starts at %d, want %d", at, len(got))
		}
		if len(piece) > pcm.Samples(pieceMax) {
			t.Errorf("piece of %d samples", len(piece))
		}
		if end := at + int64(len(piece)); end < int64(len(src)) {
			if edge := src[end-1 : end+1]; edge[0] != 0 && edge[1] != 0 {
				t.Errorf("piece cut at %.3f s, not in a pause", float64(end)/pcm.SampleRate)
			}
		}
		got = append(got, piece...)
	}
	if !slicesEqual(got, src) {
		t.Errorf("the pieces (%d samples) are not the stream (%d)", len(got), len(src))
	}

	// A stream longer than the limit is refused as it is read.
	r2, _ := wav.OpenFile16k(wav16k(t, src))
	defer r2.Close()
	p = newPiecer(r2, 40*pcm.SampleRate)
	var perr error
	for perr == nil {
		_, _, perr = p.next()
	}
	if !errors.Is(perr, errFileTooLong) {
		t.Errorf("a 100 s stream with a 40 s limit: %v, want errFileTooLong", perr)
	}
}

func slicesEqual(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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

// A hold that comes while a file's piece is being decoded has the piece
// abandoned and is decoded at once; the piece is sent again after it, and
// the file's transcript is whole, its segments on the file's timeline.
func TestDecodeFileGivesWay(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	d := &Daemon{log: log, decode: child.NewDecoder(supervise.Spec{Name: "decode"}, "", log)}
	f := startSlowServe(t, d.decode, 50*time.Millisecond) // a 25 s piece: 1.25 s
	defer func() { d.decode.Close(); <-f.done }()

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
		out, err := d.decodeFile(context.Background(), newPiecer(r, len(src)), prog)
		var ends []int64
		for _, s := range out.Segments {
			ends = append(ends, s.StartMs, s.EndMs)
		}
		fileDone <- fileOut{ends, out.Text, out.AudioMs, err}
	}()
	if n := <-f.ended; n != 1 { // the first piece is being decoded
		t.Fatalf("first utterance numbered %d", n)
	}
	res, err := d.decode.Decode(context.Background(), child.PrioHold, make([]int16, 16000), nil)
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
