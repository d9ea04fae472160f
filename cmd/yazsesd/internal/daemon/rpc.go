package daemon

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/untrusted"
)

// methods is the daemon as the socket API's methods see it (rpc.Daemon).
type methods struct{ d *Daemon }

func (m methods) Status(ctx context.Context) daemonapi.Status { return m.d.status(ctx) }
func (m methods) BudgetStatus(ctx context.Context) daemonapi.BudgetStatus {
	return m.d.asker.Budget(ctx)
}

func (m methods) Last() daemonapi.Last {
	m.d.state.mu.Lock()
	defer m.d.state.mu.Unlock()
	return m.d.state.last
}

func (m methods) AskHuman(ctx context.Context, q untrusted.Question, timeoutS int) (daemonapi.AskResult, error) {
	return m.d.asker.Ask(ctx, q, timeoutS)
}

func (m methods) Audit(max int) ([]audit.Event, error) { return audit.Read(m.d.opt.AuditPath, max) }

func (m methods) Transcribe(ctx context.Context, path string, progress func(done, total int64)) (daemonapi.TranscribeResult, error) {
	return m.d.files.Transcribe(ctx, path, progress)
}

func (m methods) Watch(ctx context.Context, params json.RawMessage, send func(any) error) error {
	return m.d.live.Serve(ctx, params, send)
}

func (m methods) HoldStart(ctx context.Context) (daemonapi.HoldResult, error) {
	return m.d.holdStart(ctx)
}
func (m methods) HoldStop(ctx context.Context) (daemonapi.HoldResult, error) {
	return m.d.holdStop(ctx)
}
func (m methods) HoldToggle(ctx context.Context) (daemonapi.HoldResult, error) {
	return m.d.holdToggle(ctx)
}
func (m methods) HoldCancel(ctx context.Context) (daemonapi.HoldResult, error) {
	return m.d.holdCancel(ctx)
}

// status is the status method.
func (d *Daemon) status(ctx context.Context) daemonapi.Status {
	cfg := d.config()
	on, _ := d.state.holding()
	d.state.mu.Lock()
	asking := d.state.asking != nil
	d.state.mu.Unlock()
	hold := daemonapi.HoldIdle
	if on {
		hold = daemonapi.HoldHolding
	}
	mic := d.childStatus(d.mic)
	if mic.State == "stopped" && !d.mic.Always() {
		mic.State = "idle" // on-demand: closed between holds
	}
	children := []daemonapi.ChildStatus{d.childStatus(d.gate), d.childStatus(d.speak), d.childStatus(d.decode), mic}
	if d.vad != nil {
		children = append(children, d.childStatus(d.vad))
	}
	if d.opt.Typing != nil {
		children = append(children, d.childStatus(d.opt.Typing))
	}
	return daemonapi.Status{
		Version:     d.opt.Version,
		PID:         os.Getpid(),
		UptimeS:     int64(time.Since(d.start) / time.Second),
		Config:      d.opt.ConfigPath,
		AskHuman:    cfg.MCP.AskHuman,
		CaptureMode: cfg.Capture.Mode,
		Hold:        hold,
		Asking:      asking,
		Waiting:     d.asker.Waiting(),
		Children:    children,
		Budget:      d.asker.Budget(ctx),

		Health:       d.healthLine(d.health.Summary()),
		AuditFailing: d.auditFailing(),
		StateFailing: d.stateFailing(),
		Model:        d.opt.Config.Decode.Model, // restart-only: the running value
		Language:     d.opt.Config.Decode.Language,
		DecodeDevice: daemonapi.DeviceStatus{Setting: d.opt.Config.Decode.Device, Device: d.decode.Device(), Notes: d.decode.DeviceNotes(),
			Warning: d.decode.DeviceWarning()},
		CaptureBackend: d.opt.Config.Capture.Backend,
		CaptureDevice:  d.opt.Config.Capture.Device,
		Typing:         d.desk.Typing(cfg.Dictation.Inject),
		Hotkey:         d.desk.Hotkey(),
	}
}

// stateFailing says why the crash marker is not written ("" when it is).
func (d *Daemon) stateFailing() string {
	if d.marker == nil {
		return ""
	}
	return d.marker.Failing()
}
