// Package hotkey is the push-to-talk key: an evdev listener that reads
// /dev/input/event* and turns one key into Start and Stop actions.
//
// It works the same under X11, Wayland and on a text console, because it
// reads the kernel's input devices directly, with plain reads of
// struct input_event (24 bytes on 64-bit Linux: a struct timeval, then type
// u16, code u16, value s32). Only EV_KEY events of the chosen key count:
// value 1 is a press, 0 a release, 2 an auto-repeat.
//
//   - "hold": Start on the press, Stop on the release; repeats are ignored.
//     When the device goes away while the key is held, Stop follows, so a
//     hold never stays open by accident.
//   - "toggle": each press (not a repeat) starts or stops in turn.
//
// The key is named as in linux/input-event-codes.h ("KEY_RIGHTCTRL",
// "KEY_F13", "BTN_EXTRA"). Device "" watches every input device that has
// the key (from /proc/bus/input/devices); a path watches that device only.
// The listener never grabs a device: the key still does what it did.
//
// Reading input devices needs access: by default only root and the group
// "input" may read them. A permission error says how to get it (see
// [PermissionError]). Anyone who can read a keyboard device can read every
// key typed on it: grant that access knowingly.
package hotkey

//go:generate go run gen_keys.go

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Modes.
const (
	Hold   = "hold"
	Toggle = "toggle"
)

// Linux input constants.
const (
	evKey     = 1
	valRel    = 0
	valPress  = 1
	valRepeat = 2
)

// eventSize is sizeof(struct input_event): a timeval of two longs, then
// 2+2+4 bytes.
const eventSize = 2*strconv.IntSize/8 + 8

// Default places.
const (
	ProcDevices = "/proc/bus/input/devices"
	DevInput    = "/dev/input"
)

// Errors.
var (
	ErrUnknownKey  = errors.New("unknown key name")
	ErrUnknownMode = errors.New(`unknown hotkey mode (want "hold" or "toggle")`)
	ErrNoDevice    = errors.New("no input device has the key")
)

// Action is what the key asks for.
type Action int

const (
	// Start opens a hold (dictation starts).
	Start Action = iota + 1
	// Stop closes it.
	Stop
)

func (a Action) String() string {
	switch a {
	case Start:
		return "start"
	case Stop:
		return "stop"
	}
	return "none"
}

// KeyCode returns the code of a key name such as "KEY_RIGHTCTRL" (case
// does not matter; the KEY_ prefix may be left out).
func KeyCode(name string) (uint16, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if c, ok := keyCodes[n]; ok {
		return c, nil
	}
	if c, ok := keyCodes["KEY_"+n]; ok && n != "" {
		return c, nil
	}
	return 0, fmt.Errorf("key %q: %w", name, ErrUnknownKey)
}

// PermissionError is a device the user may not read, with the way to fix
// it in its message.
type PermissionError struct {
	Path string
	Err  error
}

// UdevRule gives the person at the seat (logind's "uaccess") read access to
// keyboards; save it as /etc/udev/rules.d/70-yazses-hotkey.rules.
const UdevRule = `KERNEL=="event*", SUBSYSTEM=="input", ENV{ID_INPUT_KEYBOARD}=="1", TAG+="uaccess"`

func (e *PermissionError) Error() string {
	return fmt.Sprintf("read %s: permission denied. To let yazsesd read the hotkey, either "+
		"add yourself to the input group (sudo usermod -aG input \"$USER\", then log out and in again), "+
		"or add the udev rule\n    %s\nas /etc/udev/rules.d/70-yazses-hotkey.rules and run "+
		"sudo udevadm control --reload && sudo udevadm trigger. "+
		"Either way every program of yours can then read what you type; "+
		"a compositor key binding that runs `yazsesd ctl hold start`/`stop` needs no such access",
		e.Path, UdevRule)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// Options configure a Listener.
type Options struct {
	// Key is the key name (config hotkey.key).
	Key string
	// Mode is Hold or Toggle (config hotkey.mode).
	Mode string
	// Device is an event device path; "" watches every device with the key.
	Device string
	// Log gets debug lines (devices opened and lost; never key codes of
	// other keys); nil discards them.
	Log *slog.Logger

	// procDevices and devInput replace ProcDevices and DevInput in tests.
	procDevices string
	devInput    string
}

// Listener reads input devices and reports the key's actions.
type Listener struct {
	code  uint16
	mode  string
	log   *slog.Logger
	files []*os.File
	paths []string

	closeOnce sync.Once
}

// Open resolves the key and opens the devices. An unknown key or mode, no
// device with the key, or no device that may be read is an error; a device
// that cannot be read while another can is logged and left out.
func Open(opts Options) (*Listener, error) {
	code, err := KeyCode(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("hotkey: %w", err)
	}
	if opts.Mode != Hold && opts.Mode != Toggle {
		return nil, fmt.Errorf("hotkey: mode %q: %w", opts.Mode, ErrUnknownMode)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	paths := []string{opts.Device}
	if opts.Device == "" {
		proc, dev := opts.procDevices, opts.devInput
		if proc == "" {
			proc = ProcDevices
		}
		if dev == "" {
			dev = DevInput
		}
		f, err := os.Open(proc)
		if err != nil {
			return nil, fmt.Errorf("hotkey: list input devices: %w", err)
		}
		paths, err = DevicesWithKey(f, dev, code)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("hotkey: list input devices: %w", err)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("hotkey: %s: %w", opts.Key, ErrNoDevice)
		}
	}
	l := &Listener{code: code, mode: opts.Mode, log: log}
	var errs []error
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				err = &PermissionError{Path: p, Err: err}
			}
			errs = append(errs, err)
			continue
		}
		l.files = append(l.files, f)
		l.paths = append(l.paths, p)
	}
	if len(l.files) == 0 {
		return nil, fmt.Errorf("hotkey: %w", errs[0])
	}
	for _, err := range errs {
		log.Warn("hotkey: input device left out", "err", err)
	}
	return l, nil
}

// Devices lists the devices being read.
func (l *Listener) Devices() []string { return append([]string(nil), l.paths...) }

// Close closes the devices; Run returns. Safe to call more than once.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		for _, f := range l.files {
			err = errors.Join(err, f.Close())
		}
	})
	return err
}

// keyEvent is one EV_KEY event of the hotkey, or the loss of a device.
type keyEvent struct {
	value int32
	lost  bool
}

// Run reads the devices and calls handle for each action, one at a time,
// until ctx ends (nil) or every device is gone (an error). It closes the
// devices when it returns. handle should return quickly.
func (l *Listener) Run(ctx context.Context, handle func(Action)) error {
	events := make(chan keyEvent)
	errs := make(chan error, len(l.files))
	var wg sync.WaitGroup
	for i, f := range l.files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := readKeys(f, l.code, func(v int32) bool {
				select {
				case events <- keyEvent{value: v}:
					return true
				case <-ctx.Done():
					return false
				}
			})
			if ctx.Err() == nil {
				l.log.Debug("hotkey: input device lost", "device", l.paths[i], "err", err)
			}
			select {
			case events <- keyEvent{lost: true}:
			case <-ctx.Done():
			}
			errs <- fmt.Errorf("read %s: %w", l.paths[i], err)
		}()
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer func() {
		stop()
		l.Close()
		wg.Wait()
	}()
	m := machine{mode: l.mode}
	alive := len(l.files)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if ev.lost {
				alive--
				if a := m.lost(); a != 0 {
					handle(a)
				}
				if alive == 0 {
					var all []error
					for range len(l.files) {
						all = append(all, <-errs)
					}
					return fmt.Errorf("hotkey: every input device is gone: %w", errors.Join(all...))
				}
				continue
			}
			if a := m.feed(ev.value); a != 0 {
				handle(a)
			}
		}
	}
}

// readKeys reads input_event records from r and calls emit with the value
// of each EV_KEY event of code, until r fails or emit returns false.
func readKeys(r io.Reader, code uint16, emit func(int32) bool) error {
	br := bufio.NewReaderSize(r, 64*eventSize)
	buf := make([]byte, eventSize)
	tv := eventSize - 8
	for {
		if _, err := io.ReadFull(br, buf); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		typ := binary.NativeEndian.Uint16(buf[tv:])
		c := binary.NativeEndian.Uint16(buf[tv+2:])
		v := int32(binary.NativeEndian.Uint32(buf[tv+4:]))
		if typ == evKey && c == code {
			if !emit(v) {
				return context.Canceled
			}
		}
	}
}

// machine turns key values into actions.
type machine struct {
	mode   string
	active bool
}

// feed returns the action for one event value of the key, or 0.
func (m *machine) feed(value int32) Action {
	switch {
	case value == valRepeat:
		return 0
	case m.mode == Hold && value == valPress && !m.active:
		m.active = true
		return Start
	case m.mode == Hold && value == valRel && m.active:
		m.active = false
		return Stop
	case m.mode == Toggle && value == valPress:
		m.active = !m.active
		if m.active {
			return Start
		}
		return Stop
	}
	return 0
}

// lost is a device gone: a hold that is open stops (the release will never
// come); a toggle stays as it is.
func (m *machine) lost() Action {
	if m.mode == Hold && m.active {
		m.active = false
		return Stop
	}
	return 0
}

// DevicesWithKey parses /proc/bus/input/devices and returns the event
// devices (under devDir) whose key bitmap has code and that report EV_KEY.
func DevicesWithKey(r io.Reader, devDir string, code uint16) ([]string, error) {
	var out []string
	var event string
	var ev, keys *big.Int
	flush := func() {
		if event != "" && ev != nil && ev.Bit(evKey) == 1 && keys != nil && keys.Bit(int(code)) == 1 {
			out = append(out, filepath.Join(devDir, event))
		}
		event, ev, keys = "", nil, nil
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "H: Handlers="):
			for _, h := range strings.Fields(strings.TrimPrefix(line, "H: Handlers=")) {
				if strings.HasPrefix(h, "event") {
					event = h
				}
			}
		case strings.HasPrefix(line, "B: EV="):
			ev = bitmap(strings.TrimPrefix(line, "B: EV="))
		case strings.HasPrefix(line, "B: KEY="):
			keys = bitmap(strings.TrimPrefix(line, "B: KEY="))
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return eventNum(out[i]) < eventNum(out[j]) })
	return out, nil
}

// bitmap parses a kernel bitmap: hex words of one long each, the most
// significant first.
func bitmap(s string) *big.Int {
	b := new(big.Int)
	for _, w := range strings.Fields(s) {
		v, ok := new(big.Int).SetString(w, 16)
		if !ok {
			return nil
		}
		b.Lsh(b, uint(strconv.IntSize))
		b.Or(b, v)
	}
	return b
}

func eventNum(p string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "event"))
	return n
}
