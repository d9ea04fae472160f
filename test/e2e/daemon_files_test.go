package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// The file proofs: files never crash the daemon, never delay dictation, and work
// past the decoder's own per-utterance cap; a daemon that did not stop
// cleanly comes back with its budget spent; a hold has a maximum.

// sparseWAV writes a mono PCM WAV file whose header declares seconds of
// audio at rate and bits and whose data is never written: a sparse file
// of a few KiB on disk that reads as silence (8-bit: a constant full-scale
// offset, since 8-bit samples are unsigned).
func sparseWAV(t testing.TB, rate, bits, seconds int) string {
	t.Helper()
	data := int64(rate) * int64(seconds) * int64(bits/8)
	le := binary.LittleEndian
	var h []byte
	h = append(h, "RIFF"...)
	h = le.AppendUint32(h, uint32(36+data))
	h = append(h, "WAVEfmt "...)
	h = le.AppendUint32(h, 16)
	h = le.AppendUint16(h, 1) // PCM
	h = le.AppendUint16(h, 1) // mono
	h = le.AppendUint32(h, uint32(rate))
	h = le.AppendUint32(h, uint32(rate*bits/8))
	h = le.AppendUint16(h, uint16(bits/8))
	h = le.AppendUint16(h, uint16(bits))
	h = append(h, "data"...)
	h = le.AppendUint32(h, uint32(data))
	p := filepath.Join(t.TempDir(), fmt.Sprintf("sparse-%dhz-%dbit-%ds.wav", rate, bits, seconds))
	if err := os.WriteFile(p, h, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(h))+data); err != nil {
		t.Fatal(err)
	}
	return p
}

// procKB reads a "Vm…: N kB" line of /proc/PID/status.
func procKB(t testing.TB, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// daemonMemLimit is the address-space limit (prlimit --as) the memory
// tests put on the daemon, so that a daemon that reads a file whole fails
// there rather than taking the machine's memory: its idle address space is
// about 2.1 GB (Go reserves, it does not use), its resident memory ~10 MB.
const daemonMemLimit = 3 << 30

// maxDaemonRSS is the goal for the daemon's own memory while it
// transcribes: its peak resident set (VmHWM) stays under 150 MB.
const maxDaemonRSSKB = 150 << 10

// TestTranscribeSparseFilesBoundedMemory: a 4 KB sparse
// WAV whose header says 59 minutes of 192 kHz 8-bit audio, and a
// 10-minute 192 kHz file, each transcribed through the daemon under an
// address-space limit: the daemon survives both, answers them whole, and
// its peak resident memory stays under 150 MB. (Before: it read every
// source frame as float32 first, 2.7 GB for the first file, and died.)
func TestTranscribeSparseFilesBoundedMemory(t *testing.T) {
	t.Parallel()
	cfg := baseConfig().With("children.decode", arr(bin("fakedecode")))
	d := newDaemon(t, cfg)
	d.Wrap = []string{"prlimit", fmt.Sprintf("--as=%d", daemonMemLimit), "--"}
	d.Level = "info"
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	pid := d.Cmd.Process.Pid

	for _, f := range []struct {
		rate, bits, seconds int
	}{
		{192000, 8, 59 * 60},
		{192000, 16, 10 * 60},
	} {
		path := sparseWAV(t, f.rate, f.bits, f.seconds)
		st, _ := os.Stat(path)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		res, err := d.Client().Transcribe(ctx, path)
		cancel()
		if err != nil {
			t.Fatalf("transcribe of %d s at %d Hz, %d-bit (%d bytes apparent): %v\n%s",
				f.seconds, f.rate, f.bits, st.Size(), err, d.LogTail(20))
		}
		if want := int64(f.seconds) * 1000; res.AudioMs != want {
			t.Errorf("%d s at %d Hz: audio_ms %d, want %d", f.seconds, f.rate, res.AudioMs, want)
		}
		if st := d.Status(); st.PID != pid {
			t.Fatalf("status pid %d, want the daemon that was started (%d)", st.PID, pid)
		}
		hwm := procKB(t, pid, "VmHWM")
		t.Logf("%d s at %d Hz, %d-bit (%d MB apparent): daemon peak RSS %d MB", f.seconds, f.rate, f.bits, st.Size()>>20, hwm>>10)
		if hwm > maxDaemonRSSKB {
			t.Errorf("daemon peak RSS %d MB after a %d s %d Hz file, want under %d MB", hwm>>10, f.seconds, f.rate, maxDaemonRSSKB>>10)
		}
	}
}

// kill9 ends the daemon with SIGKILL, as the kernel's OOM killer would;
// its children end with it (Pdeathsig).
func (d *daemon) kill9() {
	d.T.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		d.T.Fatal(err)
	}
	<-d.Done
	// Its children end with it (Pdeathsig): wait for each one's end.
	timeout := time.After(10 * time.Second)
	for _, pid := range d.Processes() {
		gone, err := testwait.Exited(pid)
		if err != nil {
			d.T.Fatal(err)
		}
		select {
		case <-gone:
		case <-timeout:
			d.T.Fatalf("the killed daemon's process %d still runs 10 s later", pid)
		}
	}
	d.Stopped = true
}

// restart starts the daemon again in the same folders.
func (d *daemon) restart() {
	d.T.Helper()
	d.Stopped = false
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
}

// TestDaemonKilledRestartsSpent: a daemon killed with
// SIGKILL and started again in the same session starts with its budget
// spent for the hour (ask_human refused budget_exhausted, status saying
// why); a clean SIGTERM stop and a start after it begin fresh.
func TestDaemonKilledRestartsSpent(t *testing.T) {
	t.Parallel()
	cfg := baseConfig().With("budget.ask_human_per_hour", "3")
	d := startDaemon(t, cfg)
	if b := d.Budget(); b.FailClosed || b.Used != 0 {
		t.Fatalf("first start: budget %+v, want fresh", b)
	}

	d.kill9()
	d.restart()
	b := d.Budget()
	if !b.FailClosed || b.FailClosedReason != daemonapi.FailClosedDaemon || b.NextFreeS == 0 {
		t.Errorf("after SIGKILL and a restart: budget %+v, want fail_closed with reason %q and a wait", b, daemonapi.FailClosedDaemon)
	}
	if r := d.Ask("Did the restart reset the budget?", 10); r.Result != daemonapi.Refused || r.Reason != "budget_exhausted" {
		t.Errorf("ask_human after SIGKILL and a restart = %+v, want refused budget_exhausted", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status := exec.CommandContext(ctx, bin("yazsesd"), "status")
	status.Env = hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime)
	if out, err := status.Output(); err != nil || !strings.Contains(string(out), "did not stop cleanly") {
		t.Errorf("yazsesd status (%v) does not say why the budget is spent:\n%s", err, out)
	}
	if n := d.Count("budget.fail_closed", daemonapi.FailClosedDaemon); n != 1 {
		t.Errorf("%d budget.fail_closed audit events with reason %s, want 1", n, daemonapi.FailClosedDaemon)
	}

	// A clean stop, then a start: fresh.
	d.Stop()
	d.restart()
	if b := d.Budget(); b.FailClosed || b.Used != 0 || b.NextFreeS != 0 {
		t.Errorf("after a clean stop and a restart: budget %+v, want fresh", b)
	}
	if r := d.Ask("Is the budget fresh after a clean stop?", 20); r.Result == daemonapi.Refused {
		t.Errorf("ask_human after a clean stop and a restart = %+v, want it asked", r)
	}
}

// TestHoldDuringLongFileTranscription: a hold released
// while the daemon transcribes a long file is typed within its usual
// latency, before the file is done: the file goes to the decoder in
// pieces, and a hold takes the decoder between two of them (or abandons
// the piece in flight, which is done again later). The file's transcript
// is still whole and in order: its segments, offset back to the file's
// timeline, cover it from 0 to its end.
//
// The fake decoder takes 100 ms per second of audio: the 150 s file takes
// 15 s, a 3 s hold 0.3 s. Its segments are one per utterance, [0, length].
func TestHoldDuringLongFileTranscription(t *testing.T) {
	t.Parallel()
	const text = "piece"
	speech := speechWAV(t, 3*time.Second)
	long := speechWAV(t, 150*time.Second)
	cfg := dictationConfig(speech, true).With("dictation.inject", q("stdout"))
	d := startDaemon(t, cfg, "YAZ_FAKE_MS_PER_S=100", "YAZ_FAKE_TEXT="+text)
	c := d.Client()

	hold := func() (daemonapi.HoldResult, time.Duration, time.Time) {
		d.holdWhileSpeaking(c, wavDuration(t, speech))
		start := time.Now()
		r := d.stopHold(c)
		return r, time.Since(start), time.Now()
	}
	r, usual, _ := hold()
	if r.Outcome != "typed" {
		t.Fatalf("baseline hold.stop = %+v, want typed\n%s", r, d.LogTail(20))
	}
	before := d.decodes()

	type fileResult struct {
		res daemonapi.TranscribeResult
		err error
		at  time.Time
	}
	fileDone := make(chan fileResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := d.Client().Transcribe(ctx, long)
		fileDone <- fileResult{res, err, time.Now()}
	}()
	d.WaitFor(30*time.Second, "the file's decoding", func() bool { return d.decodes() > before })

	r, during, holdAt := hold()
	if r.Outcome != "typed" {
		t.Fatalf("hold.stop during the file = %+v, want typed\n%s", r, d.LogTail(20))
	}
	f := <-fileDone
	if f.err != nil {
		t.Fatalf("transcribe: %v\n%s", f.err, d.LogTail(20))
	}
	t.Logf("release → typed: usual %v, during a 150 s file %v; the file ended %v after the hold", usual, during, f.at.Sub(holdAt))
	if !holdAt.Before(f.at) {
		t.Errorf("the hold was typed %v after the file's transcript came back: it waited for the file", holdAt.Sub(f.at))
	}
	if during > 4*usual {
		t.Errorf("the hold released during a file took %v, its usual latency is %v", during, usual)
	}

	// The transcript is whole and in order.
	const fileMs = 150000
	segs := f.res.Segments
	if f.res.AudioMs != fileMs || len(segs) < 5 {
		t.Fatalf("transcript: audio_ms %d, %d segments; want %d ms in 5 pieces or more", f.res.AudioMs, len(segs), fileMs)
	}
	at := int64(0)
	for i, s := range segs {
		if abs(s.StartMs-at) > 1 || s.EndMs <= s.StartMs || s.EndMs-s.StartMs > 30000 || s.Text != text {
			t.Errorf("segment %d = %+v, want %q from %d ms, at most 30 s long", i, s, text, at)
		}
		at = s.EndMs
	}
	if abs(at-fileMs) > 1 {
		t.Errorf("the segments end at %d ms, want %d", at, fileMs)
	}
	if want := strings.TrimSpace(strings.Repeat(text+" ", len(segs))); f.res.Text != want {
		t.Errorf("text = %q, want %q (one %q per piece)", f.res.Text, want, text)
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestAskDecodeBoundedByTimeout: an answer's decoding
// waits no longer than the caller's timeout allows (and a short grace
// after the answer ends): with the decoder stopped (SIGSTOP), ask_human
// with timeout_s = 15 returns no_answer well within three times its
// timeout. (Before: the decoder's own 2-minute timeout, or for ever while
// the frames could not be written.)
func TestAskDecodeBoundedByTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 15 // the question is spoken and the answer heard within it; its decoding is not
	d := startDaemon(t, baseConfig().With("children.decode", arr(bin("fakedecode"))))
	pid := d.PidOf("decode")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: "Shall I go on?", TimeoutS: timeout})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("ask_human: %v", err)
	}
	t.Logf("ask_human with timeout_s %d and a stopped decoder: %+v after %v", timeout, r, took)
	if r.Result != daemonapi.NoAnswer {
		t.Errorf("result %+v, want no_answer (the answer could not be decoded)", r)
	}
	if took > 3*timeout*time.Second {
		t.Errorf("ask_human with timeout_s %d returned after %v, want within %v", timeout, took, 3*timeout*time.Second)
	}
	if n := d.Count("ask.spoken", ""); n != 1 {
		t.Errorf("%d ask.spoken events, want 1 (the question was heard: charged)", n)
	}
	// The stopped decoder never answered the abandoned answer: it is
	// restarted (abandonGrace), not left for the next hold to find hung,
	// and the next hold is decoded by the new one.
	d.WaitFor(time.Minute, "the stopped decoder restarted", func() bool {
		ch := d.Child("decode")
		return ch.State == "running" && ch.PID != pid && ch.Restarts >= 1
	})
	c2 := d.Client()
	defer c2.Close()
	d.holdWhileSpeaking(c2, wavDuration(t, answerWAV()))
	// No display here: a decoded hold's text is kept for `ctl last`.
	if h := d.stopHold(c2); h.Outcome != "kept" || h.Chars == 0 {
		t.Errorf("hold.stop after the restart = %+v, want it decoded by the new decoder (kept)\n%s", h, d.LogTail(20))
	}
}

// TestTranscribeLongFileRealDecoder: `yazsesd ctl
// transcribe` of a 6-minute file, past yaz-decode --serve's 5-minute cap
// on one utterance, works through the daemon with the real decoder: the
// file goes in pieces, and the segments come back on the file's timeline,
// in order. (Before: "the decoder failed".)
func TestTranscribeLongFileRealDecoder(t *testing.T) {
	t.Parallel()
	long := speechWAV(t, 6*time.Minute)
	d := startDaemon(t, baseConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	params, _ := json.Marshal(daemonapi.TranscribeParams{Path: long})
	out, stderr, code := d.Ctl(ctx, "transcribe", string(params))
	if code != 0 {
		t.Fatalf("yazsesd ctl transcribe of a 6-minute file: exit %d: %s\n%s", code, stderr, d.LogTail(20))
	}
	var res daemonapi.TranscribeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ctl transcribe printed %q: %v", out, err)
	}
	if res.AudioMs != 360000 {
		t.Errorf("audio_ms %d, want 360000", res.AudioMs)
	}
	last := int64(0)
	for i, s := range res.Segments {
		if s.StartMs < last || s.EndMs < s.StartMs || s.EndMs > 360000 {
			t.Errorf("segment %d [%d, %d] ms: out of order or off the file's timeline (previous end %d)", i, s.StartMs, s.EndMs, last)
		}
		last = max(last, s.StartMs)
	}
	if len(res.Segments) == 0 || res.Segments[len(res.Segments)-1].StartMs < 300000 {
		t.Errorf("no segment after 5 minutes: %d segments", len(res.Segments))
	}
	if res.Text == "" {
		t.Errorf("no text")
	}
}

// TestTranscribeBusy: file work is bounded. One file
// decodes at a time and four more may wait; a call beyond that is refused
// at once with CodeBusy, before any of them is done, instead of piling up
// open files and goroutines.
func TestTranscribeBusy(t *testing.T) {
	t.Parallel()
	file := speechWAV(t, 60*time.Second)
	d := startDaemon(t, baseConfig().With("children.decode", arr(bin("fakedecode"))), "YAZ_FAKE_MS_PER_S=500")
	const calls = 7
	type result struct {
		err error
	}
	results := make(chan result, calls)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var clients []*daemonapi.Client
	for range calls {
		c := d.Client()
		clients = append(clients, c)
		go func() {
			_, err := c.Transcribe(ctx, file)
			results <- result{err}
		}()
	}
	busy := 0
	for busy < 2 {
		r := <-results
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(r.err, &rpcErr) && rpcErr.Code == daemonapi.CodeBusy:
			busy++
		case r.err == nil:
			t.Fatalf("a file was transcribed before any call was refused busy (%d refused): nothing bounds concurrent file work", busy)
		default:
			t.Fatalf("transcribe: %v", r.err)
		}
	}
	for _, c := range clients { // the five accepted callers go away
		c.Close()
	}
	for range calls - busy {
		if r := <-results; r.err == nil {
			t.Errorf("a cancelled transcribe returned a result")
		}
	}
	// The line is free again once the daemon has seen them go.
	short := speechWAV(t, 3*time.Second)
	d.WaitFor(30*time.Second, "a transcribe after the others went away", func() bool {
		_, err := d.Client().Transcribe(ctx, short)
		return err == nil
	})
}

// TestHoldEndsAtMaximum: a hold that nobody releases
// ends by itself after dictation.max_hold_s, as if released: what was said
// is decoded and typed, and the hold is idle again; a late hold.stop finds
// nothing open.
func TestHoldEndsAtMaximum(t *testing.T) {
	t.Parallel()
	const text = "kept at the limit"
	speech := speechWAV(t, 3*time.Second)
	cfg := dictationConfig(speech, true).With("dictation.inject", q("stdout")).With("dictation.max_hold_s", "5")
	d := startDaemon(t, cfg, "YAZ_FAKE_TEXT="+text)
	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start = %+v, %v", r, err)
	}
	d.WaitFor(30*time.Second, "the hold to end by itself and be typed", func() bool {
		return strings.Contains(d.Stdout.String(), text)
	})
	if st := d.Status(); st.Hold != daemonapi.HoldIdle {
		t.Errorf("status hold %q after the maximum, want idle", st.Hold)
	}
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStop); err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "" {
		t.Errorf("a late hold.stop = %+v, %v; want idle with no outcome", r, err)
	}
	if n := d.Count("dictation.typed", ""); n != 1 {
		t.Errorf("%d dictation.typed events, want 1", n)
	}
	if n := d.Count("hold.max_reached", ""); n != 1 {
		t.Errorf("%d hold.max_reached events, want 1", n)
	}
	if got := bytes.Count([]byte(d.Stdout.String()), []byte(text)); got != 1 {
		t.Errorf("typed %d times, want once", got)
	}
}
