package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestTranscribeCancelStopsDecoder (contract 1): a
// transcribe of a long file whose caller goes away stops the daemon's
// decoder at once, so a hold released meanwhile is typed within its usual
// latency, not after the file's whole decode.
//
// The fake decoder takes 200 ms per second of audio (a 66 s file: 13 s; a
// 3 s hold: 0.6 s) and honours X as yaz-decode does. The usual latency of
// a hold (release to hold.stop's answer, typed on stdout) is measured
// first in the same run; the hold released during the cancelled file must
// take at most four times that, while a decoder that went on with the file
// would make it wait about ten seconds more. The fake decoder's own log
// gives the order: the file abandoned before the hold is decoded, and the
// file never decoded to its end.
func TestTranscribeCancelStopsDecoder(t *testing.T) {
	t.Parallel()
	const text = "typed at once"
	speech := speechWAV(t, 3*time.Second)
	long := speechWAV(t, 66*time.Second)
	cfg := dictationConfig(speech, true).With("dictation.inject", q("stdout"))
	d := startDaemon(t, cfg, "YAZ_FAKE_MS_PER_S=200", "YAZ_FAKE_TEXT="+text)
	c := d.Client()

	hold := func() (daemonapi.HoldResult, time.Duration) {
		d.holdWhileSpeaking(c, wavDuration(t, speech))
		start := time.Now()
		r := d.stopHold(c)
		return r, time.Since(start)
	}
	r, usual := hold()
	if r.Outcome != "typed" || r.Backend != "stdout" {
		t.Fatalf("baseline hold.stop = %+v, want typed on stdout\n%s", r, d.LogTail(20))
	}

	// A transcribe of the long file, cancelled once the decoder is on it.
	tc := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fileDone := make(chan error, 1)
	go func() {
		_, err := tc.Transcribe(ctx, long)
		fileDone <- err
	}()
	d.WaitFor(30*time.Second, "the file's decoding", func() bool { return d.decodes() == 2 })
	tc.Close() // the caller goes away (yaz-mcp closes its connection on cancel)
	if err := <-fileDone; err == nil {
		t.Errorf("the cancelled transcribe returned a result")
	}

	r, during := hold()
	if r.Outcome != "typed" {
		t.Fatalf("hold.stop during the cancelled file = %+v, want typed\n%s", r, d.LogTail(20))
	}
	t.Logf("release → typed: usual %v, after a cancelled 66 s file %v", usual, during)
	if during > 4*usual {
		t.Errorf("the hold released during a cancelled file took %v, its usual latency is %v: the decoder went on with the file", during, usual)
	}
	account := func() []string {
		var seen []string
		for _, m := range d.LogRecords() {
			if m["child"] == "decode" {
				switch msg, _ := m["msg"].(string); msg {
				case "decoding utterance", "decoded utterance", "abandoned utterance":
					seen = append(seen, msg)
				}
			}
		}
		return seen
	}
	// The decoder's stderr reaches the daemon's log a moment after its
	// answer reached the daemon.
	d.WaitFor(10*time.Second, "the decoder's log lines", func() bool { return len(account()) >= 6 })
	seen := account()
	want := []string{"decoding utterance", "decoded utterance", // the baseline hold
		"decoding utterance", "abandoned utterance", // the file
		"decoding utterance", "decoded utterance"} // the hold
	if !slices.Equal(seen, want) {
		t.Errorf("the decoder's account = %q, want %q", seen, want)
	}

	// The decoder is in step: the next transcribe gets its own answer.
	res, err := d.Client().Transcribe(ctx, speech)
	if err != nil || res.Text != text || res.AudioMs < 2900 {
		t.Errorf("transcribe after the cancel = %+v, %v; want %q for 3 s", res, err, text)
	}
}
