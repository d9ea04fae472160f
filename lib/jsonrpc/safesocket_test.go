package jsonrpc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/safesocket"
)

// TestOverSafesocket runs the server on the real daemon socket: Serve
// works with a safesocket.Listener, and stopping it removes the socket and
// frees the lock.
func TestOverSafesocket(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := safesocket.Dir(base)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- testServer(t, nil).Serve(ctx, ln) }()

	conn, err := safesocket.Dial(testwait.Context(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	var got string
	if err := c.Call(testwait.Context(t), "ping", nil, &got); err != nil || got != "pong" {
		t.Errorf("Call(ping) = %q, %v", got, err)
	}
	c.Close()

	cancel()
	if err := testwait.Recv(t, done, "Serve to return after its cancel"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if _, err := os.Lstat(safesocket.SocketPath(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Serve returned: %v", err)
	}
	ln2, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatalf("Listen after Serve returned = %v, want the lock free", err)
	}
	ln2.Close()
}
