package testwait

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Hang is how long a test waits for something that is sure to come before
// it fails, saying what it waited for. It is a guard against a test that
// never ends, not a speed requirement: a 2-core machine busy with other
// work, under -race, is many times slower than an idle one, and a test
// must pass there too.
const Hang = 2 * time.Minute

// hang is Hang, shortened by this package's own tests.
var hang = Hang

// Context is a context that ends after Hang (or when t ends), for the
// requests of a test that must not hang but may be slow.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

// Recv returns the next value from ch; after Hang, or when ch is closed,
// it fails t saying what it waited for.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(hang)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("waiting for %s: the channel was closed", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("waiting for %s: nothing within %v", what, hang)
	}
	var zero T
	return zero
}

// Closed waits until ch is closed (or yields a value); after Hang it
// fails t saying what it waited for.
func Closed[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	timer := time.NewTimer(hang)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("waiting for %s: not within %v", what, hang)
	}
}

// Group waits for wg; after Hang it fails t saying what it waited for
// (the goroutines it waited on are left running: the test has failed).
func Group(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Closed(t, done, what)
}
