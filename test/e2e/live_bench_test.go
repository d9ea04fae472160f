package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/vadwire"
	"github.com/yazses/yazses/lib/wav"
)

// livePauseMs is the dictation.eager_pause_ms of the eager and live
// decodings: the pause that ends a piece (config.LivePauseMs, what live
// text uses when eager_pause_ms is 0).
const livePauseMs = 300

// liveUtterances are dictationUtterances and the whole speech said three
// times with repeatGap between (33.3 s: longer than one of whisper's
// 30 s windows, so a hold of any length is shown).
var liveUtterances = append(slices.Clone(dictationUtterances), dictationUtterance{33, 0, 10622 * time.Millisecond, 3})

// BenchmarkDictationLive measures live text (dictation.live) next to the
// whole-hold and eager decodings, in one run, on the base.en-sized
// generated model (2 threads), with the real yazsesd, yaz-decode serve,
// the Silero detector child and the daemon's typing child (x11: XTEST
// into an xterm under Xvfb whose bytes are recorded to a file); the
// utterances of liveUtterances, the key released releaseLag after the
// last word (BenchmarkDictationLatency's "after"). Three decodings, each
// a daemon of its own, all three running: whole (eager_pause_ms 0),
// eager (livePauseMs) and live (dictation.live, the same pieces typed
// while the key is held). Each iteration holds once with each, in an
// order that turns from one iteration to the next, so that the load of
// a shared machine falls on the three alike. ns/op is live's: from the
// release to hold.stop's answer and the last byte of the text in the
// window, whichever comes later.
//
// Per phrase: the time from the end of each phrase said (the start of
// its pause, where the speech is in the audio played) to its text. The
// phrases are the Silero detector's speech spans of the played file
// (sileroPhrases: the real model through yaz-decode vad-stream, the
// daemon's parameters with pauses of livePauseMs, no padding: a span ends
// at the first window the detector hears as silence), up to the release,
// placed on the wall clock from the capture child's start (the "child
// started" record holdUntil times the release on). With pieces, phrase i
// is the daemon's i-th decided piece (its "hold: piece decoded" records,
// one per span end, in order; "piece" counts the pieces with text so
// far): "decided" is when the daemon had it, for live text the moment it
// hands the piece to the typing. "On screen" is when the window's file
// first held the whole typed chunk with the phrase's text: the typing
// child's "typed" records, one per piece typed while the key was held and
// one for the rest, each with its characters. Whole and eager type once,
// at the release: every phrase's text arrives then. The generated model
// prints no text for a piece that carries the text before it as its
// context (internal/testmodel: the context moves its decoder past the
// point where it closes a segment), so in a hold with pieces only the
// first piece has text: "on screen" is measured on those, "decided" on
// every piece, and typing a piece (decided → on screen) is their
// difference.
//
// Release → text: from hold.stop to the last byte in the window (for
// live, the rest; 0 when all was typed while the key was held), and to
// the last decode the hold's text waited for (its last "hold: piece
// decoded" record or decoder result), which is when a model that prints
// text for each piece would have its rest. CPU: utime+stime from
// /proc/PID/stat (clock ticks of 10 ms) of yazsesd, its decoder and its
// detector child together (the capture child, a file replayer started
// per hold, and the typing child are left out), from just before
// hold.start to the release (while held) and from the release to the last
// byte (after).
//
// The goals (pause → text median ≤ 300 ms and p95 ≤ 600 ms;
// release → rest median ≤ 50 ms) are reported, not asserted. Run with
// -benchtime 3x -timeout 60m; each sub-benchmark prints the table so far
// on stdout.
func BenchmarkDictationLive(b *testing.B) {
	model := generatedModel(b, testmodel.BaseEn)
	desk := benchDesktop(b, "x11")
	rows := map[string]string{}
	cold := map[string]time.Duration{}
	for _, u := range liveUtterances {
		dictationLive(b, desk, model, u, rows, cold)
	}
}

// liveModes are BenchmarkDictationLive's decodings.
var liveModes = []string{"whole", "eager", "live"}

// liveRun is what one hold of BenchmarkDictationLive came to.
type liveRun struct {
	screen  []time.Duration // pause start → the phrase's text in the window
	decided []time.Duration // pause start → the phrase's piece decided
	typing  []time.Duration // a live piece decided → in the window
	// release → the last byte in the window, → the last decode
	rest, restDecided time.Duration
	decode            []time.Duration // each piece's decode (its record's decode_ms)
	held, after       time.Duration   // CPU while held, after the release
	decHeld           time.Duration   // the decoder's share of held
	anomalies         int             // pieces decided before their phrase's pause could end them
	// cause is what the hold survived (its outcome's cause: the capture
	// child stalled on a loaded machine and was restarted, the file
	// replayed from its start again): such a hold is left out.
	cause string
}

// liveBenchDaemon is one decoding's daemon and the processes whose CPU
// time counts.
type liveBenchDaemon struct {
	*daemon
	mode string
	pids []int
}

// dictationLive is one sub-benchmark of BenchmarkDictationLive: an
// utterance with each decoding.
func dictationLive(b *testing.B, desk benchDesk, model string, u dictationUtterance, rows map[string]string, cold map[string]time.Duration) {
	capture, recorded, at := u.files(b, "after")
	dur := u.length()
	b.Run(fmt.Sprintf("utterance=%ds", u.label), func(b *testing.B) {
		if _, ok := cold[recorded]; !ok {
			cold[recorded] = coldWhisperCLI(b, model, recorded, 3)
		}
		var phrases []vadspan.Span
		for _, s := range sileroPhrases(b, capture, livePauseMs*time.Millisecond) {
			if s.StartTime() < at {
				phrases = append(phrases, s)
			}
		}
		ds := make([]liveBenchDaemon, len(liveModes))
		for i, mode := range liveModes {
			cfg := baseConfig().
				With("children.capture", arr(bin("yaz-capture"), "--file", capture)).
				With("decode.model", q(model)).
				With("decode.threads", "2").
				With("dictation.tail_ms", fmt.Sprint(dictationTailMs)).
				With("dictation.separator", q(" ")).
				With("vad.engine", q("silero")).
				With("vad.model", q(sileroModel(b))).
				With("dictation.eager_pause_ms", map[string]string{"whole": "0", "eager": fmt.Sprint(livePauseMs), "live": fmt.Sprint(livePauseMs)}[mode]).
				With("dictation.live", fmt.Sprint(mode == "live")).
				With("dictation.inject", q(desk.inject))
			ds[i] = liveBenchDaemon{daemon: newDaemon(b, cfg, desk.env...), mode: mode}
			ds[i].Start()
		}
		for i := range ds {
			ds[i].WaitRunning("gate", "speak", "decode", "vad", "type")
			ds[i].pids = []int{ds[i].Cmd.Process.Pid, ds[i].PidOf("decode"), ds[i].PidOf("vad")}
		}
		runs := make([][]liveRun, len(liveModes))
		b.ResetTimer()
		b.StopTimer()
		for n := range b.N {
			for k := range ds {
				i := (n + k) % len(ds)
				runs[i] = append(runs[i], liveBenchHold(b, ds[i], desk, at, phrases))
			}
		}
		for i, mode := range liveModes {
			liveRow(b, mode, i, dur, at, len(phrases), runs[i], cold[recorded], rows)
		}
		if b.N == 1 {
			return // the first probing run of the sub-benchmark: the table comes with the real one
		}
		var table []string
		for _, k := range slices.Sorted(maps.Keys(rows)) {
			table = append(table, rows[k])
		}
		fmt.Printf("BenchmarkDictationLive, the table so far:\n| audio | decoding | runs | phrases | pause → text on screen ms (median / p95 (n)) | pause → piece decided ms | piece decode ms | live piece decided → on screen ms | release → text ms (median / p95) | release → last decode ms | CPU while held ms (of one core) | decoder's share ms | CPU after release ms | cold whisper-cli ms | release→text / cold |\n"+
			"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s\n"+
			"(p95 by nearest rank, over every phrase of every run; CPU: yazsesd, yaz-decode serve and the detector child, utime+stime; whisper-cli: -t 2 -bs 1 -sns -np on base.en, model load and full audio context included)\n",
			strings.Join(table, "\n"))
	})
}

// liveBenchHold is one hold of BenchmarkDictationLive, with d, released
// at at of the played file, whose phrases are phrases. The benchmark's
// timer runs for live's release.
func liveBenchHold(b *testing.B, d liveBenchDaemon, desk benchDesk, at time.Duration, phrases []vadspan.Span) liveRun {
	b.Helper()
	nPieces, nTyped, nDecode := len(d.Records("", "hold: piece decoded")), len(d.Records("type", "typed")), len(d.Records("decode", "utterance"))
	nStarted := len(d.Records("capture", "child started"))
	before := fileSize(desk.file)
	w := watchSize(desk.src, desk.file, before)
	cpu0 := cpuTimes(b, d.pids)
	// A connection for each call, as `yazsesd ctl hold start` and `stop`
	// make: the daemon closes one idle for 30 s
	// (jsonrpc.DefaultIdleTimeout), and a hold can be longer.
	start := d.Client()
	d.holdUntil(start, at)
	cpu1 := cpuTimes(b, d.pids)
	start.Close()
	stop := d.Client()
	defer stop.Close()
	if d.mode == "live" {
		b.StartTimer()
	}
	t0 := time.Now()
	r := d.stopHold(stop)
	if r.Outcome != "typed" {
		w.stop()
		b.Fatalf("%s: hold.stop = %+v, want typed\n%s", d.mode, r, d.LogTail(20))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	l, err := stop.Last(ctx)
	cancel()
	if err != nil {
		w.stop()
		b.Fatal(err)
	}
	want := before + int64(len(l.Text)) + 1 // the separator
	_, doneAt := w.wait(want, time.Minute)
	b.StopTimer()
	cpu2 := cpuTimes(b, d.pids)
	if doneAt.IsZero() {
		b.Fatalf("%s: the window never received the %d bytes of the text and its separator", d.mode, len(l.Text)+1)
	}
	got, _ := os.ReadFile(desk.file)
	if s := string(got[before:]); s != l.Text+" " {
		b.Fatalf("%s: window received %q, want last %q and the separator", d.mode, s, l.Text)
	}
	if r.Cause != "" {
		b.Logf("%s: the hold came to %s with cause %s (%s): left out", d.mode, r.Outcome, r.Cause, r.Reason)
		return liveRun{cause: r.Cause}
	}
	started := recordTime(b, d.Records("capture", "child started"), nStarted)
	// The typed chunks: where each ends in the window, and when the
	// window held it.
	typed := d.Records("type", "typed")[nTyped:]
	var ends []time.Time
	n := before
	for _, t := range typed {
		n += int64(num(t["runes"]))
		ends = append(ends, w.at(n))
	}
	if len(typed) == 0 || n != want || slices.ContainsFunc(ends, time.Time.IsZero) {
		b.Fatalf("%s: the %d typing calls of the hold typed up to byte %d of the window, want %d (every chunk arrived: %v)", d.mode, len(typed), n, want, !slices.ContainsFunc(ends, time.Time.IsZero))
	}
	pieces := d.Records("", "hold: piece decoded")[nPieces:]
	run := liveRun{rest: max(0, doneAt.Sub(t0))}
	// The last decode the text waited for.
	lastDecode := t0
	for _, rec := range append(slices.Clone(pieces), d.Records("decode", "utterance")[nDecode:]...) {
		if rec["error"] == nil || rec["error"] == "" {
			lastDecode = later(lastDecode, recordTime(b, []map[string]any{rec}, 0))
		}
	}
	run.restDecided = lastDecode.Sub(t0)
	last := len(ends) - 1
	count := 0 // pieces with text so far
	for i, s := range phrases {
		end := started.Add(s.EndTime())
		if d.mode == "whole" || i >= len(pieces) {
			run.screen = append(run.screen, ends[last].Sub(end))
			continue
		}
		dec := recordTime(b, pieces, i)
		run.decided = append(run.decided, dec.Sub(end))
		run.decode = append(run.decode, time.Duration(num(pieces[i]["decode_ms"]))*time.Millisecond)
		if dec.Before(end.Add(livePauseMs * time.Millisecond)) {
			run.anomalies++ // the i-th piece is not this phrase's
		}
		k := int(num(pieces[i]["piece"]))
		if k == count && d.mode == "live" {
			continue // this phrase's piece has no text: nothing is typed
		}
		count = k
		chunk := min(k-1, last)
		if d.mode != "live" {
			chunk = last
		}
		run.screen = append(run.screen, ends[chunk].Sub(end))
		if d.mode == "live" && dec.Before(t0) { // handed to the typing while held
			run.typing = append(run.typing, ends[chunk].Sub(dec))
		}
	}
	if slices.ContainsFunc(run.screen, func(d time.Duration) bool { return d < 0 }) {
		b.Logf("%s: text on screen before its phrase ended %v: the capture child's records %v", d.mode, msList(run.screen), d.Records("capture", "child started")[nStarted:])
	}
	run.held, run.after = sum(cpu1)-sum(cpu0), sum(cpu2)-sum(cpu1)
	run.decHeld = cpu1[1] - cpu0[1]
	if testing.Verbose() {
		b.Logf("%v %s: pause→on screen %v, pause→decided %v, release→text %s ms (decided %s ms), pieces decoded in %v, CPU held %v (decoder %v), after %v; %d phrases, %d pieces decided, %d typing calls, %d chars, %d anomalies",
			at-releaseLag, d.mode, msList(run.screen), msList(run.decided), formatMs(run.rest), formatMs(run.restDecided), msList(run.decode), run.held, run.decHeld, run.after,
			len(phrases), len(pieces), len(typed), r.Chars, run.anomalies)
	}
	return run
}

// liveRow reports one decoding's runs of an utterance of length dur,
// released at at, and puts its row in the table.
func liveRow(b *testing.B, mode string, order int, dur, at time.Duration, phrases int, runs []liveRun, coldT time.Duration, rows map[string]string) {
	var screen, decided, typing, decode, rest, restDecided, held, after, decHeld []time.Duration
	anomalies := 0
	var kept []liveRun
	for _, r := range runs {
		if r.cause == "" {
			kept = append(kept, r)
		}
	}
	runs, out := kept, len(runs)-len(kept)
	for _, r := range runs {
		screen, decided, typing, decode = append(screen, r.screen...), append(decided, r.decided...), append(typing, r.typing...), append(decode, r.decode...)
		rest, restDecided = append(rest, r.rest), append(restDecided, r.restDecided)
		held, after, decHeld = append(held, r.held), append(after, r.after), append(decHeld, r.decHeld)
		anomalies += r.anomalies
	}
	if mode != "whole" {
		b.ReportMetric(ms(median(decided)), mode+"-pause-to-decided-ms")
	}
	if mode == "live" {
		b.ReportMetric(ms(median(screen)), "live-pause-to-text-ms")
		b.ReportMetric(ms(coldT), "whisper-cli-cold-ms")
	}
	b.ReportMetric(ms(median(rest)), mode+"-release-to-text-ms")
	b.ReportMetric(ms(median(restDecided)), mode+"-release-to-decided-ms")
	b.ReportMetric(ms(median(held)), mode+"-cpu-held-ms")
	pair := func(v []time.Duration) string {
		if len(v) == 0 {
			return "–"
		}
		return fmt.Sprintf("%s / %s (%d)", formatMs(median(v)), formatMs(p95(v)), len(v))
	}
	n := fmt.Sprint(len(runs))
	if out > 0 {
		n += fmt.Sprintf(" (%d left out)", out)
	}
	rows[fmt.Sprintf("%05.1f %d", dur.Seconds(), order)] = fmt.Sprintf("| %.1f s | %s | %s | %d | %s | %s | %s | %s | %s / %s | %s / %s | %s (%.0f %%) | %s | %s | %s | %.2f |",
		dur.Seconds(), mode, n, phrases, pair(screen), pair(decided), pair(decode), pair(typing),
		formatMs(median(rest)), formatMs(p95(rest)), formatMs(median(restDecided)), formatMs(p95(restDecided)),
		formatMs(median(held)), 100*float64(median(held))/float64(at), formatMs(median(decHeld)), formatMs(median(after)),
		formatMs(coldT), float64(median(rest))/float64(coldT))
	if anomalies > 0 {
		b.Logf("%s: %d pieces were decided less than %d ms after the end of the phrase matched to them: the file's phrases and the daemon's pieces differ", mode, anomalies, livePauseMs)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// generatedModel is the generated model of size in the suite's models
// folder, written once.
func generatedModel(b *testing.B, size testmodel.Size) string {
	b.Helper()
	path := filepath.Join(world.models, "ggml-"+size.String()+".bin")
	if _, err := os.Stat(path); err != nil {
		if err := testmodel.WriteFile(path, size, 1); err != nil {
			b.Fatal(err)
		}
	}
	return path
}

// sileroPhrases are the speech spans of a WAV file as the daemon's
// detector finds them in a hold with pieces ending at pauses of pause:
// the real Silero model's probabilities (yaz-decode vad-stream, the
// daemon's own detector child) under the daemon's parameters (vad.threshold
// 0.5, whisper.cpp's defaults, MinSilence pause), without padding, so
// each span ends where the detector first hears silence.
func sileroPhrases(b *testing.B, path string, pause time.Duration) []vadspan.Span {
	b.Helper()
	audio, _, err := wav.ReadFile16k(path, 16000*3600)
	if err != nil {
		b.Fatalf("read %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin("yaz-decode"), "vad-stream", "--vad", "silero", "--vad-model", sileroModel(b))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { // owned: its result is read below
		fw := frame.NewWriter(in)
		err := fw.Audio(pcm.FromFloat32(nil, audio))
		if err == nil {
			err = fw.End()
		}
		sent <- errors.Join(err, in.Close())
	}()
	var probs []float32
	r := vadwire.NewReader(out)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatalf("yaz-decode vad-stream: %v\n%s", err, stderr.Bytes())
		}
		probs = append(probs, rec.Probs...)
	}
	if err := errors.Join(<-sent, cmd.Wait()); err != nil {
		b.Fatalf("yaz-decode vad-stream: %v\n%s", err, stderr.Bytes())
	}
	p := vadspan.DefaultParams()
	p.MinSilence, p.SpeechPad = pause, -time.Millisecond
	return vadspan.Spans(probs, p)
}

// cpuTimes are the user and system CPU times of the processes (utime and
// stime of /proc/PID/stat, every thread's, in clock ticks of 10 ms: the
// USER_HZ of Linux's /proc).
func cpuTimes(b *testing.B, pids []int) []time.Duration {
	b.Helper()
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatalf("CPU time of %d: %v", pid, err)
		}
		// The fields after the command's name, which may hold spaces:
		// state is field 3, utime 14 and stime 15.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 13 {
			b.Fatalf("/proc/%d/stat: %q", pid, data)
		}
		for _, s := range f[11:13] {
			t, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %v", pid, err)
			}
			out[i] += time.Duration(t) * 10 * time.Millisecond
		}
	}
	return out
}

func sum(v []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range v {
		s += d
	}
	return s
}

// recordTime is the time of records[i] (i < 0: from the end).
func recordTime(b *testing.B, records []map[string]any, i int) time.Time {
	b.Helper()
	if i < 0 {
		i += len(records)
	}
	if i < 0 || i >= len(records) {
		b.Fatalf("no record %d of %d", i, len(records))
	}
	t, err := time.Parse(time.RFC3339Nano, fmt.Sprint(records[i]["time"]))
	if err != nil {
		b.Fatalf("record time: %v", err)
	}
	return t
}

func msList(v []time.Duration) string {
	s := make([]string, len(v))
	for i, d := range v {
		s[i] = formatMs(d)
	}
	return "[" + strings.Join(s, " ") + "] ms"
}
