package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/desk"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/untrusted"
)

// openWait bounds the wait for the typing child's readiness when the
// route is opened (at start, and after a reload changed it).
const openWait = 30 * time.Second

// typing is the daemon's typing child (yaz-type --serve, children.type),
// supervised from the daemon's start until after its run has ended.
type typing struct {
	t      *child.Typer
	log    *slog.Logger
	once   sync.Once
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newTyping makes the end of the typing child; start starts it.
func newTyping(cfg config.Config, level string, log *slog.Logger, notify func(kind string)) (*typing, error) {
	argv, err := config.ResolveCommand(cfg.Children.Type, config.SelfDir())
	if err != nil {
		return nil, fmt.Errorf("children.type: %w", err)
	}
	env := []string{"YAZ_LOG_FORMAT=json", "YAZ_LOG_LEVEL=" + level}
	if p := audit.Path(); p != "" {
		env = append(env, "YAZ_STATE_DIR="+filepath.Dir(p)) // the portal's restore token
	}
	return &typing{t: child.NewTyper(supervise.Spec{Name: "type", Argv: argv, Env: env}, notify, log), log: log}, nil
}

// start starts the supervision: not bound to ctx's end, stop ends it
// (after the daemon's run, whose last holds it types).
func (ty *typing) start(ctx context.Context) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ty.cancel = cancel
	ty.wg.Go(func() {
		if err := ty.t.Run(sctx); err != nil {
			ty.log.Error("child left down", "child", "type", "err", err)
		}
	})
}

// stop ends the typing child: EOF on its stdin, then the supervisor's
// stop.
func (ty *typing) stop() {
	ty.once.Do(func() {}) // none starts after this
	if ty.cancel == nil {
		return
	}
	ty.t.Close()
	ty.cancel()
	ty.wg.Wait()
}

// open configures the child for a route and waits for it: the daemon's
// Injector, or why nothing can type. "stdout" is the daemon's own.
func (ty *typing) open(ctx context.Context, name string, pasteOverChars int, stdout io.Writer) (desk.Injector, error) {
	if name == "stdout" {
		return stdoutInjector{stdout}, nil
	}
	ty.t.Configure(name, pasteOverChars)
	ty.once.Do(func() { ty.start(ctx) })
	ctx, cancel := context.WithTimeout(ctx, openWait)
	defer cancel()
	r, err := ty.t.Open(ctx)
	if err != nil {
		return nil, err
	}
	if len(r.Backends) == 0 {
		// Kept: the child opens its route again at each text (a portal
		// not up yet at login), and says so in status.
		return childInjector{ty.t}, errors.New(r.Error)
	}
	return childInjector{ty.t}, nil
}

// childInjector is the typing child as the daemon's Injector, which
// explains its route to status.
type childInjector struct{ t *child.Typer }

func (c childInjector) Type(ctx context.Context, text string) (string, error) {
	return c.t.Type(ctx, text)
}

func (c childInjector) Backends() []string { return c.t.Backends() }

// Preedits and Preedit: the route's preedit, for live text's guesses
// (dictation.Preediter).
func (c childInjector) Preedits() bool { return c.t.Preedits() }
func (c childInjector) Preedit(ctx context.Context, text string) error {
	return c.t.Preedit(ctx, text)
}

// Explain fills in the route now (the backends, or why there are none),
// why it was chosen, and the portal's session and consent.
func (c childInjector) Explain(ts *daemonapi.TypingStatus) {
	st := c.t.RouteStatus(context.Background())
	ts.Backends, ts.Error = append([]string{}, st.Backends...), st.Error
	ts.Route, ts.Why, ts.Session, ts.Consent, ts.Cause = st.Route, st.Why, st.Session, st.Consent, st.Cause
}

// stdoutInjector is dictation.inject = "stdout": the text and a newline
// on the daemon's stdout.
type stdoutInjector struct{ w io.Writer }

func (s stdoutInjector) Backends() []string { return []string{"stdout"} }

func (s stdoutInjector) Type(ctx context.Context, text string) (string, error) {
	t := untrusted.Typed(text).Text()
	if strings.TrimSpace(t) == "" {
		return "stdout", nil
	}
	if err := ctx.Err(); err != nil {
		return "stdout", fmt.Errorf("stdout: %w", err)
	}
	if _, err := io.WriteString(s.w, t+"\n"); err != nil {
		return "stdout", fmt.Errorf("stdout: write: %w", err)
	}
	return "stdout", nil
}
