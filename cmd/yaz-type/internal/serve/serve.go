// Package serve is `yaz-type --serve`, the daemon's typing child
// (lib/typewire): requests one JSON line each on stdin, one answer each on
// stdout, texts typed one at a time and in order, a status answered at
// once, notifications the routes ask for as events of their own.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
	"github.com/yazses/yazses/lib/linebound"
	"github.com/yazses/yazses/lib/typewire"
)

// MaxRequest caps one request line: a text of a million characters
// (dictation.paste_over_chars' largest) escaped as JSON fits.
const MaxRequest = 32 << 20

// queued is how many texts may wait behind the one being typed before
// the reader stops reading.
const queued = 16

// Typer types a text and says with which backend, and shows tentative
// text where its route can (inject.Typer).
type Typer interface {
	Type(ctx context.Context, text string) (used string, err error)
	Preedit(ctx context.Context, text string) (used string, err error)
}

// Server answers the daemon's requests.
type Server struct {
	Typer  Typer
	Status func() typewire.Status
	Log    *slog.Logger

	mu  sync.Mutex // the writer
	enc *json.Encoder
}

// New returns a server writing its events to w.
func New(t Typer, status func() typewire.Status, w io.Writer, log *slog.Logger) *Server {
	return &Server{Typer: t, Status: status, Log: log, enc: json.NewEncoder(w)}
}

// Notify sends a notification kind for the daemon to show.
func (s *Server) Notify(kind string) { _ = s.write(typewire.Event{Notify: kind}) }

func (s *Server) write(ev typewire.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(ev); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	return nil
}

// Serve reads requests from r until EOF (nil: the texts read are typed
// first) or ctx ends (the text being typed is cut off).
func (s *Server) Serve(ctx context.Context, r io.Reader) error {
	texts := make(chan typewire.Request, queued)
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() {
		for req := range texts {
			if req.Op == typewire.OpPreedit {
				used, err := s.Typer.Preedit(ctx, req.Text)
				ev := inject.PreeditOutcome(used, err)
				ev.ID = req.ID
				if err != nil {
					s.Log.Debug("preedit not shown", "cause", ev.Cause, "outcome", ev.Outcome, "err", err)
				}
				if e := s.write(ev); e != nil && werr == nil {
					werr = e
				}
				continue
			}
			chars := utf8.RuneCountInString(req.Text)
			tg := &typewire.Target{Want: req.Window}
			used, err := s.Typer.Type(typewire.WithTarget(ctx, tg), req.Text)
			ev := inject.Outcome(used, err, chars)
			ev.ID, ev.Window = req.ID, tg.Got
			if err != nil {
				// The cause, never the text: backends' errors name
				// requests and tools only.
				s.Log.Info("not typed", "outcome", ev.Outcome, "cause", ev.Cause, "backend", used, "chars", chars, "arrived", ev.Arrived, "err", err)
			}
			if e := s.write(ev); e != nil && werr == nil {
				werr = e
			}
		}
	})
	err := s.read(ctx, r, texts)
	close(texts)
	wg.Wait()
	if err == nil {
		err = werr
	}
	return err
}

func (s *Server) read(ctx context.Context, r io.Reader, texts chan<- typewire.Request) error {
	lr := linebound.NewReader(r, linebound.Options{Max: MaxRequest, Long: linebound.Fail, Last: linebound.KeepLast})
	for {
		line, err := lr.ReadLine()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read request: %w", err)
		}
		var req typewire.Request
		if err := json.Unmarshal(line, &req); err != nil || req.ID == "" {
			s.Log.Warn("request skipped: not a typing request", "bytes", len(line))
			continue
		}
		switch req.Op {
		case typewire.OpStatus:
			st := s.Status()
			if err := s.write(typewire.Event{ID: req.ID, Status: &st}); err != nil {
				return err
			}
		case typewire.OpType, typewire.OpPreedit:
			// In order: a preedit shows after the texts before it.
			select {
			case texts <- req:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			s.Log.Warn("request skipped: unknown op", "op", req.Op)
			if err := s.write(typewire.Event{ID: req.ID, Outcome: typewire.OutcomeFailed, Cause: typewire.CauseError}); err != nil {
				return err
			}
		}
	}
}
