// Package daemon is yazsesd's wiring: it makes the children's ends and
// the packages that hold the policy, connects them, and serves the
// JSON-RPC socket API of lib/daemonapi (hold.*, ask_human, status,
// budget.status, last, audit, transcribe, watch) on yazsesd.sock, and
// hold.* and status alone on control.sock beside it, on a server of their
// own (rpc.RegisterControl), so that no number of clients on the main
// socket keeps a press or a release out. The method table is package rpc's;
// rpc.go here is the daemon's side of it: the methods as rpc.Daemon, and
// the status method.
//
// Where each job is:
//
//   - child: the ends of yaz-decode serve (Decoder), yaz-speak --serve
//     (Speaker) and yaz-gate (Gate); mic: those of yaz-capture (Mic) and,
//     when [vad] selects Silero, yaz-decode vad-stream (VAD): each owns
//     its supervised process (a proc.Process), makes its pipes afresh on
//     every start and shows its state as channels. turn: the decoder's
//     priority queue.
//   - rpc: the socket API's method table, each method's parameters
//     checked, and the peer of a connection.
//   - hold: one push-to-talk hold, one goroutine from the key to its text;
//     dictation: its settings, the refusal while the decoder is down for
//     good, and what its end comes to (typed or kept, audited, notified).
//     hold.go here: the hold.* methods, the person's side of the state,
//     and waiting for the holds' goroutines at shutdown (waitWork).
//   - question: one ask_human call, its slot in the budget settled once;
//     asking: the method on the children and the daemon's state (its
//     entry, audit lines, turn, the wait for a hold), budget.status and a
//     reload's new cap. ask.go here: the daemon as a question sees it,
//     the question being asked under the lock a hold's start takes.
//   - transcribe: the transcribe method's files, in pieces at file
//     priority, one decoding and four waiting.
//   - detect: the voice detector's uses (the Silero child's, else the
//     energy detector's); health: READY, the health line, a child left
//     down for a cause; marker: the single-instance lock and the crash
//     marker; versions: the children's --version; livestate: the watch
//     stream; desk: the person's desktop (the injector, the hotkey's
//     listener, and their status).
//   - ends.go: the child ends as the interfaces of hold and transcribe.
//
// Budget. A gate restarted after a crash is started with --spent: it
// refuses every question for the rest of the hour (fail closed), which
// status reports as budget.fail_closed. So is the first gate of a daemon
// whose predecessor ended without a clean stop in this boot (package
// marker), so that a crash of the daemon itself never hands out a fresh
// budget; a daemon that cannot write its marker speaks no question until
// it can. One daemon runs per user: the lock is in the state folder too,
// whatever the runtime folder.
//
// Goroutines. A hold's goroutine outlives the call that opened it (it
// types the text after the key is up): Run waits for every one, up to
// workWait and then the typing's own stop, while the sockets still answer
// and the children still run, before it stops the children and closes
// the audit log; everything else it starts ends with Run's context.
//
// Privacy. No log line, audit event or error carries question, answer or
// transcript text; logs name kinds, reasons, counts and durations only.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/asking"
	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/desk"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/dictation"
	"github.com/yazses/yazses/cmd/yazsesd/internal/health"
	"github.com/yazses/yazses/cmd/yazsesd/internal/livestate"
	"github.com/yazses/yazses/cmd/yazsesd/internal/marker"
	"github.com/yazses/yazses/cmd/yazsesd/internal/mic"
	"github.com/yazses/yazses/cmd/yazsesd/internal/rpc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/transcribe"
	"github.com/yazses/yazses/cmd/yazsesd/internal/versions"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/filedecode"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/safesocket"
)

// Options configure a Daemon.
type Options struct {
	Config     config.Config
	ConfigPath string // for reloads; "" disables SIGHUP reloads
	Log        *slog.Logger
	Version    string
	// RuntimeDir is the socket folder; "" is daemonapi.SocketDir().
	RuntimeDir string
	// AuditPath is the audit log; "" is audit.Path().
	AuditPath string
	// SelfDir is where sibling binaries are looked for first; "" is the
	// folder of the running executable.
	SelfDir string
	// ChildLogLevel is passed to the children as YAZ_LOG_LEVEL.
	ChildLogLevel string
	// Service is the service manager the daemon reports to (systemd's
	// sd_notify); nil: none.
	Service Service
	// Desktop is the person's desktop: notifications, typing, the evdev
	// hotkey; nil: none of them (every transcript is kept for `last`).
	Desktop desk.Desktop
	// Typing is the typing child (yaz-type --serve) when the caller runs
	// one: listed in status and the health line with the others; nil:
	// none.
	Typing TypingChild
}

// TypingChild is the supervised typing child as status sees it.
type TypingChild interface {
	Status() supervise.Status
	OnState(func(supervise.Status))
	OnStart(func(pid, restart int))
	// Program is its executable, for its version.
	Program() string
}

// Service is what the daemon tells the service manager.
type Service interface {
	// Ready is called once, with the health line, when the socket
	// listens and every child started at boot is up or has failed its
	// first start (READY=1 and STATUS=).
	Ready(status string)
	// Health is called with the health line whenever it changes:
	// "ready", or each child that is down or restarting and why, and a
	// refused reload (STATUS=).
	Health(status string)
	// Reloading is called before a reload (SIGHUP), Reloaded after it
	// with the settings in force.
	Reloading()
	Reloaded(config.Config)
}

// Daemon is one running yazsesd.
type Daemon struct {
	opt   Options
	log   *slog.Logger
	start time.Time

	cfgMu sync.Mutex
	cfg   config.Config
	// refused says why the last reload was refused ("config: reload
	// refused at line N: …"), for status and the systemd status line,
	// until a reload succeeds; "" after a good one.
	refused string

	audit *audit.Log
	// marker is the crash marker in the state folder (package marker);
	// set by Run. Until it is written no question is spoken.
	marker *marker.Marker
	// refusalNotes limits the notifications of refused holds (hold.go).
	refusalNotes dictation.NoteLimit

	// The child ends (package child): each owns its supervised process.
	gate   *child.Gate
	speak  *child.Speaker
	decode *child.Decoder
	mic    *mic.Mic
	// vad is the Silero detector child; nil when [vad] chose the energy
	// detector at start.
	vad *mic.VAD
	// detect begins the uses of the voice detector: on vad while it is up
	// and free, else on the energy detector.
	detect *detect.Source

	// desk is the person's desktop: the injector, the hotkey.
	desk *desk.Desk

	health   *health.Health
	versions *versions.Set

	state stateT            // hold and ask state, see hold.go
	asker *asking.Asker     // ask_human calls
	files *transcribe.Files // transcribe calls
	live  *livestate.State  // what `watch` streams (status bars); the count of questions waiting for a hold

	// life ends when the daemon stops (Run's shutdown): the holds, the
	// questions' and the holds' energy detectors end with it.
	life    context.Context
	endLife context.CancelFunc
	// work counts the holds' goroutines, which outlive the call that
	// opened them and type their text after the key is up. Run waits for
	// them (up to workWait) before it closes the audit log.
	work sync.WaitGroup
	// typeCtx bounds the typing of a hold's text: not the daemon's life
	// (a text being typed when the daemon is told to stop is typed whole),
	// but ended by waitWork past workWait, so that no hold's goroutine
	// outlives Run.
	typeCtx    context.Context
	stopTyping context.CancelFunc
}

// New prepares a daemon; Run starts it.
func New(opt Options) (*Daemon, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.SelfDir == "" {
		opt.SelfDir = config.SelfDir()
	}
	if opt.ChildLogLevel == "" {
		opt.ChildLogLevel = "info"
	}
	d := &Daemon{opt: opt, log: opt.Log, cfg: opt.Config, start: time.Now(),
		live: livestate.New(livestate.Options{Preview: opt.Config.Dictation.Preview})}
	d.life, d.endLife = context.WithCancel(context.Background())
	d.typeCtx, d.stopTyping = context.WithCancel(context.Background())
	cfg := opt.Config

	resolve := func(name string, argv []string) ([]string, error) {
		r, err := config.ResolveCommand(argv, opt.SelfDir)
		if err != nil {
			return nil, fmt.Errorf("children.%s: %w", name, err)
		}
		return r, nil
	}
	gateArgv, err := resolve("gate", cfg.Children.Gate)
	if err != nil {
		return nil, err
	}
	speakArgv, err := resolve("speak", cfg.Children.Speak)
	if err != nil {
		return nil, err
	}
	decodeArgv, err := resolve("decode", cfg.Children.Decode)
	if err != nil {
		return nil, err
	}
	captureArgv, err := resolve("capture", cfg.Children.Capture)
	if err != nil {
		return nil, err
	}
	env := []string{"YAZ_LOG_FORMAT=json", "YAZ_LOG_LEVEL=" + opt.ChildLogLevel}

	d.gate = child.NewGate(supervise.Spec{Name: "gate", Argv: gateArgv, Env: env}, cfg.Budget.AskHumanPerHour, d.log)
	d.gate.OnStart(d.childStarted("gate"))
	// The budget in the watch stream is read from the gate again at each
	// change of the gate's state and each start (after the end's own start
	// hook has its client): available from the gate's first start on, not
	// from the first reload or question.
	d.gate.OnState(func(supervise.Status) { d.live.RefreshBudget() })
	d.gate.OnStart(func(int, int) { d.live.RefreshBudget() })

	speakArgv = append(slices.Clone(speakArgv), "--voice", cfg.Speak.Voice, "--rate", strconv.Itoa(cfg.Speak.Rate))
	if cfg.Speak.Device != "" {
		speakArgv = append(speakArgv, "--device="+cfg.Speak.Device) // one word: a device never reads as a flag
	}
	d.speak = child.NewSpeaker(supervise.Spec{Name: "speak", Argv: speakArgv, Env: env}, d.log)
	d.speak.OnStart(d.childStarted("speak"))

	// The decoder's flags are lib/filedecode's, which yaz-mcp's own
	// decoder runs with too: a file gives the same text on either.
	decArgv := append(slices.Clone(decodeArgv), filedecode.Flags(cfg.Decode, cfg.VAD)...)
	// decode.prompt is private (a vocabulary of names, say): the end
	// sends it with each utterance, never on the command line.
	d.decode = child.NewDecoder(supervise.Spec{
		Name:         "decode",
		Argv:         decArgv,
		Env:          env,
		ReadyTimeout: 60 * time.Second, // a large model loads slowly
	}, cfg.Decode.Prompt, d.log)
	d.decode.OnStart(d.childStarted("decode"))
	d.files = transcribe.New(fileDecoder{d}, d.log)

	capArgv := slices.Clone(captureArgv)
	if cfg.Capture.Backend != "" && cfg.Capture.Backend != "auto" {
		capArgv = append(capArgv, "--backend", cfg.Capture.Backend)
	}
	if cfg.Capture.Device != "" {
		capArgv = append(capArgv, "--device", cfg.Capture.Device)
	}
	always := cfg.Capture.Mode == config.CaptureAlways
	d.mic = mic.NewMic(supervise.Spec{Name: "capture", Argv: capArgv, Env: env}, always, pcm.Samples(time.Duration(cfg.Capture.PreRollMs)*time.Millisecond), d.log)
	d.mic.OnStart(d.childStarted("capture"))

	boot := []string{"gate", "speak", "decode"}
	if always {
		boot = append(boot, "capture")
	}
	order := []string{"gate", "speak", "decode", "capture"}
	binaries := map[string]string{"gate": gateArgv[0], "speak": speakArgv[0],
		"decode": decodeArgv[0], "capture": captureArgv[0]}
	if detect.UseChild(cfg.VAD) {
		vadArgv, err := resolve("vad", cfg.Children.VAD)
		if err != nil {
			return nil, err
		}
		vadArgv = append(slices.Clone(vadArgv), "--vad", config.VADSilero, "--vad-model", cfg.VAD.Model)
		d.vad = mic.NewVAD(supervise.Spec{Name: "vad", Argv: vadArgv, Env: env}, d.log)
		d.vad.OnStart(d.childStarted("vad"))
		boot = append(boot, "vad")
		order = append(order, "vad")
		binaries["vad"] = vadArgv[0]
	}
	var vadChild detect.Child // nil, not a nil *mic.VAD: energy only
	if d.vad != nil {
		vadChild = d.vad
	}
	d.detect = detect.New(vadChild, d.log)
	d.asker = asking.New(asking.Deps{Daemon: askSide{d}, Gate: d.gate, Speaker: d.speak, Mic: d.mic,
		Detect: d.detect, Decoder: d.decode, Live: d.live, Life: d.life, Log: d.log})
	if t := opt.Typing; t != nil {
		order = append(order, "type")
		binaries["type"] = t.Program()
	}
	d.health = health.New(report{d}, d.log, order, boot...)
	d.health.Watch("gate", d.gate)
	d.health.Watch("speak", d.speak)
	d.health.Watch("decode", d.decode)
	d.health.Watch("capture", d.mic)
	if d.vad != nil {
		d.health.Watch("vad", d.vad)
	}
	if t := opt.Typing; t != nil {
		d.health.Watch("type", t)
		t.OnStart(d.childStarted("type"))
	}
	d.versions = versions.New(binaries)
	d.desk = desk.New(opt.Desktop, cfg.Hotkey, report{d}, d.log)
	return d, nil
}

// childStarted audits restarts of a child.
func (d *Daemon) childStarted(name string) func(pid, restart int) {
	return func(pid, restart int) {
		if restart > 0 {
			d.auditf(audit.Event{Kind: "child.restarted", Child: name, Count: restart})
			if name == "gate" {
				d.log.Warn("gate restarted fully spent: no question until the hour has passed")
				d.auditf(audit.Event{Kind: "gate.fail_closed", Child: name})
			}
		}
	}
}

// config returns the current configuration.
func (d *Daemon) config() config.Config {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	return d.cfg
}

// auditf writes an audit event; failures are logged, never fatal.
func (d *Daemon) auditf(e audit.Event) { _ = d.auditErr(e) }

// auditErr writes an audit event and returns the failure (logged too):
// what must not happen unaudited (an ask_human) checks it.
func (d *Daemon) auditErr(e audit.Event) error {
	if d.audit == nil {
		return errors.New("audit log not open")
	}
	err := d.audit.Write(e)
	if err != nil {
		d.log.Warn("audit write failed", "kind", e.Kind, "err", err)
	}
	return err
}

// auditFailing reports whether the audit log's last write failed.
func (d *Daemon) auditFailing() bool { return d.audit == nil || d.audit.Failing() }

// Run runs the daemon until ctx is done, then stops every child and
// returns. hup delivers reload requests (SIGHUP).
func (d *Daemon) Run(ctx context.Context, hup <-chan os.Signal) error {
	dir, stateDir, err := d.folders()
	if err != nil {
		return err
	}
	// One daemon per user, whatever its runtime folder: the lock is in
	// the state folder, with the crash marker (package marker).
	lock, err := marker.Lock(stateDir, safesocket.SocketPath(dir))
	if err != nil {
		return err
	}
	defer lock.Close()
	ln, err := safesocket.Listen(dir)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	// The control socket (hold.* and status), under the same lock; closed
	// first, so the lock is let go last.
	cln, err := ln.Beside(safesocket.ControlName)
	if err != nil {
		return fmt.Errorf("listen: control socket: %w", err)
	}
	defer cln.Close()
	cfg := d.config()
	al, err := audit.Open(d.opt.AuditPath, cfg.Audit.MaxBytes, cfg.Audit.Keep)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	d.audit = al
	defer al.Close()
	d.openMarker(dir, stateDir)
	ln.OnReject, cln.OnReject = d.rejected, d.rejected

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The children outlive the serving: a hold past its recording when
	// the daemon is told to stop is decoded and typed by them (waitWork)
	// before they are stopped.
	cctx, stopChildren := context.WithCancel(context.WithoutCancel(ctx))
	defer stopChildren()
	var wg sync.WaitGroup
	d.startAll(ctx, cctx, &wg)
	d.auditf(audit.Event{Kind: "daemon.started"})
	d.log.Info("listening", "socket", safesocket.SocketPath(dir), "control", safesocket.ControlPath(dir), "ask_human", cfg.MCP.AskHuman,
		"per_hour", cfg.Budget.AskHumanPerHour, "capture_mode", cfg.Capture.Mode)
	if d.opt.Service != nil {
		wg.Go(func() { d.health.AwaitSettled(ctx, d.opt.Service.Ready) })
	}
	runErr := d.serve(ctx, cancel, ln, cln, hup)
	stopChildren()
	d.stopTyping()
	d.gate.Close()
	d.speak.Close()
	d.decode.Close()
	wg.Wait()
	d.auditf(audit.Event{Kind: "daemon.stopped"})
	if runErr == nil {
		// A clean stop: the next daemon starts a fresh budget. Not
		// deferred, so that a panic leaves the marker in place.
		if err := d.marker.Stopped(); err != nil {
			d.log.Warn("the crash marker could not be removed: the next start will count as after a crash", "err", err)
		}
	}
	return runErr
}

// folders are the socket folder (Options.RuntimeDir, else
// daemonapi.SocketDir) and the state folder (the audit log's, which
// Options.AuditPath then names).
func (d *Daemon) folders() (dir, stateDir string, err error) {
	dir = d.opt.RuntimeDir
	if dir == "" {
		if dir, err = daemonapi.SocketDir(); err != nil {
			return "", "", fmt.Errorf("socket folder: %w", err)
		}
	}
	if d.opt.AuditPath == "" {
		d.opt.AuditPath = audit.Path()
	}
	if d.opt.AuditPath == "" {
		return "", "", errors.New("no state folder: neither XDG_STATE_HOME nor HOME is set")
	}
	return dir, filepath.Dir(d.opt.AuditPath), nil
}

// openMarker reads and writes the crash marker (package marker): after
// an unclean end of the previous daemon in this boot the gate starts
// fully spent; while this one's cannot be written, no question is
// spoken. A daemon from before the marker moved to the state folder kept
// it in the runtime folder dir: read too, and removed once ours is
// written.
func (d *Daemon) openMarker(dir, stateDir string) {
	d.marker = marker.New(stateDir, filepath.Join(dir, marker.Name), writeMarker)
	unclean := d.marker.Unclean()
	if err := d.marker.Write(); err != nil {
		d.log.Error("the crash marker could not be written: no question is spoken until it can be (each ask_human tries again); dictation goes on", "err", err)
		d.auditf(audit.Event{Kind: "marker.failing"})
	} else if err := d.marker.LegacyErr(); err != nil {
		d.log.Warn("the crash marker of an older yazsesd could not be removed: the next start counts as after a crash", "err", err)
	}
	if unclean {
		d.gate.StartSpent(daemonapi.FailClosedDaemon)
		d.log.Warn("the previous yazsesd did not stop cleanly: the interruption budget starts spent for the hour (fail closed)")
		d.auditf(audit.Event{Kind: "budget.fail_closed", Reason: daemonapi.FailClosedDaemon})
	}
}

// rejected reports a connection from another user (either socket): a
// WARN line, and an audit event counted past a few.
func (d *Daemon) rejected(uid, pid int) {
	d.log.Warn("refused a connection from another user", "peer_uid", uid, "peer_pid", pid)
	if d.audit.Tally(audit.Event{Kind: "peer.rejected", PeerUID: uid, PeerPID: pid}) != nil {
		d.log.Warn("audit write failed", "kind", "peer.rejected")
	}
}

// startAll starts, on goroutines of wg, the children's supervisors
// (ending with cctx), the versions' query, the budget's stream and the
// hotkey (ending with ctx); and opens the injector.
func (d *Daemon) startAll(ctx, cctx context.Context, wg *sync.WaitGroup) {
	supervised := func(c interface{ Run(context.Context) error }, name string) {
		wg.Go(func() {
			if err := c.Run(cctx); err != nil {
				d.log.Error("child left down", "child", name, "err", err)
				d.auditf(audit.Event{Kind: "child.crashloop", Child: name})
			}
		})
	}
	supervised(d.gate, "gate")
	supervised(d.speak, "speak")
	supervised(d.decode, "decode")
	if d.vad != nil {
		supervised(d.vad, "vad")
	}
	supervised(d.mic, "capture") // in always mode now, else from a first listener on
	wg.Go(func() { d.versions.Query(ctx) })
	wg.Go(func() { d.live.RunBudget(ctx, d.asker.Budget) })
	cfg := d.config()
	d.desk.OpenInjector(cfg.Dictation)
	if cfg.Hotkey.Enabled && d.opt.Desktop != nil {
		wg.Go(func() { d.desk.RunHotkey(ctx, d.hotkeyPress(ctx)) })
	}
}

// serve serves both sockets, each on a server of its own, and reloads on
// hup, until ctx ends or a server fails (its error); then it begins the
// stop (no new hold or question, the holds and questions told), waits for
// the holds (waitWork: a hold.stop in flight gets its answer) and returns
// once both servers have.
func (d *Daemon) serve(ctx context.Context, cancel context.CancelFunc, ln, cln net.Listener, hup <-chan os.Signal) error {
	srv := jsonrpc.NewServer(d.log.With("part", "socket"))
	srv.ConnContext = rpc.WithPeer
	srv.AnswerOnStop = true // a hold.stop in flight at the stop gets its answer
	rpc.Register(srv, methods{d})
	// The control socket's own server: its connections, slots and
	// goroutines are its own, so no number of clients on the main socket
	// keeps a press or a release out. No streams there.
	ctl := jsonrpc.NewServer(d.log.With("part", "control"))
	ctl.ConnContext = rpc.WithPeer
	ctl.MaxStreams = 0
	ctl.AnswerOnStop = true
	rpc.RegisterControl(ctl, methods{d})

	// The servers outlive ctx until the holds have ended (waitWork), so
	// that a hold.stop in flight when the stop came gets its answer.
	sctx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(sctx, ln) }()
	go func() { serveErr <- ctl.Serve(sctx, cln) }()
	serving := 2
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-serveErr:
			serving--
			if err != nil {
				runErr = fmt.Errorf("serve: %w", err)
			}
			break loop
		case <-hup:
			d.reload(ctx)
		}
	}
	d.log.Info("stopping")
	d.state.shutdown()
	d.live.Close()
	d.endLife()
	d.waitWork()
	stopServing()
	cancel()
	for ; serving > 0; serving-- {
		<-serveErr // each Serve returns once ctx is cancelled
	}
	return runErr
}

// reload reads the configuration file again (SIGHUP). A file with any
// error is refused as a whole and the old settings stay.
func (d *Daemon) reload(ctx context.Context) {
	if d.opt.ConfigPath == "" {
		return
	}
	if d.opt.Service != nil {
		d.opt.Service.Reloading()
	}
	nc, err := config.Load(d.opt.ConfigPath)
	if err != nil {
		if d.opt.Service != nil {
			d.opt.Service.Reloaded(d.config())
		}
		d.log.Error("reload refused: the old settings stay", "err", err)
		d.auditf(audit.Event{Kind: "config.rejected"})
		d.setRefused(health.ReloadRefused(err))
		return
	}
	d.setRefused("")
	d.cfgMu.Lock()
	old := d.cfg
	applied := nc
	// Restart-only settings keep their running values.
	applied.Decode, applied.Speak, applied.Capture = old.Decode, old.Speak, old.Capture
	applied.Hotkey, applied.Children = old.Hotkey, old.Children
	applied.Dictation.Prompt = old.Dictation.Prompt
	d.cfg = applied
	d.cfgMu.Unlock()
	d.live.SetPreviewEnabled(applied.Dictation.Preview)
	d.live.RefreshBudget()
	if keys := config.NeedsRestart(old, nc); len(keys) > 0 {
		d.log.Warn("reload: these settings need a restart of yazsesd", "keys", keys)
	}
	d.asker.Reloaded(ctx, old, nc) // the gate's new cap; the questions not yet asked
	if applied.Dictation.Inject != old.Dictation.Inject || applied.Dictation.PasteOverChars != old.Dictation.PasteOverChars {
		d.desk.OpenInjector(applied.Dictation)
	}
	if d.opt.Service != nil {
		d.opt.Service.Reloaded(applied)
	}
	d.log.Info("configuration reloaded", "ask_human", nc.MCP.AskHuman, "per_hour", nc.Budget.AskHumanPerHour)
	d.auditf(audit.Event{Kind: "config.reloaded"})
}

// hotkeyPress is what the push-to-talk key does: a press opens a hold,
// a release releases it.
func (d *Daemon) hotkeyPress(ctx context.Context) func(down bool) {
	return func(start bool) {
		if start {
			if _, err := d.holdOpen(ctx, d.opt.Config.Hotkey.Mode == config.HotkeyToggle); err != nil {
				d.log.Warn("hotkey: hold.start failed", "err", err)
			}
			return
		}
		// The release is taken before the next key event is read
		// (a press right after it opens a new hold); the hold's own
		// goroutine decodes and types after the key is up, and Run
		// waits for it before it closes the audit.
		d.holdRelease()
	}
}

// setRefused sets why the last reload was refused ("" after a good one)
// and tells the service manager the health line with it.
func (d *Daemon) setRefused(why string) {
	d.cfgMu.Lock()
	changed := d.refused != why
	d.refused = why
	d.cfgMu.Unlock()
	if changed && d.opt.Service != nil {
		d.opt.Service.Health(d.healthLine(d.health.Summary()))
	}
}

// report is what packages health and desk tell the daemon
// (health.Reporter, desk.Reporter).
type report struct{ d *Daemon }

func (r report) Audit(e audit.Event) { r.d.auditf(e) }
func (r report) Notify(kind string)  { r.d.notify(kind) }
func (r report) Line(line string) {
	if r.d.opt.Service != nil {
		r.d.opt.Service.Health(r.d.healthLine(line))
	}
}

// healthLine is the children's health line with a refused reload after
// it: "ready" while every child is up and the file was taken.
func (d *Daemon) healthLine(children string) string {
	d.cfgMu.Lock()
	refused := d.refused
	d.cfgMu.Unlock()
	switch {
	case refused == "":
		return children
	case children == "ready":
		return refused
	}
	return children + "; " + refused
}

// injector is the injector a hold types with; nil when there is none.
func (d *Daemon) injector() desk.Injector { return d.desk.Injector() }

// The stop's budget. A daemon told to stop drops a hold that still
// records, but lets a hold past its recording (released, in its tail,
// being decoded) finish: its decoding has holdStopWait from the stop
// (holdDecodeCtx; then it is lost, cause "shutdown"), its typing the rest
// of workWait (then typeCtx tells it to stop, and it has typingStop);
// then the children stop (SIGTERM, a grace of 3 s, SIGKILL). In all at
// most 10 + 1 + 3 s: within the 15 s the service's unit gives the stop
// (TimeoutStopSec in packaging/systemd/yazsesd.service).
const (
	holdStopWait = 8 * time.Second
	workWait     = 10 * time.Second
)

// typingStop bounds the wait for a typing that was told to stop.
const typingStop = time.Second

// waitWork waits (up to workWait) for the holds' goroutines (a hold
// still recording ends with d.life: its audio is dropped, its microphone
// closed; one past its recording is decoded within holdStopWait and
// typed); past it the typing in progress is told to stop (typeCtx), and
// waited for up to typingStop.
func (d *Daemon) waitWork() {
	done := make(chan struct{})
	go func() {
		d.work.Wait()
		close(done)
	}()
	t := time.NewTimer(workWait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	d.log.Warn("stopping with a dictation still being typed: its typing is stopped", "waited_ms", workWait.Milliseconds())
	d.stopTyping()
	t.Reset(typingStop)
	select {
	case <-done:
	case <-t.C:
		d.log.Warn("a typing backend did not stop: yazsesd stops without it")
	}
}

// childStatus reports a supervised child for status.
func (d *Daemon) childStatus(c interface{ Status() supervise.Status }) daemonapi.ChildStatus {
	s := c.Status()
	return health.Child(s, d.versions.Get(s.Name))
}

// writeMarker writes the crash marker's temporary file; nil is
// os.WriteFile. Tests replace it (a full disk).
var writeMarker func(name string, data []byte, perm os.FileMode) error

// errShuttingDown is returned to calls that arrive while the daemon stops.
var errShuttingDown = rpc.ErrShuttingDown
