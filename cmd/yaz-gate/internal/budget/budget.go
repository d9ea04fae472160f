// Package budget is YazSes's interruption budget: at most N attempts to speak
// to the person per sliding hour.
//
// Only yaz-gate can import this package (docs/design.md, invariant 2: one budget
// for the daemon's lifetime, in the one gate): it is internal to
// cmd/yaz-gate, so the compiler refuses any other importer, and test/deps
// checks that no other budget package exists.
//
// # State machine
//
// Every attempt goes through a token:
//
//	Reserve ──► reserved ──Commit──► committed   (audible: charged)
//	                │
//	                ├──Release──► released        (proven pre-output failure: refunded)
//	                │
//	                └──lease passes──► expired    (neither: charged, conservatively)
//
// Reserve is the atomic check-and-reserve: a reserved slot counts as used
// from that instant, so concurrent callers can never overdraw the budget.
// Release is valid only for a reserved token within its lease. Commit is
// valid for a reserved or expired token. Every other transition (an unknown,
// doubled, released-then-committed or committed-then-released token) returns
// an error and changes nothing.
//
// # What a slot costs
//
// A slot is taken from Reserve until one hour after the later of its reserve
// and commit times, so a question that waited before it was spoken is not
// undercharged: a committed slot is free again at commit time + 1 h. A slot
// that is never committed nor released is charged as if it had been spoken
// at the end of its lease: free at reserve time + lease + 1 h. At that
// instant exactly the slot is free.
//
// # Time
//
// The budget reads its clock (time.Now by default) and only ever measures
// durations between readings with [time.Time.Sub]. Readings from time.Now
// carry a monotonic clock reading, and Sub between two such readings uses
// the monotonic clock alone, so setting the system clock (by hand, NTP, a
// time zone change) neither frees nor extends a slot. A clock without
// monotonic readings that steps backwards is clamped: the budget's time never
// runs backwards, so a backwards step only keeps slots taken longer, never
// shorter. Linux's monotonic clock stops while the machine is suspended;
// slots then stay taken for up to one hour of awake time, which errs on the
// side of not interrupting.
//
// The budget lives in memory only: a new Budget is fresh. A crashed gate is
// restarted with [NewSpent] (fail closed); a daemon restart resets it, a
// documented limit.
package budget

import (
	"crypto/rand"
	"errors"
	"sync"
	"time"
)

// Window is the length of the sliding window.
const Window = time.Hour

// DefaultLease is how long a reservation may stay neither committed nor
// released before it counts as spent.
const DefaultLease = 10 * time.Minute

// releasedMemory bounds how many released tokens the budget remembers to
// tell a doubled release from an unknown token. Forgotten tokens are
// reported as unknown; either way nothing changes.
const releasedMemory = 1024

// Token names one reservation. It is random (128 bits from crypto/rand) and
// cannot be guessed.
type Token string

// Errors of Commit and Release. None of them changes the budget.
var (
	ErrUnknownToken = errors.New("unknown token")
	ErrCommitted    = errors.New("token already committed")
	ErrReleased     = errors.New("token already released")
	ErrExpired      = errors.New("token lease expired")
)

type state int

const (
	reserved state = iota
	committed
)

// slot is one used place in the window. Slots without a token are the
// placeholders of NewSpent.
type slot struct {
	token      Token
	state      state
	reservedAt time.Duration // budget time of Reserve
	end        time.Duration // budget time at which the slot is free
}

// Budget holds the slots of one sliding hour. Its methods are safe for
// concurrent use.
type Budget struct {
	mu       sync.Mutex
	perHour  int
	lease    time.Duration
	now      func() time.Time
	origin   time.Time
	last     time.Duration // latest budget time seen; never decreases
	slots    map[*slot]struct{}
	tokens   map[Token]*slot
	released map[Token]struct{}
	relOrder []Token // FIFO of released, oldest first
	// spentUntil is the budget time before which no slot is free at all
	// (NewSpent): a raised cap adds no fresh slot before it.
	spentUntil time.Duration
}

// Option configures a Budget.
type Option func(*Budget)

// WithClock sets the clock (default time.Now). Tests pass a fake one.
func WithClock(now func() time.Time) Option {
	return func(b *Budget) { b.now = now }
}

// WithLease sets how long a reservation may stay open (default
// DefaultLease). A lease of zero or less keeps the default.
func WithLease(d time.Duration) Option {
	return func(b *Budget) {
		if d > 0 {
			b.lease = d
		}
	}
}

// New returns a budget of perHour attempts per sliding hour, all free.
// perHour 0 (or less) refuses every attempt.
func New(perHour int, opts ...Option) *Budget {
	if perHour < 0 {
		perHour = 0
	}
	b := &Budget{
		perHour:  perHour,
		lease:    DefaultLease,
		now:      time.Now,
		slots:    make(map[*slot]struct{}),
		tokens:   make(map[Token]*slot),
		released: make(map[Token]struct{}),
	}
	for _, o := range opts {
		o(b)
	}
	b.origin = b.now()
	return b
}

// NewSpent returns a budget whose whole window is spent for the next hour,
// as if perHour attempts had been spoken just now: the state a crashed gate
// restarts in, so a crash never grants fresh slots.
func NewSpent(perHour int, opts ...Option) *Budget {
	b := New(perHour, opts...)
	b.spentUntil = Window
	for range b.perHour {
		b.slots[&slot{state: committed, end: Window}] = struct{}{}
	}
	return b
}

// SetPerHour changes the cap (a configuration reload). What was spent stays
// spent: slots already taken keep their end, so a lower cap refuses until
// enough of them are free, and a higher cap on a budget made by NewSpent
// adds no slot before that hour is over.
func (b *Budget) SetPerHour(perHour int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if perHour < 0 {
		perHour = 0
	}
	t := b.clock()
	if t < b.spentUntil {
		for i := len(b.slots); i < perHour; i++ {
			b.slots[&slot{state: committed, end: b.spentUntil}] = struct{}{}
		}
	}
	b.perHour = perHour
}

// PerHour returns the number of attempts per sliding hour.
func (b *Budget) PerHour() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.perHour
}

// clock returns the budget time (time since New), never decreasing, and
// frees every slot whose end has come. Call with b.mu held.
func (b *Budget) clock() time.Duration {
	t := b.now().Sub(b.origin)
	if t < b.last {
		t = b.last
	}
	b.last = t
	for s := range b.slots {
		if s.end <= t {
			delete(b.slots, s)
			if s.token != "" {
				delete(b.tokens, s.token)
			}
		}
	}
	return t
}

// nextFree returns how long until a slot is free: 0 if one is free now.
// Call with b.mu held, after clock.
func (b *Budget) nextFree(t time.Duration) time.Duration {
	if b.perHour == 0 || len(b.slots) < b.perHour {
		return 0
	}
	var first time.Duration = -1
	for s := range b.slots {
		if first < 0 || s.end < first {
			first = s.end
		}
	}
	return first - t
}

// Reserve takes a slot if one is free. It returns the slot's token and true,
// or false and how long until a slot frees (0 when perHour is 0: never).
// A reserved slot counts as used at once.
func (b *Budget) Reserve() (tok Token, ok bool, retryAfter time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.clock()
	if b.perHour == 0 {
		return "", false, 0
	}
	if len(b.slots) >= b.perHour {
		return "", false, b.nextFree(t)
	}
	tok = newToken()
	s := &slot{token: tok, state: reserved, reservedAt: t, end: t + b.lease + Window}
	b.slots[s] = struct{}{}
	b.tokens[tok] = s
	return tok, true, 0
}

// Commit marks a reserved attempt as audible: its slot stays taken until one
// hour after now. Committing a token whose lease has passed is allowed and
// charges from now as well (never less than the lease charge). Unknown,
// doubled or released tokens return an error and change nothing.
func (b *Budget) Commit(tok Token) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.clock()
	s, err := b.lookup(tok)
	if err != nil {
		return err
	}
	if s.state == committed {
		return ErrCommitted
	}
	// t >= reservedAt, so this is one hour after the later of the two.
	// After the lease, t+Window is also later than the lease charge.
	s.state = committed
	s.end = t + Window
	return nil
}

// Release frees the slot of a reserved, uncommitted token within its lease:
// the attempt failed before any output. Unknown, doubled, committed or
// expired tokens return an error and change nothing.
func (b *Budget) Release(tok Token) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.clock()
	s, err := b.lookup(tok)
	if err != nil {
		return err
	}
	if s.state == committed {
		return ErrCommitted
	}
	if t >= s.reservedAt+b.lease {
		return ErrExpired
	}
	delete(b.slots, s)
	delete(b.tokens, tok)
	b.released[tok] = struct{}{}
	b.relOrder = append(b.relOrder, tok)
	if len(b.relOrder) > releasedMemory {
		delete(b.released, b.relOrder[0])
		b.relOrder = append(b.relOrder[:0], b.relOrder[1:]...)
	}
	return nil
}

// lookup finds the live slot of tok. Call with b.mu held.
func (b *Budget) lookup(tok Token) (*slot, error) {
	if s, ok := b.tokens[tok]; ok && tok != "" {
		return s, nil
	}
	if _, ok := b.released[tok]; ok {
		return nil, ErrReleased
	}
	return nil, ErrUnknownToken
}

// Status reports the attempts per hour, the slots used now (reserved,
// committed or expired) and how long until a slot frees (0 if one is free,
// or if perHour is 0).
func (b *Budget) Status() (perHour, used int, nextFree time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.clock()
	return b.perHour, len(b.slots), b.nextFree(t)
}

// newToken returns 128 random bits as text (crypto/rand never fails).
func newToken() Token { return Token(rand.Text()) }
