package main

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestListen: what the daemon sends arrives a line each, in order, and
// the listener ends at READY=1 (a STATUS= before it does not end it);
// with no READY=1 it gives up at its timeout with an error.
func TestListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- listen(path, time.Minute, w); w.Close() }()
	lines := bufio.NewScanner(r)
	if !lines.Scan() || lines.Text() != "listening" {
		t.Fatalf("first line %q, want listening", lines.Text())
	}
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []string{"STATUS=starting the children", "STATUS=ready\nREADY=1\n"} {
		if _, err := c.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	if err := <-done; err != nil {
		t.Fatalf("listen after READY=1: %v", err)
	}
	if want := "STATUS=starting the children|STATUS=ready|READY=1"; strings.Join(got, "|") != want {
		t.Errorf("lines %q, want %q", got, want)
	}

	err = listen(filepath.Join(t.TempDir(), "notify"), 50*time.Millisecond, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no READY=1 within 50ms") {
		t.Errorf("listen with nothing sent = %v, want no READY=1 within 50ms", err)
	}
}
