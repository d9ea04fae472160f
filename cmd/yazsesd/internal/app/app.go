// Package app is yazsesd's command line: run, status, ctl and config.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/cmd/yazsesd/internal/daemon"
	"github.com/yazses/yazses/cmd/yazsesd/internal/desk"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hotkey"
	"github.com/yazses/yazses/cmd/yazsesd/internal/notify"
	"github.com/yazses/yazses/cmd/yazsesd/internal/sdnotify"
	"github.com/yazses/yazses/cmd/yazsesd/internal/shortcut"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/safesocket"
)

const name = "yazsesd"

// CLI is yazsesd's command line.
type CLI struct {
	Run    RunCmd    `cmd:"" help:"Run the daemon in the foreground (what the systemd user unit runs)."`
	Status StatusCmd `cmd:"" help:"Show the running daemon's health (what is down and why), model, typing backend, capture device, hotkey, children with their versions, hold state and budget."`
	Ctl    CtlCmd    `cmd:"" help:"Call a socket method: ctl METHOD [JSON], e.g. ctl hold start, ctl ask_human '{\"question\":\"…\"}'; ctl watch [--format waybar|polybar] streams the live state for a status bar."`
	Config ConfigCmd `cmd:"" help:"Configuration: write the default file, print it, or check one."`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// env is what every command gets.
type env struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	version        string
	log            cli.Logging
}

// Main runs yazsesd and returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, version string) int {
	var c CLI
	k, code, done := cli.Parse(name, "YazSes daemon: push-to-talk dictation, ask_human and the one interruption budget.",
		&c, args, stdout, stderr, kong.Vars{"config_path": config.Path()})
	if done {
		return code
	}
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, version: version, log: c.Logging}
	err := k.Run(e)
	code = cli.Report(name, stderr, err)
	if errors.Is(err, safesocket.ErrAlreadyRunning) {
		// Another daemon of this user runs: a restart would find it
		// again, so the unit must not loop (RestartPreventExitStatus).
		return cli.ExitNoRestart
	}
	return code
}

// RunCmd is `yazsesd run`.
type RunCmd struct {
	Config string `short:"c" help:"Configuration file." default:"${config_path}" env:"YAZ_CONFIG" type:"path"`
}

// Run runs the daemon until SIGINT or SIGTERM; SIGHUP reloads the file.
func (r *RunCmd) Run(e *env) error {
	cfg, err := config.Load(r.Config)
	if err != nil {
		return err
	}
	log := e.log.Logger(e.stderr)
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	sd := sdnotify.FromEnv(true) // children do not inherit NOTIFY_SOCKET
	notes := notify.New(notify.Options{Enabled: cfg.Notify.Enabled, PerMinute: cfg.Notify.PerMinute, Log: log})
	defer notes.Wait()
	// The typing child starts when the daemon first opens its route (it
	// has its lock then: a second daemon starts none), and outlives the
	// daemon's run: the texts of holds still finishing are typed before
	// it is told to end.
	typing, err := newTyping(cfg, e.log.LogLevel, log, func(kind string) {
		if m, ok := notify.ByKind(kind); ok {
			notes.Post(ctx, m)
		}
	})
	if err != nil {
		return err
	}
	defer typing.stop()
	d, err := daemon.New(daemon.Options{
		Config:        cfg,
		ConfigPath:    r.Config,
		Log:           log,
		Version:       e.version,
		ChildLogLevel: e.log.LogLevel,
		Service:       service{sd: sd, notes: notes},
		Desktop:       desktop{ctx: ctx, notes: notes, log: log, hotkey: cfg.Hotkey, typing: typing, stdout: e.stdout},
		Typing:        typing.t,
	})
	if err != nil {
		return err
	}
	err = d.Run(ctx, hup)
	_ = sd.Notify(sdnotify.Stopping)
	if errors.Is(err, safesocket.ErrAlreadyRunning) {
		return fmt.Errorf("%w: one daemon per user; stop that one first (systemctl --user stop yazsesd, or end that process), or use it", err)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// service is the daemon's service manager: systemd's sd_notify, and the
// notification settings a reload changes.
type service struct {
	sd    *sdnotify.Notifier
	notes *notify.Notifier
}

func (s service) Ready(status string)  { _ = s.sd.Notify(sdnotify.Ready, sdnotify.Status(status)) }
func (s service) Health(status string) { _ = s.sd.Notify(sdnotify.Status(status)) }
func (s service) Reloading()           { _ = s.sd.Notify(sdnotify.Reloading()) }
func (s service) Reloaded(c config.Config) {
	s.notes.Set(c.Notify.Enabled, c.Notify.PerMinute)
	_ = s.sd.Notify(sdnotify.Ready)
}

// desktop is the daemon's desktop: notifications, typing (the typing
// child, yaz-type), the push-to-talk key (the evdev listener of
// package hotkey, or the GlobalShortcuts portal of package shortcut).
type desktop struct {
	ctx    context.Context // the daemon's run: notifications the portal route asks for
	notes  *notify.Notifier
	log    *slog.Logger
	hotkey config.Hotkey
	typing *typing
	stdout io.Writer // dictation.inject = "stdout"
}

func (d desktop) Notify(ctx context.Context, kind string) {
	if m, ok := notify.ByKind(kind); ok {
		d.notes.Post(ctx, m)
	}
}

func (d desktop) OpenInjector(name string, pasteOverChars int) (desk.Injector, error) {
	return d.typing.open(d.ctx, name, pasteOverChars, d.stdout)
}

func (d desktop) OpenHotkey() (desk.Hotkey, error) {
	if d.hotkey.Source == config.HotkeySourcePortal {
		return portalKeys{shortcut.Options{Environ: os.Environ(), Key: d.hotkey.Key, Mode: d.hotkey.Mode,
			Log: d.log.With("part", "shortcut")}}, nil
	}
	l, err := hotkey.Open(hotkey.Options{Key: d.hotkey.Key, Mode: d.hotkey.Mode,
		Device: d.hotkey.Device, Log: d.log.With("part", "hotkey")})
	if err != nil {
		return nil, err
	}
	return hotkeyKeys{l}, nil
}

// portalKeys is the GlobalShortcuts portal as the daemon's Hotkey.
type portalKeys struct{ o shortcut.Options }

func (k portalKeys) Listen(ctx context.Context, press func(down bool)) error {
	return shortcut.Run(ctx, k.o, press)
}

func (k portalKeys) ListenWaiting(ctx context.Context, press func(down bool), waiting func(what string)) error {
	o := k.o
	o.Waiting = waiting
	return shortcut.Run(ctx, o, press)
}

// hotkeyKeys is the evdev listener as the daemon's Hotkey.
type hotkeyKeys struct{ l *hotkey.Listener }

func (k hotkeyKeys) Listen(ctx context.Context, press func(down bool)) error {
	return k.l.Run(ctx, func(a hotkey.Action) { press(a == hotkey.Start) })
}

// StatusCmd is `yazsesd status`.
type StatusCmd struct {
	Format string `short:"f" help:"text or json (--json, the old spelling, still works)." default:"text" enum:"text,json"`
	JSON   bool   `hidden:"" help:"The old spelling of --format json."`
}

// Run prints the status.
func (s *StatusCmd) Run(e *env) error {
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	c, err := dial(ctx, daemonapi.DialControl)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if s.JSON {
		return printJSON(e.stdout, st)
	}
	printStatus(e.stdout, st)
	return nil
}

// printStatus writes the status as text: the daemon, what it runs with,
// the children, and a line for each child that is down and why.
func printStatus(out io.Writer, st daemonapi.Status) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "yazsesd %s\tpid %d, up %s\n", st.Version, st.PID, time.Duration(st.UptimeS)*time.Second)
	fmt.Fprintf(w, "config\t%s\n", st.Config)
	fmt.Fprintf(w, "health\t%s\n", st.Health)
	if st.AuditFailing {
		fmt.Fprintf(w, "audit\tfailing: the audit log cannot be written (is its disk full?); ask_human is unavailable until it can, dictation goes on\n")
	}
	if st.StateFailing != "" {
		fmt.Fprintf(w, "state\tfailing: %s; ask_human is unavailable until it can be (each question tries again), dictation goes on\n", st.StateFailing)
	}
	fmt.Fprintf(w, "model\t%s (language %s)\n", st.Model, st.Language)
	fmt.Fprintf(w, "device\t%s\n", deviceLine(st.DecodeDevice))
	typing := st.Typing.Inject + " → " + strings.Join(st.Typing.Backends, ", ")
	if len(st.Typing.Backends) == 0 {
		typing = st.Typing.Inject + ": none (" + st.Typing.Error + ")"
	}
	fmt.Fprintf(w, "typing\t%s\n", typing)
	if st.Typing.Why != "" {
		fmt.Fprintf(w, "\t%s: %s\n", st.Typing.Route, st.Typing.Why)
	}
	if st.Typing.Session != "" {
		portal := "session " + st.Typing.Session
		if st.Typing.Cause != "" {
			portal += " (" + st.Typing.Cause + ")"
		}
		fmt.Fprintf(w, "portal\t%s\n", portal)
		if st.Typing.Consent != "" {
			fmt.Fprintf(w, "consent\t%s\n", st.Typing.Consent)
		}
	}
	device := st.CaptureDevice
	if device == "" {
		device = "default device"
	}
	fmt.Fprintf(w, "capture\t%s, %s (backend %s)\n", st.CaptureMode, device, st.CaptureBackend)
	hk := st.Hotkey
	switch {
	case !hk.Enabled:
		fmt.Fprintf(w, "hotkey\toff (compositor bindings run `yazsesd ctl hold …`)\n")
	case hk.Listening && hk.Waiting != "":
		fmt.Fprintf(w, "hotkey\t%s (waiting for %s), %s, from %s\n", hk.Key, hk.Waiting, hk.Mode, keySource(hk.Source))
	case hk.Listening:
		fmt.Fprintf(w, "hotkey\t%s (listening), %s, from %s\n", hk.Key, hk.Mode, keySource(hk.Source))
	default:
		why, _, _ := strings.Cut(hk.Error, "\n")
		fmt.Fprintf(w, "hotkey\t%s (not listening: %s), from %s\n", hk.Key, why, keySource(hk.Source))
	}
	fmt.Fprintf(w, "hold\t%s\n", st.Hold)
	fmt.Fprintf(w, "ask_human\t%s\n", onOff(st.AskHuman))
	b := st.Budget
	switch {
	case !b.Available:
		fmt.Fprintf(w, "budget\tgate unavailable (restarting)\n")
	default:
		fmt.Fprintf(w, "budget\t%d of %d used this hour", b.Used, b.PerHour)
		if b.NextFreeS > 0 {
			fmt.Fprintf(w, ", next free in %s", time.Duration(b.NextFreeS)*time.Second)
		}
		switch {
		case b.FailClosed && b.FailClosedReason == daemonapi.FailClosedDaemon:
			fmt.Fprintf(w, " (fail closed: the previous yazsesd did not stop cleanly)")
		case b.FailClosed:
			fmt.Fprintf(w, " (fail closed: the gate was restarted after a crash)")
		}
		fmt.Fprintln(w)
	}
	if st.Asking || st.Waiting > 0 {
		fmt.Fprintf(w, "questions\tone being asked: %v, waiting: %d\n", st.Asking, st.Waiting)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CHILD\tSTATE\tPID\tRESTARTS\tLAST EXIT\tVERSION")
	for _, ch := range st.Children {
		pid := "-"
		if ch.PID > 0 {
			pid = fmt.Sprint(ch.PID)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", ch.Name, ch.State, pid, ch.Restarts, ch.LastExit, ch.Version)
	}
	w.Flush()
	first := true
	for _, ch := range st.Children {
		if ch.Reason == "" {
			continue
		}
		if first {
			fmt.Fprintln(out)
			first = false
		}
		fmt.Fprintf(out, "%s: %s\n", ch.Name, ch.Reason)
	}
}

// keySource names a key source for status.
func keySource(source string) string {
	if source == config.HotkeySourcePortal {
		return "the desktop's shortcut portal"
	}
	return "evdev"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// CtlCmd is `yazsesd ctl`.
type CtlCmd struct {
	Method []string `arg:"" help:"Method and optional JSON parameters: status, hold start|stop|toggle|cancel, ask_human JSON, budget.status, last, audit [JSON], transcribe JSON; watch streams the live state (below)." predictor:"words:status,hold start,hold stop,hold toggle,hold cancel,ask_human,budget.status,last,audit,transcribe,watch"`
	Format string   `help:"With watch: json (each event as the daemon sends it, the default), waybar (Waybar's custom-module JSON: text, alt, class, tooltip) or polybar (one line of text)." short:"f" placeholder:"FORMAT" predictor:"words:json,waybar,polybar"`
}

// Help is the long help of ctl.
func (CtlCmd) Help() string { return watchHelp }

// Run calls one method and prints its result as JSON; watch streams.
func (c *CtlCmd) Run(e *env) error {
	if len(c.Method) > 0 && c.Method[0] == daemonapi.MethodWatch {
		if len(c.Method) > 1 {
			return cli.Usagef("watch takes no parameters")
		}
		return watch(e, c.Format)
	}
	if c.Format != "" {
		return cli.Usagef("--format is for ctl watch; other methods print JSON")
	}
	method, params, err := parseCtl(c.Method)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// hold.* and status go to the control socket (the main one when an
	// older daemon has none), which no number of other clients can fill.
	how := daemonapi.Dial
	if daemonapi.IsControl(method) {
		how = daemonapi.DialControl
	}
	cl, err := dial(ctx, how)
	if err != nil {
		return err
	}
	defer cl.Close()
	var out json.RawMessage
	if err := cl.Call(ctx, method, params, &out); err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return fmt.Errorf("%s: %s (code %d)", method, rpcErr.Message, rpcErr.Code)
		}
		return fmt.Errorf("%s: %w", method, err)
	}
	return printJSON(e.stdout, out)
}

// parseCtl turns ctl's words into a method and parameters: "hold start" is
// hold.start; a last word that is JSON is the parameters.
func parseCtl(words []string) (method string, params json.RawMessage, err error) {
	if len(words) == 0 {
		return "", nil, cli.Usagef("ctl needs a method: one of %s", strings.Join(daemonapi.Methods, ", "))
	}
	method = words[0]
	rest := words[1:]
	if method == "hold" {
		if len(rest) == 0 {
			return "", nil, cli.Usagef("ctl hold needs start, stop, toggle or cancel")
		}
		method, rest = "hold."+rest[0], rest[1:]
	}
	known := false
	for _, m := range daemonapi.Methods {
		known = known || m == method
	}
	if !known {
		return "", nil, cli.Usagef("unknown method %q: one of %s", method, strings.Join(daemonapi.Methods, ", "))
	}
	switch len(rest) {
	case 0:
	case 1:
		if !json.Valid([]byte(rest[0])) {
			return "", nil, cli.Usagef("parameters of %s must be JSON, e.g. '{\"question\":\"…\"}'", method)
		}
		params = json.RawMessage(rest[0])
	default:
		return "", nil, cli.Usagef("too many arguments for %s: give the parameters as one JSON argument", method)
	}
	return method, params, nil
}

// dial connects with how (daemonapi.Dial or DialControl), saying what to
// do when no daemon runs.
func dial(ctx context.Context, how func(context.Context) (*daemonapi.Client, error)) (*daemonapi.Client, error) {
	c, err := how(ctx)
	if errors.Is(err, daemonapi.ErrNotRunning) {
		const msg = "yazsesd is not running (start it with `yazsesd run` or `systemctl --user start yazsesd`)"
		var rerr *daemonapi.RuntimeDirError
		if errors.As(err, &rerr) {
			return nil, fmt.Errorf("%s: %w", msg, rerr)
		}
		return nil, fmt.Errorf("%s: %s", msg, lookedIn())
	}
	return c, err
}

// lookedIn says where a client looked for the daemon and why there, for a
// "not running" (a daemon started with another XDG_RUNTIME_DIR listens
// elsewhere).
func lookedIn() string {
	base, err := daemonapi.RuntimeBase()
	if err != nil {
		return err.Error()
	}
	sock := safesocket.SocketPath(filepath.Join(base, safesocket.DirName))
	if os.Getenv("XDG_RUNTIME_DIR") == "" {
		return fmt.Sprintf("nothing answers at %s (XDG_RUNTIME_DIR is not set: the per-user folder %s)", sock, base)
	}
	return fmt.Sprintf("nothing answers at %s (in XDG_RUNTIME_DIR)", sock)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// ConfigCmd is `yazsesd config`.
type ConfigCmd struct {
	Init    ConfigInitCmd    `cmd:"" help:"Write the default configuration file (folder 0700, file 0600); an existing file is kept unless --force."`
	Default ConfigDefaultCmd `cmd:"" help:"Print a commented configuration file with every default."`
	Check   ConfigCheckCmd   `cmd:"" help:"Check a configuration file and name every problem with its line, including a missing or broken model file."`
}

// ConfigInitCmd is `yazsesd config init`.
type ConfigInitCmd struct {
	File  string `arg:"" optional:"" help:"Where to write it (default: the configuration file)." default:"${config_path}" type:"path"`
	Force bool   `help:"Replace an existing file."`
}

// Run writes the default file. One that holds the defaults already (what
// make install writes) is no error: the README's path runs config init
// after make install.
func (c ConfigInitCmd) Run(e *env) error {
	if err := config.WriteDefault(c.File, c.Force); err != nil {
		if b, rerr := os.ReadFile(c.File); errors.Is(err, fs.ErrExist) && rerr == nil && string(b) == config.DefaultTOML() {
			fmt.Fprintf(e.stdout, "%s: already there with every default; edit it, then `yazsesd config check`\n", c.File)
			return nil
		}
		return err
	}
	fmt.Fprintf(e.stdout, "%s: written with every default; edit it, then `yazsesd config check`\n", c.File)
	return nil
}

// ConfigDefaultCmd is `yazsesd config default`.
type ConfigDefaultCmd struct{}

// Run prints the default file.
func (ConfigDefaultCmd) Run(e *env) error {
	_, err := io.WriteString(e.stdout, config.DefaultTOML())
	return err
}

// ConfigCheckCmd is `yazsesd config check`.
type ConfigCheckCmd struct {
	File string `arg:"" optional:"" help:"The file (default: the configuration file)." default:"${config_path}" type:"path"`
}

// Run checks the file, then the files it names (the model).
func (c ConfigCheckCmd) Run(e *env) error {
	ok, err := config.Exists(c.File)
	if err != nil {
		return err
	}
	var data []byte
	cfg := config.Default()
	if ok {
		if data, err = os.ReadFile(c.File); err != nil {
			return fmt.Errorf("config check: %w", err)
		}
		if cfg, err = config.Parse(data, c.File); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%s: no file; every key has its default\n", c.File)
	}
	if err := config.CheckFiles(cfg, data, c.File); err != nil {
		return err
	}
	if cfg.VAD.Engine == config.VADAuto {
		if _, err := os.Stat(cfg.VAD.Model); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(e.stdout, "%s: vad: no Silero VAD model at %s, so the energy detector runs; yaz-fetch-model %s fetches it\n",
				c.File, cfg.VAD.Model, modelfile.DefaultVADName)
		}
	}
	if cfg.Hotkey.Source != config.HotkeySourceEvdev && !cfg.Hotkey.Enabled {
		// A note, not an error: the file is valid, but what it chose does
		// nothing (Source's default is evdev, so this one was written).
		note := config.KeyError(data, c.File, "hotkey.source",
			fmt.Sprintf("%q has no effect while hotkey.enabled is false: no key source runs; set enabled = true in [hotkey]", cfg.Hotkey.Source))
		fmt.Fprintln(e.stdout, note)
	}
	if cfg.Dictation.Live && cfg.Dictation.EagerPauseMs == 0 {
		// Live text needs pieces: the pause it takes instead of none.
		fmt.Fprintln(e.stdout, config.KeyError(data, c.File, "dictation.live",
			fmt.Sprintf("eager_pause_ms is 0, so the pieces end at %d ms pauses", cfg.Dictation.PieceMs())))
	}
	if err := checkDevice(e.ctx, cfg, data, c.File, e.stdout); err != nil { // device.go
		return err
	}
	if ok {
		fmt.Fprintf(e.stdout, "%s: ok\n", c.File)
	}
	return nil
}
