package testwait

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestBufferWakesWaiter(t *testing.T) {
	var b Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for _, s := range []string{"one\n", "two\n", "three\n"} {
			b.Write([]byte(s))
		}
	}()
	if err := Until(ctx, func() bool { return strings.Contains(b.String(), "three") }, &b); err != nil {
		t.Fatalf("Until: %v; buffer %q", err, b.String())
	}
}

// A condition that never holds ends with the context, after checking once
// per change.
func TestUntilEndsWithContext(t *testing.T) {
	var s Signal
	ctx, cancel := context.WithCancel(context.Background())
	checks := 0
	go func() { s.Notify(); cancel() }()
	if err := Until(ctx, func() bool { checks++; return false }, &s); err != context.Canceled {
		t.Fatalf("Until = %v, want context.Canceled", err)
	}
	if checks < 1 || checks > 2 {
		t.Fatalf("cond checked %d times for at most one change", checks)
	}
}

func TestFileSeesAnotherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typed.txt")
	w, err := WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		f.WriteString("hello")
		f.Close()
	}()
	read := func() bool { b, _ := os.ReadFile(path); return string(b) == "hello" }
	if err := Until(ctx, read, w); err != nil {
		t.Fatalf("Until: %v", err)
	}
}

// Exited closes when a process ends, and not before.
func TestExited(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, err := Exited(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("closed while the process runs")
	default:
	}
	cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not closed 10 s after the process was killed")
	}
	cmd.Wait()
	gone, err := Exited(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	<-gone
}

// A wait that nothing ends runs out at its deadline, not before and not
// later: an hour on synctest's clock, checked once (nothing changed).
func TestUntilDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Signal
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		checks := 0
		if err := Until(ctx, func() bool { checks++; return false }, &s); err != context.DeadlineExceeded {
			t.Fatalf("Until = %v, want context.DeadlineExceeded", err)
		}
		if el := time.Since(start); el != time.Hour {
			t.Errorf("Until returned after %v of the fake clock, want 1h", el)
		}
		if checks != 1 {
			t.Errorf("cond checked %d times with no change, want 1", checks)
		}
	})
}
