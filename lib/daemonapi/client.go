package daemonapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// ErrNotRunning matches the error of Dial when no daemon answers.
var ErrNotRunning = safesocket.ErrNotRunning

// Client calls the daemon. Its methods are safe for concurrent use.
type Client struct {
	rpc  *jsonrpc.Client
	conn net.Conn
}

// Dial connects to the daemon of this user, in the socket folder under
// RuntimeBase ($XDG_RUNTIME_DIR, else a private /run/user/$UID). An error
// matching ErrNotRunning means no daemon is running there; when no runtime
// folder qualifies it also matches ErrNoRuntimeDir and says what was looked
// for and why it was refused. Dial does not create the runtime folder.
func Dial(ctx context.Context) (*Client, error) {
	dir, err := dialDir()
	if err != nil {
		return nil, err
	}
	return dialName(ctx, dir, safesocket.SocketName)
}

// DialControl connects to the daemon's control socket (control.sock in
// the same folder), which serves only ControlMethods (hold.* and status),
// on a server of its own: a press or a release gets through however many
// clients fill the main socket. When there is no control socket (a daemon
// from before it) it connects to the main socket instead, as Dial. Errors
// as Dial's.
func DialControl(ctx context.Context) (*Client, error) {
	dir, err := dialDir()
	if err != nil {
		return nil, err
	}
	c, err := dialName(ctx, dir, safesocket.ControlName)
	if errors.Is(err, ErrNotRunning) {
		return dialName(ctx, dir, safesocket.SocketName)
	}
	return c, err
}

// dialDir is the socket folder a client dials in; it must exist.
func dialDir() (string, error) {
	base, err := RuntimeBase()
	if err != nil {
		return "", fmt.Errorf("dial yazsesd: %w: %w", ErrNotRunning, err)
	}
	dir := filepath.Join(base, safesocket.DirName)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("dial yazsesd: %w: no folder %s", ErrNotRunning, dir)
	}
	return dir, nil
}

func dialName(ctx context.Context, dir, name string) (*Client, error) {
	conn, err := safesocket.DialName(ctx, dir, name)
	if err != nil {
		return nil, fmt.Errorf("dial yazsesd: %w", err)
	}
	return &Client{rpc: jsonrpc.NewClient(conn), conn: conn}, nil
}

// Close closes the connection. A call in progress is cancelled in the
// daemon (an ask_human not yet audible releases its reservation).
func (c *Client) Close() error { return c.rpc.Close() }

// Call calls any method with raw parameters (for `yazsesd ctl`).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.rpc.Call(ctx, method, params, result)
}

// Status calls status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.rpc.Call(ctx, MethodStatus, nil, &s)
	return s, err
}

// SettleWait bounds how long AskHuman waits, after its context ended, for
// the daemon to say how the cancelled ask ended.
const SettleWait = 5 * time.Second

// AskHuman calls ask_human. When ctx ends first, AskHuman shuts down the
// connection's writing side, which cancels the ask in the daemon (a
// question not yet audible releases its slot), and waits up to SettleWait
// for the daemon's final result: it returns that result with ctx's error,
// so the caller can tell a question cancelled before it was spoken
// (deferred, nothing charged) from one cancelled after (no_answer, heard
// and charged). Use a Client for one ask at a time.
func (c *Client) AskHuman(ctx context.Context, p AskParams) (AskResult, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if uc, ok := c.conn.(interface{ CloseWrite() error }); ok && uc.CloseWrite() == nil {
			time.AfterFunc(SettleWait, cancel) // cancelling twice is harmless
			return
		}
		cancel()
	})
	defer stop()
	var r AskResult
	err := c.rpc.Call(cctx, MethodAskHuman, p, &r)
	if cerr := ctx.Err(); cerr != nil {
		if err != nil {
			return AskResult{}, cerr
		}
		return r, cerr
	}
	return r, err
}

// BudgetStatus calls budget.status.
func (c *Client) BudgetStatus(ctx context.Context) (BudgetStatus, error) {
	var b BudgetStatus
	err := c.rpc.Call(ctx, MethodBudgetStatus, nil, &b)
	return b, err
}

// Hold calls one of the hold methods.
func (c *Client) Hold(ctx context.Context, method string) (HoldResult, error) {
	var h HoldResult
	err := c.rpc.Call(ctx, method, nil, &h)
	return h, err
}

// Last calls last.
func (c *Client) Last(ctx context.Context) (Last, error) {
	var l Last
	err := c.rpc.Call(ctx, MethodLast, nil, &l)
	return l, err
}

// Transcribe calls transcribe.
func (c *Client) Transcribe(ctx context.Context, path string) (TranscribeResult, error) {
	var r TranscribeResult
	err := c.rpc.Call(ctx, MethodTranscribe, TranscribeParams{Path: path}, &r)
	return r, err
}

// ErrNoResult: a transcribe.stream ended without the event that carries
// the result.
var ErrNoResult = errors.New("yazsesd: transcribe ended without a result")

// TranscribeProgress calls transcribe.stream: progress(done, total) is
// called, in order, on the caller's goroutine, for each progress event
// (milliseconds of audio, see TranscribeEvent), and the result is
// returned. A daemon that has no such method (an older one) answers a
// *jsonrpc.Error with code MethodNotFound, and one serving as many
// streams as it takes one with ServerBusy: call Transcribe then. Close
// the Client afterwards.
func (c *Client) TranscribeProgress(ctx context.Context, path string, progress func(doneMs, totalMs int64)) (TranscribeResult, error) {
	var res *TranscribeResult
	err := c.rpc.Stream(ctx, MethodTranscribeStream, TranscribeParams{Path: path}, func(p json.RawMessage) error {
		var ev TranscribeEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			return fmt.Errorf("transcribe.stream: decode event: %w", err)
		}
		if ev.Result != nil {
			res = ev.Result
			return nil
		}
		if progress != nil {
			progress(ev.DoneMs, ev.TotalMs)
		}
		return nil
	})
	switch {
	case err != nil:
		return TranscribeResult{}, err
	case res == nil:
		return TranscribeResult{}, ErrNoResult
	}
	return *res, nil
}

// NewClient returns a Client on a connection already dialled (tests, or a
// socket found elsewhere). The Client owns conn.
func NewClient(conn net.Conn) *Client { return &Client{rpc: jsonrpc.NewClient(conn)} }
