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
// "KEY_F13", "BTN_EXTRA"; the table is lib/keyname's). Device "" watches every input device that has
// the key (from /proc/bus/input/devices); a path watches that device only.
// A device that goes away is dropped, and every few seconds the listener
// looks again, so a keyboard plugged in later, or back from a suspend, is
// read too. The listener never grabs a device: the key still does what it
// did.
//
// Reading input devices needs access: by default only root and the group
// "input" may read them. A permission error says how to get it (see
// [PermissionError]). Anyone who can read a keyboard device can read every
// key typed on it: grant that access knowingly.
package hotkey

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
	"syscall"
	"time"

	"github.com/yazses/yazses/lib/keyname"
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
	// ErrUnknownKey is a key name not in lib/keyname's table.
	ErrUnknownKey  = keyname.ErrUnknown
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

// DefaultRescan is how often the devices are looked for again.
const DefaultRescan = 2 * time.Second

// Options configure a Listener.
type Options struct {
	// Key is the key name (config hotkey.key).
	Key string
	// Mode is Hold or Toggle (config hotkey.mode).
	Mode string
	// Device is an event device path; "" watches every device with the key.
	Device string
	// Rescan is how often Run looks for devices that appeared (a keyboard
	// plugged in, or back after a suspend) or came back; 0 is
	// DefaultRescan.
	Rescan time.Duration
	// Log gets debug lines (devices opened and lost; never other keys);
	// nil discards them.
	Log *slog.Logger

	// procDevices and devInput replace ProcDevices and DevInput in tests;
	// rescanTick, when set, replaces the Rescan ticker (a test rescans by
	// sending on it).
	procDevices string
	devInput    string
	rescanTick  <-chan time.Time
}

// Listener reads input devices and reports the key's actions.
type Listener struct {
	code   uint16
	mode   string
	device string
	proc   string
	dev    string
	rescan time.Duration
	tick   <-chan time.Time // replaces the ticker when set (tests)
	log    *slog.Logger

	mu     sync.Mutex
	files  map[string]*os.File // open devices by path
	warned map[string]bool     // devices whose failure to open was logged
}

// Open resolves the key and opens the devices. An unknown key or mode, no
// device with the key, or no device that may be read is an error; a device
// that cannot be read while another can is logged and left out.
func Open(opts Options) (*Listener, error) {
	code, err := keyname.Code(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("hotkey: %w", err)
	}
	if opts.Mode != Hold && opts.Mode != Toggle {
		return nil, fmt.Errorf("hotkey: mode %q: %w", opts.Mode, ErrUnknownMode)
	}
	l := &Listener{
		code: code, mode: opts.Mode, device: opts.Device,
		proc: opts.procDevices, dev: opts.devInput, rescan: opts.Rescan, tick: opts.rescanTick, log: opts.Log,
		files: map[string]*os.File{}, warned: map[string]bool{},
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.proc == "" {
		l.proc = ProcDevices
	}
	if l.dev == "" {
		l.dev = DevInput
	}
	if l.rescan <= 0 {
		l.rescan = DefaultRescan
	}
	paths, err := l.candidates()
	if err != nil {
		return nil, fmt.Errorf("hotkey: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("hotkey: %s: %w", opts.Key, ErrNoDevice)
	}
	var errs []error
	for _, p := range paths {
		if err := l.open(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(l.files) == 0 {
		return nil, fmt.Errorf("hotkey: %w", errs[0])
	}
	for _, err := range errs {
		l.log.Warn("hotkey: input device left out", "err", err)
	}
	return l, nil
}

// candidates are the devices to read: Options.Device, or every device that
// has the key.
func (l *Listener) candidates() ([]string, error) {
	if l.device != "" {
		return []string{l.device}, nil
	}
	f, err := os.Open(l.proc)
	if err != nil {
		return nil, fmt.Errorf("list input devices: %w", err)
	}
	defer f.Close()
	paths, err := DevicesWithKey(f, l.dev, l.code)
	if err != nil {
		return nil, fmt.Errorf("list input devices: %w", err)
	}
	return paths, nil
}

// open opens one device (non-blocking, so that the read can be cancelled).
func (l *Listener) open(p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return &PermissionError{Path: p, Err: err}
		}
		return err
	}
	l.mu.Lock()
	l.files[p] = f
	l.mu.Unlock()
	return nil
}

// Devices lists the devices being read.
func (l *Listener) Devices() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for p := range l.files {
		out = append(out, p)
	}
	sortDevices(out)
	return out
}

// Close closes the devices of a Listener that is not running (Run closes
// them itself when it returns).
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	for p, f := range l.files {
		err = errors.Join(err, f.Close())
		delete(l.files, p)
	}
	return err
}

// keyEvent is one EV_KEY event of the hotkey, or the loss of a device.
type keyEvent struct {
	path  string
	value int32
	lost  bool
	err   error
}

// Run reads the devices and calls handle for each action, one at a time,
// until ctx ends; it then closes the devices and returns nil. A device that
// goes away is dropped (and in hold mode an open hold stops); every
// Options.Rescan, devices that appeared or came back are opened. handle
// should return quickly.
func (l *Listener) Run(ctx context.Context, handle func(Action)) error {
	events := make(chan keyEvent)
	var wg sync.WaitGroup
	reading := map[string]bool{}
	startReaders := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p, f := range l.files {
			if reading[p] {
				continue
			}
			reading[p] = true
			l.log.Debug("hotkey: reading input device", "device", p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := readKeys(f, l.code, func(v int32) bool {
					select {
					case events <- keyEvent{path: p, value: v}:
						return true
					case <-ctx.Done():
						return false
					}
				})
				select {
				case events <- keyEvent{path: p, lost: true, err: err}:
				case <-ctx.Done():
				}
			}()
		}
	}
	defer func() {
		l.Close() // ends the readers
		wg.Wait()
	}()
	startReaders()
	rescan := l.tick
	if rescan == nil {
		tick := time.NewTicker(l.rescan)
		defer tick.Stop()
		rescan = tick.C
	}
	m := machine{mode: l.mode}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if ev.lost {
				l.log.Debug("hotkey: input device lost", "device", ev.path, "err", ev.err)
				l.mu.Lock()
				if f := l.files[ev.path]; f != nil {
					f.Close()
					delete(l.files, ev.path)
				}
				l.mu.Unlock()
				delete(reading, ev.path)
				if a := m.lost(ev.path); a != 0 {
					handle(a)
				}
				continue
			}
			if a := m.feed(ev.path, ev.value); a != 0 {
				handle(a)
			}
		case <-rescan:
			l.scan(reading)
			startReaders()
		}
	}
}

// scan opens the candidate devices that are not open yet; a failure is
// logged once per device.
func (l *Listener) scan(reading map[string]bool) {
	paths, err := l.candidates()
	if err != nil {
		l.log.Debug("hotkey: rescan", "err", err)
		return
	}
	for _, p := range paths {
		if reading[p] {
			continue
		}
		if err := l.open(p); err != nil {
			if !l.warned[p] {
				l.warned[p] = true
				l.log.Warn("hotkey: input device left out", "err", err)
			}
			continue
		}
		delete(l.warned, p)
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
	holder string // the device whose press opened the hold
}

// feed returns the action for one event value of the key on device, or 0.
func (m *machine) feed(device string, value int32) Action {
	switch {
	case value == valRepeat:
		return 0
	case m.mode == Hold && value == valPress && !m.active:
		m.active = true
		m.holder = device
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

// lost is a device gone: a hold it opened stops (the release will never
// come); a toggle stays as it is.
func (m *machine) lost(device string) Action {
	if m.mode == Hold && m.active && device == m.holder {
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
	sortDevices(out)
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

// sortDevices sorts event device paths by number (event2 before event10).
func sortDevices(paths []string) {
	sort.Slice(paths, func(i, j int) bool {
		a, b := eventNum(paths[i]), eventNum(paths[j])
		if a != b {
			return a < b
		}
		return paths[i] < paths[j]
	})
}

func eventNum(p string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "event"))
	return n
}
