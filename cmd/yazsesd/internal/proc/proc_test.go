package proc

import (
	"log/slog"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A child end's Down channel is closed while the child is down for good
// (exited 125, crash loop, stopped) and replaced by an open one when it
// starts again; Changed is closed at every change.
func TestProcessDown(t *testing.T) {
	var e Process
	e.Init(supervise.Spec{Name: "decode"}, slog.New(slog.DiscardHandler))
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	down, changed := e.Down(), e.Changed()
	e.set(supervise.Status{State: supervise.StateStarting})
	if closed(down) || !closed(changed) {
		t.Errorf("starting: down closed %v, changed closed %v; want false, true", closed(down), closed(changed))
	}
	e.set(supervise.Status{State: supervise.StateExited, Cause: "model_missing"})
	if !closed(down) {
		t.Error("down open after exit 125")
	}
	e.set(supervise.Status{State: supervise.StateStarting})
	if closed(e.Down()) {
		t.Error("down still closed after a new start")
	}
	e.set(supervise.Status{State: supervise.StateCrashLoop})
	if !closed(e.Down()) {
		t.Error("down open in a crash loop")
	}
	e.set(supervise.Status{State: supervise.StateStarting})
	down = e.Down()
	e.set(supervise.Status{State: supervise.StateStopped})
	if !closed(down) {
		t.Error("down open once stopped (a waiter for the decoder's work would wait for a start that never comes)")
	}
}

// A group's Wait waits for every goroutine started with Go, those started
// while it waits included (a decode that begins as the daemon stops).
func TestGroupWaitsForLateGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group
		first, late := make(chan struct{}), make(chan struct{})
		g.Go(func() { <-first })
		waited := make(chan struct{})
		go func() { g.Wait(); close(waited) }()
		synctest.Wait()
		g.Go(func() { <-late })
		close(first)
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned while a goroutine started during the wait runs")
		default:
		}
		close(late)
		synctest.Wait()
		select {
		case <-waited:
		default:
			t.Fatal("Wait did not return once every goroutine ended")
		}
	})
}

// A level's channel is closed while the condition holds, and a waiter
// that took it while the condition did not hold is woken by the next
// change to on, not by one to off.
func TestLevel(t *testing.T) {
	var l Level
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	off := l.C()
	if closed(off) {
		t.Fatal("closed before the condition held")
	}
	l.Set(false)
	if closed(off) {
		t.Fatal("closed by a change to off")
	}
	l.Set(true)
	if !closed(off) || !closed(l.C()) {
		t.Fatal("not closed once the condition holds")
	}
	l.Set(false)
	if closed(l.C()) {
		t.Fatal("closed after the condition ended")
	}
}
