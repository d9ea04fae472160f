// Package audio records from and plays to sound devices through miniaudio
// (github.com/gen2brain/malgo). It is the one cgo package for sound in
// YazSes.
//
// Audio always crosses this package's API in lib/pcm's wire format: 16 000
// Hz, mono, signed 16-bit samples; miniaudio (or the sound server) converts
// from and to whatever the device really runs at.
//
// miniaudio calls its data callback on a C thread of its own. The callbacks
// here only copy samples (no allocation, no locks held by Go code, nothing
// that blocks) and hand them to the calling goroutine through a lock-free
// ring (capture) or a pre-filled slice (playback). A full capture ring drops
// samples; the count is logged at Warn, never hidden.
package audio

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"unicode"

	"github.com/gen2brain/malgo"
)

// Config picks the backend and the device.
type Config struct {
	// Backend is "auto" (the default, also ""), "pulseaudio", "alsa" or
	// "null" (a silent device that runs in real time; for tests).
	Backend string
	// Device is "" for the default device; otherwise a device ID, or a
	// case-insensitive substring of a device name (see ListDevices).
	Device string
	// Log receives overrun warnings and miniaudio's diagnostics (at Debug).
	// Nil means slog.Default().
	Log *slog.Logger
}

// Device is one playback or capture device.
type Device struct {
	ID      string // what Config.Device accepts; stable for a given backend
	Name    string // human-readable name
	Capture bool   // true: a capture device; false: a playback device
	Default bool   // the backend's default device of its kind
}

// Errors that the one-line messages wrap, for errors.Is.
var (
	ErrNoSuchDevice       = errors.New("no such device")
	ErrAmbiguousDevice    = errors.New("more than one device matches")
	ErrPermission         = errors.New("permission denied")
	ErrBackendUnavailable = errors.New("backend unavailable")
	ErrDeviceStopped      = errors.New("device stopped unexpectedly")
)

// listHint is the advice appended to device-selection errors.
const listHint = "list devices with yaz-capture --list-devices"

// Backends are the names Config.Backend accepts.
var Backends = []string{"auto", "pulseaudio", "alsa", "null"}

// backendNull is miniaudio's null backend. malgo v0.11.24's BackendNull
// constant is off by one (it names miniaudio's "custom" backend, which has
// no callbacks and fails with "No backend"); the null backend is the next
// value, the last of miniaudio's enum.
const backendNull = malgo.Backend(malgo.BackendNull + 1)

// backendChoice is one backend to try, with the name errors show.
type backendChoice struct {
	name    string
	backend malgo.Backend
}

// backendList returns the backends to try, in order, for a Config.Backend
// value. "auto" never falls back to the null backend: a machine without
// sound must say so, not record silence.
func backendList(name string) ([]backendChoice, error) {
	switch strings.ToLower(name) {
	case "", "auto":
		return autoBackends(runtime.GOOS), nil
	case "pulseaudio", "pulse":
		return []backendChoice{{"pulseaudio", malgo.BackendPulseaudio}}, nil
	case "alsa":
		return []backendChoice{{"alsa", malgo.BackendAlsa}}, nil
	case "null":
		return []backendChoice{{"null", backendNull}}, nil
	}
	return nil, fmt.Errorf("audio backend %q: unknown; use one of %s", name, strings.Join(Backends, ", "))
}

func autoBackends(goos string) []backendChoice {
	switch goos {
	case "linux":
		return []backendChoice{{"pulseaudio", malgo.BackendPulseaudio}, {"alsa", malgo.BackendAlsa}, {"jack", malgo.BackendJack}}
	case "darwin", "ios":
		return []backendChoice{{"coreaudio", malgo.BackendCoreaudio}}
	case "windows":
		return []backendChoice{{"wasapi", malgo.BackendWasapi}, {"dsound", malgo.BackendDsound}, {"winmm", malgo.BackendWinmm}}
	case "android":
		return []backendChoice{{"aaudio", malgo.BackendAaudio}, {"opensl", malgo.BackendOpensl}}
	default:
		return []backendChoice{{"sndio", malgo.BackendSndio}, {"audio4", malgo.BackendAudio4}, {"oss", malgo.BackendOss}}
	}
}

func (c Config) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// audioContext is an initialised miniaudio context and the backend it runs.
type audioContext struct {
	*malgo.AllocatedContext
	backend string
}

func (c *audioContext) close() {
	_ = c.Uninit()
	c.Free()
}

// openContext initialises the first backend of cfg.Backend that works.
func openContext(cfg Config) (*audioContext, error) {
	choices, err := backendList(cfg.Backend)
	if err != nil {
		return nil, err
	}
	log := cfg.logger()
	quietBackends(log)
	var errs []string
	for _, b := range choices {
		name := b.name
		c, err := malgo.InitContext([]malgo.Backend{b.backend}, malgo.ContextConfig{}, func(msg string) {
			log.Debug("miniaudio", "backend", name, "msg", strings.TrimSpace(msg))
		})
		if err == nil {
			log.Debug("audio backend", "backend", name)
			return &audioContext{AllocatedContext: c, backend: name}, nil
		}
		errs = append(errs, name+": "+trimMiniaudio(err))
	}
	what := "audio backend " + choices[0].name
	if len(choices) > 1 {
		what = "audio backends (" + joinNames(choices) + ")"
	}
	return nil, fmt.Errorf("open %s: %w (%s); is a sound server running (PULSE_SERVER, XDG_RUNTIME_DIR)? try --backend alsa, or --backend null for a silent test device",
		what, ErrBackendUnavailable, strings.Join(errs, "; "))
}

func joinNames(cs []backendChoice) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// trimMiniaudio turns "miniaudio: No backend." into "no backend".
func trimMiniaudio(err error) string {
	s := strings.TrimPrefix(err.Error(), "miniaudio: ")
	s = strings.TrimSuffix(s, ".")
	if s != "" {
		r := []rune(s)
		r[0] = unicode.ToLower(r[0])
		s = string(r)
	}
	return s
}

// ListDevices lists the capture and playback devices of the backend that
// cfg selects (cfg.Device is ignored). Capture devices come first.
func ListDevices(cfg Config) ([]Device, error) {
	c, err := openContext(cfg)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var out []Device
	for _, kind := range []malgo.DeviceType{malgo.Capture, malgo.Playback} {
		infos, err := c.Devices(kind)
		if err != nil {
			return nil, fmt.Errorf("list %s devices (backend %s): %s", kindName(kind), c.backend, trimMiniaudio(err))
		}
		for i := range infos {
			out = append(out, Device{
				ID:      idString(infos[i].ID),
				Name:    infos[i].Name(),
				Capture: kind == malgo.Capture,
				Default: infos[i].IsDefault != 0,
			})
		}
	}
	return out, nil
}

func kindName(kind malgo.DeviceType) string {
	if kind == malgo.Capture {
		return "capture"
	}
	return "playback"
}

// idString renders a miniaudio device ID. Most backends (PulseAudio, ALSA,
// Core Audio…) use a NUL-terminated name, shown as is ("yaz.monitor",
// "hw:0,0"); others use numbers or GUIDs, shown in hex.
func idString(id malgo.DeviceID) string {
	n := 0
	for n < len(id) && id[n] != 0 {
		if id[n] < 0x20 || id[n] > 0x7e {
			return id.String()
		}
		n++
	}
	if n == 0 {
		return id.String()
	}
	return string(id[:n])
}

// pick selects the device that want names among devs: an exact ID, else an
// exact name (case-insensitive), else the one name that contains want
// (case-insensitive). It returns the index in devs.
func pick(devs []Device, want string) (int, error) {
	for i, d := range devs {
		if d.ID == want {
			return i, nil
		}
	}
	lw := strings.ToLower(want)
	for i, d := range devs {
		if strings.ToLower(d.Name) == lw {
			return i, nil
		}
	}
	var hits []int
	for i, d := range devs {
		if strings.Contains(strings.ToLower(d.Name), lw) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 0:
		return -1, fmt.Errorf("%w; %s", ErrNoSuchDevice, listHint)
	case 1:
		return hits[0], nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = fmt.Sprintf("%q", devs[h].ID)
	}
	return -1, fmt.Errorf("%w (%s); give its ID; %s", ErrAmbiguousDevice, strings.Join(ids, ", "), listHint)
}

// resolve finds the device cfg.Device names. It returns nil for the
// default device, and the name to show in messages.
func (c *audioContext) resolve(kind malgo.DeviceType, want string) (*malgo.DeviceID, string, error) {
	if want == "" {
		return nil, "default", nil
	}
	infos, err := c.Devices(kind)
	if err != nil {
		return nil, want, fmt.Errorf("open %s device %q (backend %s): list devices: %s", kindName(kind), want, c.backend, trimMiniaudio(err))
	}
	devs := make([]Device, len(infos))
	for i := range infos {
		devs[i] = Device{ID: idString(infos[i].ID), Name: infos[i].Name()}
	}
	i, err := pick(devs, want)
	if err != nil {
		return nil, want, fmt.Errorf("open %s device %q (backend %s): %w", kindName(kind), want, c.backend, err)
	}
	id := new(malgo.DeviceID)
	*id = infos[i].ID
	return id, devs[i].ID, nil
}

// deviceError turns a failed device init or start into a one-line message
// that names the device and what to try.
func deviceError(op string, kind malgo.DeviceType, name, backend string, err error) error {
	what := fmt.Sprintf("%s %s device %q (backend %s)", op, kindName(kind), name, backend)
	if name == "default" {
		what = fmt.Sprintf("%s default %s device (backend %s)", op, kindName(kind), backend)
	}
	var r malgo.Result
	if errors.As(err, &r) {
		switch r {
		case malgo.ErrNoDevice, malgo.ErrDoesNotExist:
			return fmt.Errorf("%s: %w; %s", what, ErrNoSuchDevice, listHint)
		case malgo.ErrAccessDenied:
			return fmt.Errorf("%s: %w; check that you are in the audio group, or use the sound server (--backend pulseaudio)", what, ErrPermission)
		case malgo.ErrAlreadyInUse, malgo.ErrBusy:
			return fmt.Errorf("%s: device busy (%s); close the program that holds it, or go through the sound server (--backend pulseaudio)", what, trimMiniaudio(err))
		case malgo.ErrFailedToOpenBackendDevice, malgo.ErrFailedToInitBackend:
			return fmt.Errorf("%s: %s; the device may be gone or busy; %s", what, trimMiniaudio(err), listHint)
		}
	}
	return fmt.Errorf("%s: %s", what, trimMiniaudio(err))
}
