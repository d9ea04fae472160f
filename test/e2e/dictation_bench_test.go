package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// dictationTailMs is the dictation.tail_ms the benchmark runs with (the
// default): the most audio still recorded after the key is released (the
// tail column is what the daemon's "hold tail" record says it took).
const dictationTailMs = 200

// BenchmarkDictationLatency measures, for utterances of about 1, 3 and
// 10 s of jfk.wav (dictationUtterances: each ends where the speaker
// pauses, and the microphone goes on hearing the room after it, as a real
// one does), the time from the key release (the hold.stop call) to the
// text in the recording window (the xterm's file holds every byte of it),
// with the real yazsesd, the real yaz-decode --serve on the tiny.en-sized
// generated model (2 threads), the Silero detector child with the real
// model, and the daemon's typing child (yaz-type --serve) on two
// desktops: x11 (XTEST into an xterm under Xvfb) and wayland (its virtual
// keyboard into foot under headless sway; the release after the last word
// only: the tail is not the desktop's). ns/op is that release-to-text
// time.
//
// Two releases: "after" lets the key up releaseLag after the last word
// (the person has finished; the detector has heard the silence), and
// "mid-word" releaseEarly before it (the person lets go while the last
// word is still being said: the tail records the rest, up to
// dictation.tail_ms). The release is timed on the capture file's own
// timeline (holdUntil). Two decodings: whole (the hold decoded after
// release, as by default) and eager (dictation.eager_pause_ms = 300:
// pieces decoded at the pauses while the speech goes on; at release only
// what is left).
//
// It breaks the time down into the tail (the daemon's "hold tail"
// record), the decoder's own time after the release began (decode_ms of
// its results, from its log records "utterance"), the injection (from the
// start of the backend's work, the typing child's "typed" record's time
// less its took, to the last byte in the window: focus check, keymap,
// keys, the way through xterm) and what is left before the injection: the
// daemon's overhead (socket, voice check, frames to the decoder, its
// result back, replacements, the text to the typing child, bookkeeping). It reports, next to it, a cold whisper-cli
// (model load and full audio context, as a person without a resident
// decoder would run it) on the utterance as recorded up to the release,
// and the release-to-first-character time.
//
// The random model prints made-up words, so the typed length depends on
// how many it prints; the goals are reported, not asserted. Each
// sub-benchmark prints the table so far on stdout (the last one the whole
// table) when it runs more than one iteration; -v adds a line per
// iteration. Run with
// -benchtime=5x: one iteration takes the utterance's length plus a few
// seconds.
func BenchmarkDictationLatency(b *testing.B) {
	rows := map[string]string{}
	cold := map[string]time.Duration{}
	for _, desktop := range []string{"x11", "wayland"} {
		b.Run("desktop="+desktop, func(b *testing.B) {
			desk := benchDesktop(b, desktop)
			for _, release := range []string{"after", "mid-word"} {
				if desktop == "wayland" && release != "after" {
					continue // the tail is the desktop's no more than the decode is
				}
				for _, mode := range []string{"whole", "eager"} {
					for _, u := range dictationUtterances {
						dictationLatency(b, desktop, desk, release, mode, u, rows, cold)
					}
				}
			}
		})
	}
}

// dictationLatency is one sub-benchmark of BenchmarkDictationLatency.
func dictationLatency(b *testing.B, desktop string, desk benchDesk, release, mode string, u dictationUtterance, rows map[string]string, cold map[string]time.Duration) {
	capture, recorded, at := u.files(b, release)
	dur := u.length()
	b.Run(fmt.Sprintf("release=%s/mode=%s/utterance=%ds", release, mode, u.label), func(b *testing.B) {
		if _, ok := cold[recorded]; !ok {
			cold[recorded] = coldWhisperCLI(b, world.tinyEn, recorded, 3)
		}
		d := newDaemon(b, baseConfig().
			With("children.capture", arr(bin("yaz-capture"), "--file", capture)).
			With("decode.model", q(world.tinyEn)).
			With("decode.threads", "2").
			With("dictation.tail_ms", fmt.Sprint(dictationTailMs)).
			With("vad.engine", q("silero")).
			With("vad.model", q(sileroModel(b))).
			With("dictation.eager_pause_ms", map[string]string{"whole": "0", "eager": "300"}[mode]).
			With("dictation.inject", q(desk.inject)),
			desk.env...)
		d.Start()
		d.WaitRunning("gate", "speak", "decode")
		c := d.Client()
		var total, first, decode, typing, over, tails []time.Duration
		chars := 0
		b.ResetTimer()
		b.StopTimer()
		for range b.N {
			d.holdUntil(c, at)
			before := fileSize(desk.file)
			w := watchSize(desk.src, desk.file, before)
			nDecode, nTyped := len(d.Records("decode", "utterance")), len(d.Records("type", "typed"))
			b.StartTimer()
			t0 := time.Now()
			r := d.stopHold(c)
			if r.Outcome != "typed" {
				w.stop()
				b.Fatalf("hold.stop = %+v, want typed\n%s", r, d.LogTail(20))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l, err := c.Last(ctx)
			cancel()
			if err != nil {
				w.stop()
				b.Fatal(err)
			}
			firstAt, doneAt := w.wait(before+int64(len(l.Text)), 20*time.Second)
			b.StopTimer()
			if doneAt.IsZero() {
				b.Fatalf("the window never received the %d bytes of the text", len(l.Text))
			}
			got, _ := os.ReadFile(desk.file)
			if s := string(got[before:]); s != l.Text {
				b.Fatalf("window received %q, last is %q", s, l.Text)
			}
			dec := d.Records("decode", "utterance")
			typ := d.Records("type", "typed")
			if len(dec) > nDecode+1 && mode == "whole" || len(typ) != nTyped+1 {
				b.Fatalf("log has %d new decoder results and %d new typed records, want at most 1 and 1", len(dec)-nDecode, len(typ)-nTyped)
			}
			// The decoder's time after the release: the one utterance,
			// or (eager) what of the pieces was still to decode then
			// (a piece that began before t0 counts from t0).
			var dm time.Duration
			for _, r := range dec[nDecode:] {
				end, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r["time"]))
				if err != nil {
					b.Fatalf("decoder record time: %v", err)
				}
				took := time.Duration(num(r["decode_ms"])) * time.Millisecond
				dm += max(0, min(took, end.Sub(t0)))
			}
			// Typing started "took" before the daemon logged "typed"
			// (the same wall clock as the test's).
			typedAt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(typ[len(typ)-1]["time"]))
			if err != nil {
				b.Fatalf("typed record time: %v", err)
			}
			injectStart := typedAt.Add(-time.Duration(num(typ[len(typ)-1]["took"])))
			tt := doneAt.Sub(t0)
			tk := doneAt.Sub(injectStart)
			total, first, decode, typing = append(total, tt), append(first, firstAt.Sub(t0)), append(decode, dm), append(typing, tk)
			// The tail the daemon recorded (dictation.tail_ms is its
			// maximum; it ends sooner once the detector hears silence).
			tl := dictationTailMs * time.Millisecond
			if recs := d.Records("", "hold tail"); len(recs) > 0 {
				tl = time.Duration(num(recs[len(recs)-1]["tail_ms"])) * time.Millisecond
			}
			tails = append(tails, tl)
			over = append(over, injectStart.Sub(t0)-tl-dm)
			chars = r.Chars
			if testing.Verbose() {
				b.Logf("%v utterance: release→text %s ms, first char %s, decode %d ms, daemon overhead %s ms, inject %s ms, %d chars",
					dur, formatMs(tt), formatMs(firstAt.Sub(t0)), dm.Milliseconds(), formatMs(over[len(over)-1]), formatMs(tk), r.Chars)
			}
		}
		coldT := cold[recorded]
		tot := median(total)
		b.ReportMetric(ms(tot), "release-to-text-ms")
		b.ReportMetric(ms(median(first)), "release-to-first-char-ms")
		b.ReportMetric(ms(median(tails)), "tail-ms")
		b.ReportMetric(ms(median(decode)), "decode-ms")
		b.ReportMetric(ms(median(typing)), "inject-ms")
		b.ReportMetric(ms(median(over)), "overhead-ms")
		b.ReportMetric(ms(coldT), "whisper-cli-cold-ms")
		b.ReportMetric(float64(tot)/float64(coldT), "text/cold")
		rows[fmt.Sprintf("%s %s %s %05.1f", desktop, release, mode, dur.Seconds())] = fmt.Sprintf("| %s | %s | %s | %.1f s | %d | %s | %s | %s | %s | %s | %s (%d chars) | %s | %s | %.2f |",
			desktop, release, mode, dur.Seconds(), len(total), formatMs(tot), formatMs(median(first)), formatMs(median(tails)),
			formatMs(median(decode)), formatMs(median(over)), formatMs(median(typing)), chars,
			formatMs(coldT), formatMs(median(decode)+median(over)), float64(tot)/float64(coldT))
		if b.N == 1 {
			return // the first probing run of the sub-benchmark: the table comes with the real one
		}
		var table []string
		for _, k := range slices.Sorted(maps.Keys(rows)) {
			table = append(table, rows[k])
		}
		// On stdout: the test framework cuts a benchmark's log
		// after ten lines.
		fmt.Printf("BenchmarkDictationLatency, the table so far:\n| desktop | release | decoding | audio | runs | release→text ms | release→1st char ms | tail ms | decode ms | daemon overhead ms | inject ms | cold whisper-cli ms | decode+overhead ms | text/cold |\n"+
			"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s\n"+
			"(medians; inject = backend start → last byte in the window; overhead = release → backend start − tail − decode; whisper-cli: -t 2 -bs 1 -sns -np, model load and full audio context included)\n",
			strings.Join(table, "\n"))
	})
}

// coldWhisperCLI is the median wall time of runs cold runs of whisper-cli
// on model (what scripts/bench runs: 2 threads, greedy).
func coldWhisperCLI(b *testing.B, model, speech string, runs int) time.Duration {
	b.Helper()
	var ts []time.Duration
	for range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t0 := time.Now()
		out, err := exec.CommandContext(ctx, world.whisperCLI, "-m", model, "-f", speech, "-t", "2", "-bs", "1", "-sns", "-np").CombinedOutput()
		el := time.Since(t0)
		cancel()
		if err != nil {
			b.Fatalf("whisper-cli: %v\n%s", err, out)
		}
		ts = append(ts, el)
	}
	return median(ts)
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// p95 is the 95th percentile of v by nearest rank (of fewer than 20
// values, the largest).
func p95(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)*95+99)/100-1]
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// sizeWatch notes, each time a file changes (inotify, through src), its
// size: when it first grew and when it first reached a size.
type sizeWatch struct {
	testwait.Signal // a new size was noted
	mu              sync.Mutex
	first           time.Time
	sizes           []sizeAt
	quit            chan struct{}
	done            chan struct{}
}

type sizeAt struct {
	at   time.Time
	size int64
}

func watchSize(src testwait.Source, path string, from int64) *sizeWatch {
	w := &sizeWatch{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := from
		for {
			changed := src.Changed()
			if s := fileSize(path); s != last {
				now := time.Now()
				w.mu.Lock()
				if w.first.IsZero() {
					w.first = now
				}
				w.sizes = append(w.sizes, sizeAt{now, s})
				w.mu.Unlock()
				w.Notify()
				last = s
			}
			select {
			case <-w.quit:
				return
			case <-changed:
			}
		}
	}()
	return w
}

func (w *sizeWatch) stop() {
	close(w.quit)
	<-w.done
}

// wait waits until the file has reached size and returns when it first
// grew and when it reached size (zero if it never did), then stops.
func (w *sizeWatch) wait(size int64, limit time.Duration) (first, reached time.Time) {
	defer w.stop()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	testwait.Until(ctx, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, s := range w.sizes {
			if s.size >= size {
				first, reached = w.first, s.at
				return true
			}
		}
		return false
	}, w)
	return first, reached
}

// at is when the file first had size or more bytes, among the sizes
// noted so far (zero: never).
func (w *sizeWatch) at(size int64) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.sizes {
		if s.size >= size {
			return s.at
		}
	}
	return time.Time{}
}

// A dictationUtterance is a stretch of jfk.wav that ends where the speaker
// pauses: from, and end, the end of the Silero detector's speech span
// (ggml-silero-v6.2.0, whisper.cpp's span defaults) on the whole file.
type dictationUtterance struct {
	label     int // seconds, as the table names it
	from, end time.Duration
	// times the stretch is said in a row, repeatGap of the room
	// between (0 or 1: once).
	times int
}

// dictationUtterances: "ask not" (1.1 s of speech), "what your country
// can do for you" (2.3 s) and the whole speech with its three pauses
// (10.3 s).
var dictationUtterances = []dictationUtterance{
	{1, 3000 * time.Millisecond, 4414 * time.Millisecond, 1},
	{3, 4900 * time.Millisecond, 7678 * time.Millisecond, 1},
	{10, 0, 10622 * time.Millisecond, 1},
}

// releaseLag is how long after the last word the key comes up in the
// "after" release; releaseEarly how long before the end of the last word
// it comes up in the "mid-word" one.
const (
	releaseLag   = 300 * time.Millisecond
	releaseEarly = 200 * time.Millisecond
)

// roomTone is how much of the room the microphone goes on hearing after
// the utterance: jfk.wav's own background between its first two phrases
// (2.35–3.2 s), looped.
const roomTone = 3 * time.Second

// repeatGap is the room between two sayings of an utterance said several
// times: a pause that ends a piece, as between two sentences.
const repeatGap = 700 * time.Millisecond

func (u dictationUtterance) length() time.Duration {
	n := time.Duration(max(1, u.times))
	return n*(u.end-u.from) + (n-1)*repeatGap
}

// files writes (once per utterance) the file the capture child replays
// (the utterance, then roomTone of the room) and the file a person would
// have recorded up to an "after" release (the utterance and releaseLag of
// the room: what cold whisper-cli decodes), and returns them with where in
// the replayed file the key comes up for release.
func (u dictationUtterance) files(b *testing.B, release string) (capture, recorded string, at time.Duration) {
	b.Helper()
	src, _, err := wav.ReadFile16k(world.jfk, 16000*3600)
	if err != nil {
		b.Fatalf("read jfk.wav: %v", err)
	}
	cut := func(from, to time.Duration) []float32 { return src[pcm.Samples(from):min(len(src), pcm.Samples(to))] }
	room := func(d time.Duration) []float32 {
		tone := cut(2350*time.Millisecond, 3200*time.Millisecond)
		var out []float32
		for len(out) < pcm.Samples(d) {
			out = append(out, tone[:min(len(tone), pcm.Samples(d)-len(out))]...)
		}
		return out
	}
	speech := slices.Clone(cut(u.from, u.end))
	for range u.times - 1 {
		speech = append(append(speech, room(repeatGap)...), cut(u.from, u.end)...)
	}
	dir := filepath.Join(os.TempDir(), "yazses-bench-utterances")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("jfk-%d-%d", u.from.Milliseconds(), u.end.Milliseconds())
	if u.times > 1 {
		name += fmt.Sprintf("-x%d", u.times)
	}
	capture = filepath.Join(dir, name+"-room.wav")
	recorded = filepath.Join(dir, name+"-lag.wav")
	for path, audio := range map[string][]float32{
		capture:  append(slices.Clone(speech), room(roomTone)...),
		recorded: append(slices.Clone(speech), room(releaseLag)...),
	} {
		data := pcm.Encode(nil, pcm.FromFloat32(nil, audio))
		if err := os.WriteFile(path, append(pcm.WAVHeader(int64(len(data))), data...), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	at = u.length() + releaseLag
	if release == "mid-word" {
		at = u.length() - releaseEarly
	}
	return capture, recorded, at
}
