package testwait

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	mu    sync.Mutex
	fatal []string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}

// TestBounded: each wait returns what came, and fails naming what it
// waited for when nothing comes within the bound or the channel closes.
func TestBounded(t *testing.T) {
	hang = 50 * time.Millisecond
	defer func() { hang = Hang }()
	f := &fatalTB{TB: t}

	ch := make(chan int, 1)
	ch <- 7
	if v := Recv(f, ch, "seven"); v != 7 || len(f.fatal) != 0 {
		t.Fatalf("Recv = %d, failures %q; want 7 and none", v, f.fatal)
	}
	Recv(f, ch, "the next start")
	close(ch)
	Recv(f, ch, "a closed one")
	var wg sync.WaitGroup
	wg.Add(1)
	Group(f, &wg, "the readers")
	wg.Done()
	Group(f, &wg, "the readers again")
	Closed(f, make(chan struct{}), "the end")
	<-Context(t).Done() // ends after the bound

	want := []string{
		"waiting for the next start: nothing within 50ms",
		"waiting for a closed one: the channel was closed",
		"waiting for the readers: not within 50ms",
		"waiting for the end: not within 50ms",
	}
	if strings.Join(f.fatal, "\n") != strings.Join(want, "\n") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(f.fatal, "\n"), strings.Join(want, "\n"))
	}
}
