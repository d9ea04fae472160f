package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// dictationTailMs is the dictation.tail_ms the benchmark runs with (the
// default): the most audio still recorded after the key is released (the
// tail column is what the daemon's "hold tail" record says it took).
const dictationTailMs = 200

// BenchmarkDictationLatency measures, for utterances of 1, 3 and 10 s
// (jfk.wav cut to length, replayed in real time by yaz-capture --file),
// the time from the key release (the hold.stop call) to the text in the
// recording window (the xterm's file holds every byte of it), with the real
// yazsesd, the real yaz-decode --serve on the tiny.en-sized generated model
// (2 threads), the Silero detector child with the real model, and the
// in-process x11 typing under Xvfb. ns/op is that release-to-text time. Two
// modes: whole (the hold decoded after release, as by default) and eager
// (dictation.eager_pause_ms = 300: pieces decoded at the pauses while the
// speech goes on; at release only what is left).
//
// It breaks the time down into the tail (dictation.tail_ms), the decoder's
// own time (decode_ms of its result, from its log record "utterance"), the
// injection (from the start of the backend's work, its "typed" record's
// time less its took, to the last byte in the window: focus check, keymap,
// keys, the way through xterm) and what is left before the injection: the
// daemon's overhead (socket, the tail's timer, voice check, frames to the
// decoder, its result back, replacements, bookkeeping). It reports, next to it,
// a cold whisper-cli (model load and full audio context, as a person
// without a resident decoder would run it) on the same audio, and the
// release-to-first-character time.
//
// The random model prints made-up words, so the typing time (xdotool's
// 12 ms a key) depends on how many it prints; the goals (overhead under
// 30 ms, release-to-text for 3 s under half of cold whisper-cli) are
// reported, not asserted. Each sub-benchmark logs the table so far (the
// last one the whole table) when it runs more than one iteration; -v adds
// a line per iteration. Run with -benchtime=5x: one iteration takes the
// utterance's length plus a few seconds.
func BenchmarkDictationLatency(b *testing.B) {
	x := startX(b)
	rec := startRecorder(b, x)
	rec.Focus(b)
	rows := map[string]string{}
	cold := map[time.Duration]time.Duration{}
	for _, mode := range []string{"whole", "eager"} {
		for _, dur := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second} {
			speech := speechWAV(b, dur)
			b.Run(fmt.Sprintf("mode=%s/utterance=%ds", mode, int(dur.Seconds())), func(b *testing.B) {
				if _, ok := cold[dur]; !ok {
					cold[dur] = coldWhisperCLI(b, speech, 3)
				}
				d := newDaemon(b, baseConfig().
					With("children.capture", arr(bin("yaz-capture"), "--file", speech)).
					With("decode.model", q(world.tinyEn)).
					With("decode.threads", "2").
					With("dictation.tail_ms", fmt.Sprint(dictationTailMs)).
					With("vad.engine", q("silero")).
					With("vad.model", q(sileroModel(b))).
					With("dictation.eager_pause_ms", map[string]string{"whole": "0", "eager": "300"}[mode]),
					x.DaemonEnv()...)
				d.Start()
				d.WaitRunning("gate", "speak", "decode")
				c := d.Client()
				var total, first, decode, typing, over, tails []time.Duration
				chars := 0
				b.ResetTimer()
				b.StopTimer()
				for range b.N {
					d.holdWhileSpeaking(c, dur)
					before := fileSize(rec.File)
					w := watchSize(rec, rec.File, before)
					nDecode, nTyped := len(d.Records("decode", "utterance")), len(d.Records("", "typed"))
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
					got, _ := os.ReadFile(rec.File)
					if s := string(got[before:]); s != l.Text {
						b.Fatalf("window received %q, last is %q", s, l.Text)
					}
					dec := d.Records("decode", "utterance")
					typ := d.Records("", "typed")
					if (mode == "whole" && len(dec) != nDecode+1) || len(typ) != nTyped+1 {
						b.Fatalf("log has %d new decoder results and %d new typed records, want 1 each", len(dec)-nDecode, len(typ)-nTyped)
					}
					// The decoder's time after the speech was replayed: the one
					// utterance, or (eager) the pieces still to decode then.
					var dm time.Duration
					for _, r := range dec[nDecode:] {
						dm += time.Duration(num(r["decode_ms"])) * time.Millisecond
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
				coldT := cold[dur]
				tot := median(total)
				b.ReportMetric(ms(tot), "release-to-text-ms")
				b.ReportMetric(ms(median(first)), "release-to-first-char-ms")
				b.ReportMetric(ms(median(tails)), "tail-ms")
				b.ReportMetric(ms(median(decode)), "decode-ms")
				b.ReportMetric(ms(median(typing)), "inject-ms")
				b.ReportMetric(ms(median(over)), "overhead-ms")
				b.ReportMetric(ms(coldT), "whisper-cli-cold-ms")
				b.ReportMetric(float64(tot)/float64(coldT), "text/cold")
				rows[fmt.Sprintf("%s %02d", mode, int(dur.Seconds()))] = fmt.Sprintf("| %s | %2.0f s | %d | %s | %s | %s | %s | %s | %s (%d chars) | %s | %s | %.2f |",
					mode, dur.Seconds(), len(total), formatMs(tot), formatMs(median(first)), formatMs(median(tails)),
					formatMs(median(decode)), formatMs(median(over)), formatMs(median(typing)), chars,
					formatMs(coldT), formatMs(median(decode)+median(over)), float64(tot)/float64(coldT))
				if b.N == 1 {
					return // the first probing run of the sub-benchmark: the table comes with the real one
				}
				var table []string
				for _, k := range slices.Sorted(maps.Keys(rows)) {
					table = append(table, rows[k])
				}
				b.Logf("table so far:\n| decoding | audio | runs | release→text ms | release→1st char ms | tail ms | decode ms | daemon overhead ms | inject ms | cold whisper-cli ms | decode+overhead ms | text/cold |\n"+
					"|---|---|---|---|---|---|---|---|---|---|---|---|\n%s\n"+
					"(medians; inject = backend start → last byte in the window; overhead = release → backend start − tail − decode; whisper-cli: -t 2 -bs 1 -sns -np, model load and full audio context included)",
					strings.Join(table, "\n"))
			})
		}
	}
}

// coldWhisperCLI is the median wall time of runs cold runs of whisper-cli
// on the tiny.en-sized model (what scripts/bench runs: 2 threads, greedy).
func coldWhisperCLI(b *testing.B, speech string, runs int) time.Duration {
	b.Helper()
	var ts []time.Duration
	for range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t0 := time.Now()
		out, err := exec.CommandContext(ctx, world.whisperCLI, "-m", world.tinyEn, "-f", speech, "-t", "2", "-bs", "1", "-sns", "-np").CombinedOutput()
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
