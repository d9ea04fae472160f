package budget

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a settable clock. Its readings carry no monotonic reading,
// like a wall clock: that is what lets tests step it backwards.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func mustReserve(t *testing.T, b *Budget) Token {
	t.Helper()
	tok, ok, retry := b.Reserve()
	if !ok {
		_, used, _ := b.Status()
		t.Fatalf("Reserve() refused (retry after %v, used %d), want a slot", retry, used)
	}
	return tok
}

func mustRefuse(t *testing.T, b *Budget) time.Duration {
	t.Helper()
	tok, ok, retry := b.Reserve()
	if ok {
		t.Fatalf("Reserve() = %q, true; want refused", tok)
	}
	return retry
}

func wantUsed(t *testing.T, b *Budget, want int) {
	t.Helper()
	if _, used, _ := b.Status(); used != want {
		t.Fatalf("Status() used = %d, want %d", used, want)
	}
}

func TestConcurrentReserve(t *testing.T) {
	for _, perHour := range []int{0, 1, 7, 99, 100} {
		t.Run("", func(t *testing.T) {
			b := New(perHour)
			const n = 100
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				tokens = map[Token]bool{}
				start  = make(chan struct{})
			)
			for range n {
				wg.Go(func() {
					<-start
					tok, ok, _ := b.Reserve()
					if ok {
						mu.Lock()
						tokens[tok] = true
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			if len(tokens) != perHour {
				t.Errorf("%d goroutines against perHour %d: %d distinct tokens, want %d", n, perHour, len(tokens), perHour)
			}
			wantUsed(t, b, perHour)
			mustRefuse(t, b)
		})
	}
}

// TestConcurrentMixed races reserves, commits and releases: the budget is
// never overdrawn and every refund is real.
func TestConcurrentMixed(t *testing.T) {
	const perHour = 5
	b := New(perHour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxUsed := 0
	for i := range 100 {
		wg.Go(func() {
			tok, ok, _ := b.Reserve()
			if !ok {
				return
			}
			if _, used, _ := b.Status(); used > perHour {
				mu.Lock()
				maxUsed = max(maxUsed, used)
				mu.Unlock()
			}
			if i%2 == 0 {
				if err := b.Release(tok); err != nil {
					t.Errorf("Release(fresh token) = %v", err)
				}
			}
		})
	}
	wg.Wait()
	if maxUsed > perHour {
		t.Errorf("used reached %d, want at most %d", maxUsed, perHour)
	}
	// Every goroutine that kept its token holds a slot; the budget is full
	// unless fewer than perHour kept one.
	if _, used, _ := b.Status(); used > perHour {
		t.Errorf("used = %d after the race, want <= %d", used, perHour)
	}
}

func TestSlidingHour(t *testing.T) {
	tests := []struct {
		name        string
		commitAfter time.Duration // delay between Reserve and Commit
	}{
		{"commit at once", 0},
		{"slow question", 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := New(1) // time.Now is the bubble's fake clock
				tok := mustReserve(t, b)
				time.Sleep(tt.commitAfter)
				if err := b.Commit(tok); err != nil {
					t.Fatalf("Commit() = %v", err)
				}
				// The hour counts from the commit, the later of the two.
				time.Sleep(59*time.Minute + 59*time.Second)
				if retry := mustRefuse(t, b); retry != time.Second {
					t.Errorf("at +59m59s: retry after %v, want 1s", retry)
				}
				if _, used, next := b.Status(); used != 1 || next != time.Second {
					t.Errorf("at +59m59s: Status() used %d next %v, want 1, 1s", used, next)
				}
				time.Sleep(2 * time.Second)
				if _, used, next := b.Status(); used != 0 || next != 0 {
					t.Errorf("at +60m01s: Status() used %d next %v, want 0, 0", used, next)
				}
				mustReserve(t, b)
			})
		})
	}
}

// TestSlidingWindowOrder: slots free one by one, each an hour after its own
// commit, and retryAfter names the earliest.
func TestSlidingWindowOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(3)
		for range 3 {
			if err := b.Commit(mustReserve(t, b)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Minute)
		}
		// Now +30m: slots free at +60m, +70m, +80m.
		if retry := mustRefuse(t, b); retry != 30*time.Minute {
			t.Errorf("retry after %v, want 30m", retry)
		}
		time.Sleep(30 * time.Minute)
		mustReserve(t, b)
		if retry := mustRefuse(t, b); retry != 10*time.Minute {
			t.Errorf("retry after %v, want 10m", retry)
		}
	})
}

func TestReleaseRefunds(t *testing.T) {
	b := New(1)
	tok := mustReserve(t, b)
	wantUsed(t, b, 1)
	mustRefuse(t, b)
	if err := b.Release(tok); err != nil {
		t.Fatalf("Release(reserved) = %v, want nil", err)
	}
	wantUsed(t, b, 0)
	mustReserve(t, b)
}

func TestCommitThenReleaseDoesNotRefund(t *testing.T) {
	b := New(1)
	tok := mustReserve(t, b)
	if err := b.Commit(tok); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(tok); !errors.Is(err, ErrCommitted) {
		t.Fatalf("Release(committed) = %v, want %v", err, ErrCommitted)
	}
	wantUsed(t, b, 1)
	mustRefuse(t, b)
}

// TestTokenErrors: every invalid transition returns its error and leaves
// the budget exactly as it was.
func TestTokenErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(b *Budget, tok Token) // run on a fresh reserved token
		op    func(b *Budget, tok Token) error
		want  error
	}{
		{"unknown commit", nil, func(b *Budget, _ Token) error { return b.Commit("AAAAAAAAAAAAAAAAAAAAAAAAAA") }, ErrUnknownToken},
		{"unknown release", nil, func(b *Budget, _ Token) error { return b.Release("AAAAAAAAAAAAAAAAAAAAAAAAAA") }, ErrUnknownToken},
		{"empty commit", nil, func(b *Budget, _ Token) error { return b.Commit("") }, ErrUnknownToken},
		{"empty release", nil, func(b *Budget, _ Token) error { return b.Release("") }, ErrUnknownToken},
		{"double commit", func(b *Budget, tok Token) { b.Commit(tok) }, (*Budget).Commit, ErrCommitted},
		{"commit then release", func(b *Budget, tok Token) { b.Commit(tok) }, (*Budget).Release, ErrCommitted},
		{"double release", func(b *Budget, tok Token) { b.Release(tok) }, (*Budget).Release, ErrReleased},
		{"release then commit", func(b *Budget, tok Token) { b.Release(tok) }, (*Budget).Commit, ErrReleased},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			b := New(2, WithClock(clk.Now))
			tok := mustReserve(t, b)
			if tt.setup != nil {
				tt.setup(b, tok)
			}
			clk.Advance(time.Minute)
			_, usedBefore, nextBefore := b.Status()
			if err := tt.op(b, tok); !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			if _, used, next := b.Status(); used != usedBefore || next != nextBefore {
				t.Errorf("Status() after the error = used %d next %v, want %d %v (unchanged)", used, next, usedBefore, nextBefore)
			}
		})
	}
}

func TestNewSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewSpent(2)
		if retry := mustRefuse(t, b); retry != time.Hour {
			t.Errorf("retry after %v, want 1h", retry)
		}
		if perHour, used, next := b.Status(); perHour != 2 || used != 2 || next != time.Hour {
			t.Errorf("Status() = %d, %d, %v; want 2, 2, 1h", perHour, used, next)
		}
		time.Sleep(time.Hour - time.Second)
		mustRefuse(t, b)
		time.Sleep(time.Second)
		mustReserve(t, b)
		mustReserve(t, b)
		mustRefuse(t, b)
	})
}

func TestDisabled(t *testing.T) {
	for _, perHour := range []int{0, -3} {
		for _, mk := range []func(int, ...Option) *Budget{New, NewSpent} {
			b := mk(perHour)
			if retry := mustRefuse(t, b); retry != 0 {
				t.Errorf("perHour %d: retry after %v, want 0", perHour, retry)
			}
			if p, used, next := b.Status(); p != 0 || used != 0 || next != 0 {
				t.Errorf("perHour %d: Status() = %d, %d, %v; want 0, 0, 0", perHour, p, used, next)
			}
		}
	}
}

func TestLeaseExpiryCountsAsSpent(t *testing.T) {
	const lease = 10 * time.Minute
	t.Run("release in time", func(t *testing.T) {
		clk := newFakeClock()
		b := New(1, WithClock(clk.Now), WithLease(lease))
		tok := mustReserve(t, b)
		clk.Advance(lease - time.Second)
		if err := b.Release(tok); err != nil {
			t.Fatalf("Release within the lease = %v", err)
		}
		mustReserve(t, b)
	})
	t.Run("never resolved", func(t *testing.T) {
		clk := newFakeClock()
		b := New(1, WithClock(clk.Now), WithLease(lease))
		tok := mustReserve(t, b)
		clk.Advance(lease)
		if err := b.Release(tok); !errors.Is(err, ErrExpired) {
			t.Fatalf("Release after the lease = %v, want %v", err, ErrExpired)
		}
		wantUsed(t, b, 1)
		// Charged as if spoken at the end of the lease.
		clk.Advance(time.Hour - time.Second)
		if retry := mustRefuse(t, b); retry != time.Second {
			t.Errorf("retry after %v, want 1s", retry)
		}
		clk.Advance(time.Second)
		mustReserve(t, b)
	})
	t.Run("late commit charges from the commit", func(t *testing.T) {
		clk := newFakeClock()
		b := New(1, WithClock(clk.Now), WithLease(lease))
		tok := mustReserve(t, b)
		clk.Advance(20 * time.Minute)
		if err := b.Commit(tok); err != nil {
			t.Fatalf("Commit after the lease = %v, want nil", err)
		}
		clk.Advance(time.Hour - time.Second)
		mustRefuse(t, b)
		clk.Advance(time.Second)
		mustReserve(t, b)
	})
}

// TestClockJumpBackwards: a clock that steps back (a wall clock without a
// monotonic reading, corrected by NTP or by hand) frees nothing and breaks
// nothing; time.Now's monotonic readings keep this from happening at all in
// the gate.
func TestClockJumpBackwards(t *testing.T) {
	clk := newFakeClock()
	b := New(1, WithClock(clk.Now))
	tok := mustReserve(t, b)
	if err := b.Commit(tok); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Minute)
	if retry := mustRefuse(t, b); retry != 30*time.Minute {
		t.Fatalf("before the jump: retry after %v, want 30m", retry)
	}
	clk.Advance(-5 * time.Hour)
	if retry := mustRefuse(t, b); retry != 30*time.Minute {
		t.Errorf("after a backwards jump: retry after %v, want 30m (unchanged)", retry)
	}
	if err := b.Release(tok); !errors.Is(err, ErrCommitted) {
		t.Errorf("Release after a backwards jump = %v, want %v", err, ErrCommitted)
	}
	// Back to where it was, and on: the slot frees at its own time.
	clk.Advance(5*time.Hour + 30*time.Minute - time.Second)
	mustRefuse(t, b)
	clk.Advance(time.Second)
	mustReserve(t, b)
}

// TestMonotonicClock: with the default clock the budget measures with the
// monotonic reading of time.Now; a fresh commit is charged a full hour from
// the real now, whatever the wall clock says.
func TestMonotonicClock(t *testing.T) {
	if s := time.Now().String(); !containsMono(s) {
		t.Fatalf("time.Now() = %s: no monotonic reading", s)
	}
	b := New(1)
	if err := b.Commit(mustReserve(t, b)); err != nil {
		t.Fatal(err)
	}
	if _, used, next := b.Status(); used != 1 || next < time.Hour-time.Second || next > time.Hour {
		t.Errorf("Status() = used %d next %v; want 1, about 1h", used, next)
	}
}

func containsMono(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "m=+" {
			return true
		}
	}
	return false
}

func TestTokensAreRandom(t *testing.T) {
	b := New(1000)
	seen := map[Token]bool{}
	for range 1000 {
		tok := mustReserve(t, b)
		if len(tok) < 26 {
			t.Fatalf("token %q: %d characters, want >= 26 (128 bits)", tok, len(tok))
		}
		if seen[tok] {
			t.Fatalf("token %q handed out twice", tok)
		}
		seen[tok] = true
	}
}

// TestForgottenRelease: released tokens beyond the remembered ones are
// unknown, and still change nothing.
func TestForgottenRelease(t *testing.T) {
	b := New(1)
	first := mustReserve(t, b)
	if err := b.Release(first); err != nil {
		t.Fatal(err)
	}
	for range releasedMemory {
		if err := b.Release(mustReserve(t, b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(first); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("Commit(long-released) = %v, want %v", err, ErrUnknownToken)
	}
	wantUsed(t, b, 0)
	if len(b.released) != releasedMemory || len(b.relOrder) != releasedMemory {
		t.Errorf("remembers %d/%d released tokens, want %d", len(b.released), len(b.relOrder), releasedMemory)
	}
}
