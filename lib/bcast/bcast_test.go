package bcast

import (
	"testing"
	"testing/synctest"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestSignal(t *testing.T) {
	var s Signal
	s.Broadcast() // no waiter: nothing to wake, and no panic
	a := s.C()
	if b := s.C(); a != b {
		t.Fatal("two waiters before a change got different channels")
	}
	if closed(a) {
		t.Fatal("channel closed before any Broadcast")
	}
	s.Broadcast()
	if !closed(a) {
		t.Fatal("Broadcast did not close the waiters' channel")
	}
	c := s.C()
	if closed(c) {
		t.Fatal("a channel taken after the Broadcast is already closed: the next change would be missed")
	}
	s.Broadcast()
	s.Broadcast() // twice: no double close
	if !closed(c) {
		t.Fatal("second Broadcast did not wake the second waiter")
	}
}

func TestSignalWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Signal
		woke := make(chan int, 3)
		for i := range 3 {
			c := s.C()
			go func() { <-c; woke <- i }()
		}
		synctest.Wait()
		if len(woke) != 0 {
			t.Fatal("a waiter woke before the Broadcast")
		}
		s.Broadcast()
		synctest.Wait()
		if len(woke) != 3 {
			t.Fatalf("%d of 3 waiters woke", len(woke))
		}
	})
}
