package audit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// TestTallyBoundsAFlood: 30,000 refusals through Tally
// write TallyBurst lines and, at Close, one line with the rest's count,
// and the events written with Write around them stay in the log; a log of
// 16 KiB with one rotated file keeps them all. Summed, the lines account
// for every refusal.
func TestTallyBoundsAFlood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, 16<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(Event{Kind: "daemon.started"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(Event{Kind: "ask.spoken", PeerPID: 7}); err != nil {
		t.Fatal(err)
	}
	const flood = 30000
	for i := range flood {
		if err := l.Tally(Event{Kind: "ask.refused", Reason: "budget_exhausted", PeerPID: 7}); err != nil {
			t.Fatalf("tally %d: %v", i, err)
		}
	}
	if err := l.Tally(Event{Kind: "ask.deferred", Reason: "holding"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	refused, lines := 0, 0
	for _, e := range evs {
		kinds[e.Kind]++
		if e.Kind == "ask.refused" {
			lines++
			refused += max(1, e.Count)
		}
	}
	if kinds["daemon.started"] != 1 || kinds["ask.spoken"] != 1 || kinds["ask.deferred"] != 1 {
		t.Errorf("audit kinds after the flood %v, want daemon.started, ask.spoken and ask.deferred once each", kinds)
	}
	if refused != flood || lines != TallyBurst+1 {
		t.Errorf("%d ask.refused lines accounting for %d refusals, want %d lines for %d", lines, refused, TallyBurst+1, flood)
	}
	fi, _ := os.Stat(path)
	t.Logf("audit after %d refusals: %d bytes, %d lines", flood, fi.Size(), len(evs))
}

// TestTallyWindowEnds: the count of a window is written when the window
// ends (not only at Close), and the next window writes its first events
// one by one again.
func TestTallyWindowEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, DefaultMaxBytes, DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	watch, err := testwait.WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	l.mu.Lock()
	l.tallyWindow = 50 * time.Millisecond
	l.mu.Unlock()
	for range 10 {
		if err := l.Tally(Event{Kind: "peer.rejected", PeerUID: 1001}); err != nil {
			t.Fatal(err)
		}
	}
	// The count line comes when the window ends: wait for the file to
	// hold it (each write of the log is a change of the file).
	var evs []Event
	windowEnded := func() bool {
		evs, err = Read(path, 0)
		return err == nil && len(evs) >= TallyBurst+1
	}
	if testwait.Until(testwait.Context(t), windowEnded, watch) != nil {
		t.Fatalf("after a 50 ms window: %d lines (%v), want %d (the burst and the count)", len(evs), err, TallyBurst+1)
	}
	last := evs[len(evs)-1]
	if last.Kind != "peer.rejected" || last.Count != 10-TallyBurst || last.DurationMs <= 0 || last.PeerUID != 0 {
		t.Errorf("the window's count line = %+v, want peer.rejected count %d with its duration and no peer", last, 10-TallyBurst)
	}
	if err := l.Tally(Event{Kind: "peer.rejected", PeerUID: 1001}); err != nil {
		t.Fatal(err)
	}
	if evs, _ = Read(path, 0); len(evs) != TallyBurst+2 || evs[len(evs)-1].Count != 0 {
		t.Errorf("after the window: %d lines, last %+v; want the next event written by itself", len(evs), evs[len(evs)-1])
	}
}
