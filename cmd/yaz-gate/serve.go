package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/yazses/yazses/cmd/yaz-gate/internal/budget"
	"github.com/yazses/yazses/lib/gate"
)

// server answers gate requests on one connection. Logs carry ops, results
// and counts only, never a token.
type server struct {
	b      *budget.Budget
	log    *slog.Logger
	counts struct {
		reserved, refused, committed, released, tokenErrors, badRequests int
	}
}

// serve answers requests on conn until EOF (yazsesd went away) or ctx is
// done (SIGTERM); both are a clean end.
//
// Replies are answered in order and written in batches: a reply is
// buffered while another whole request line is already buffered to be
// read, and the buffer is written out before any read that may wait. So a
// burst of pipelined requests costs one read and one write, and no reply
// is ever held back while the gate waits for input.
func (s *server) serve(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	lines := gate.NewLineReader(conn)
	w := bufio.NewWriterSize(conn, replyBuffer)
	for {
		line, err := lines.ReadLine()
		var reply gate.Reply
		switch {
		case errors.Is(err, gate.ErrLineTooLong):
			s.counts.badRequests++
			s.log.Debug("request", "op", "invalid", "result", gate.ReasonBadRequest)
			reply = gate.Reply{Reason: gate.ReasonBadRequest}
		case err != nil:
			return s.end(ctx, "read request", err)
		case len(bytes.TrimSpace(line)) == 0:
			continue
		default:
			reply = s.handle(line)
		}
		out, err := json.Marshal(reply)
		if err != nil {
			return fmt.Errorf("encode reply: %w", err)
		}
		w.Write(out) // an error sticks in w: WriteByte returns it too
		err = w.WriteByte('\n')
		if err == nil && !lines.HasLine() {
			err = w.Flush()
		}
		if err != nil {
			return s.end(ctx, "write reply", err)
		}
	}
}

// replyBuffer is the size of a reply batch; a fuller batch is written at
// once.
const replyBuffer = 16 << 10

// end turns the error that stopped the loop into the run's result: EOF,
// a peer gone and a signal are clean ends.
func (s *server) end(ctx context.Context, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		s.log.Info("signal: stopping")
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		s.log.Info("yazsesd closed the gate socket")
		return nil
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}

// handle answers one request line.
func (s *server) handle(line []byte) gate.Reply {
	req, err := gate.ParseRequest(line)
	if err != nil {
		s.counts.badRequests++
		s.log.Debug("request", "op", "invalid", "result", gate.ReasonBadRequest)
		return gate.Reply{Reason: gate.ReasonBadRequest}
	}
	var r gate.Reply
	switch req.Op {
	case gate.OpReserve:
		tok, ok, retry := s.b.Reserve()
		switch {
		case ok:
			s.counts.reserved++
			r = gate.Reply{OK: true, Token: string(tok)}
		case s.b.PerHour() == 0:
			s.counts.refused++
			r = gate.Reply{Reason: gate.ReasonDisabled}
		default:
			s.counts.refused++
			r = gate.Reply{Reason: gate.ReasonBudgetExhausted, RetryAfterS: max(1, gate.Seconds(retry))}
		}
	case gate.OpCommit:
		r = s.tokenOp(s.b.Commit(budget.Token(req.Token)), &s.counts.committed)
	case gate.OpRelease:
		r = s.tokenOp(s.b.Release(budget.Token(req.Token)), &s.counts.released)
	case gate.OpLimit:
		s.b.SetPerHour(*req.PerHour)
		s.log.Info("cap changed", "per_hour", *req.PerHour)
		r = gate.Reply{OK: true}
	case gate.OpStatus:
		perHour, used, next := s.b.Status()
		r = gate.Reply{OK: true, Status: &gate.Status{PerHour: perHour, Used: used, NextFreeS: gate.Seconds(next)}}
	}
	r.ID = req.ID
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		_, used, _ := s.b.Status()
		result := "ok"
		if !r.OK {
			result = string(r.Reason)
		}
		s.log.Debug("request", "op", req.Op, "result", result, "used", used, "per_hour", s.b.PerHour())
	}
	return r
}

// tokenOp answers a commit or release: every token error is unknown_token
// on the wire (nothing changed); the log says which.
func (s *server) tokenOp(err error, count *int) gate.Reply {
	if err == nil {
		*count++
		return gate.Reply{OK: true}
	}
	s.counts.tokenErrors++
	kind := "unknown"
	switch {
	case errors.Is(err, budget.ErrCommitted):
		kind = "already_committed"
	case errors.Is(err, budget.ErrReleased):
		kind = "already_released"
	case errors.Is(err, budget.ErrExpired):
		kind = "lease_expired"
	}
	s.log.Debug("token refused", "kind", kind)
	return gate.Reply{Reason: gate.ReasonUnknownToken}
}
