package hotkey

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/keyname"
)

func TestMain(m *testing.M) {
	if os.Getenv("HOTKEY_OPEN_AS") != "" {
		// Child of TestPermissionError, running as another user.
		_, err := Open(Options{Key: "KEY_RIGHTCTRL", Mode: Hold, Device: os.Getenv("HOTKEY_OPEN_AS")})
		if err != nil {
			os.Stdout.WriteString(err.Error())
		}
		var pe *PermissionError
		if errors.As(err, &pe) && errors.Is(err, fs.ErrPermission) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	goleak.VerifyTestMain(m)
}

// event encodes one struct input_event the way the kernel does on this
// architecture.
func event(typ, code uint16, value int32) []byte {
	b := make([]byte, eventSize)
	tv := eventSize - 8
	binary.NativeEndian.PutUint64(b, 1733140000) // tv_sec (any value)
	binary.NativeEndian.PutUint16(b[tv:], typ)
	binary.NativeEndian.PutUint16(b[tv+2:], code)
	binary.NativeEndian.PutUint32(b[tv+4:], uint32(value))
	return b
}

func TestEventSize(t *testing.T) {
	if strconv.IntSize == 64 && eventSize != 24 {
		t.Fatalf("eventSize = %d on a 64-bit platform, want 24", eventSize)
	}
}

func TestMachine(t *testing.T) {
	tests := []struct {
		mode   string
		values []int32
		want   []Action
	}{
		{Hold, []int32{1, 2, 2, 2, 0}, []Action{Start, Stop}},
		{Hold, []int32{0, 1, 0, 1, 0}, []Action{Start, Stop, Start, Stop}},
		{Hold, []int32{1, 1, 0, 0}, []Action{Start, Stop}},
		{Toggle, []int32{1, 0, 1, 0}, []Action{Start, Stop}},
		{Toggle, []int32{1, 2, 2, 0, 2, 1, 2, 0}, []Action{Start, Stop}},
		{Toggle, []int32{0, 0, 1, 0, 1, 0, 1}, []Action{Start, Stop, Start}},
	}
	for _, tt := range tests {
		m := machine{mode: tt.mode}
		var got []Action
		for _, v := range tt.values {
			if a := m.feed("event3", v); a != 0 {
				got = append(got, a)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %v: actions %v, want %v", tt.mode, tt.values, got, tt.want)
		}
	}
}

// A lost device ends a hold only when the hold came from it.
func TestMachineLost(t *testing.T) {
	m := machine{mode: Hold}
	m.feed("a", valPress)
	if a := m.lost("b"); a != 0 {
		t.Errorf("other device lost: %v", a)
	}
	if a := m.lost("a"); a != Stop {
		t.Errorf("holding device lost: %v, want stop", a)
	}
	if a := m.feed("a", valRel); a != 0 {
		t.Errorf("release after the loss: %v", a)
	}
	tg := machine{mode: Toggle}
	tg.feed("a", valPress)
	if a := tg.lost("a"); a != 0 {
		t.Errorf("toggle, device lost: %v", a)
	}
}

// fifo makes a named pipe standing in for /dev/input/eventN and opens its
// writing end (O_RDWR, so that opening the reading end does not block).
func fifo(t *testing.T) (string, *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "event7")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p, w
}

// run starts a Listener on dev and returns a channel of its actions and a
// function that stops it and returns Run's result.
func run(t *testing.T, opts Options) (<-chan Action, func() error) {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	actions := make(chan Action, 16)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, func(a Action) { actions <- a }) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(testwait.Hang):
				t.Error("Run did not return after cancel")
			}
		})
		return result
	}
	t.Cleanup(func() { stop() })
	return actions, stop
}

// expect receives the next actions and fails on another one. An extra
// action shows as a wrong one at the test's next expect: each test ends
// with a key event whose action it expects, so that nothing before it goes
// unchecked (the listener handles one device's events in order).
func expect(t *testing.T, actions <-chan Action, want ...Action) {
	t.Helper()
	for _, w := range want {
		if got := testwait.Recv(t, actions, "the action "+w.String()); got != w {
			t.Fatalf("action %v, want %v", got, w)
		}
	}
}

func TestHoldFromDevice(t *testing.T) {
	p, w := fifo(t)
	defer w.Close()
	actions, stop := run(t, Options{Key: "KEY_RIGHTCTRL", Mode: Hold, Device: p})
	var batch []byte
	// Other keys, other event types, then the key: press, repeats, release;
	// one record split across two writes.
	batch = append(batch, event(evKey, 30, 1)...) // KEY_A down
	batch = append(batch, event(0, 0, 0)...)      // EV_SYN
	batch = append(batch, event(4, 4, 97)...)     // EV_MSC with value 97
	batch = append(batch, event(2, 97, 1)...)     // EV_REL, code 97: not a key
	batch = append(batch, event(evKey, 97, 1)...) // press
	batch = append(batch, event(evKey, 97, 2)...) // repeat
	batch = append(batch, event(evKey, 97, 2)...) // repeat
	// The first write ends inside a record; the press before it comes out
	// (so the listener has read the whole write, and holds half a record)
	// before the rest is written.
	w.Write(batch[:len(batch)-5])
	expect(t, actions, Start)
	w.Write(batch[len(batch)-5:])
	w.Write(event(evKey, 30, 0))
	w.Write(event(evKey, 97, 0)) // release
	expect(t, actions, Stop)
	w.Write(event(evKey, 97, 1))
	expect(t, actions, Start)
	w.Write(event(evKey, 97, 0)) // nothing came between
	expect(t, actions, Stop)
	if err := stop(); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

func TestToggleFromDevice(t *testing.T) {
	p, w := fifo(t)
	defer w.Close()
	actions, _ := run(t, Options{Key: "KEY_F13", Mode: Toggle, Device: p})
	for _, v := range []int32{1, 2, 0} {
		w.Write(event(evKey, 183, v))
	}
	expect(t, actions, Start)
	for _, v := range []int32{1, 2, 2, 0} {
		w.Write(event(evKey, 183, v))
	}
	expect(t, actions, Stop)
	w.Write(event(evKey, 183, 1)) // nothing came between
	expect(t, actions, Start)
}

// A device that goes away during a hold ends the hold; when it comes back
// it is read again at the next rescan.
func TestDeviceLostAndBack(t *testing.T) {
	p, w := fifo(t)
	rescan := make(chan time.Time)
	actions, stop := run(t, Options{Key: "KEY_RIGHTCTRL", Mode: Hold, Device: p, rescanTick: rescan})
	w.Write(event(evKey, 97, 1))
	expect(t, actions, Start)
	w.Close() // EOF: the device is gone
	expect(t, actions, Stop)
	w2, err := os.OpenFile(p, os.O_RDWR, 0) // the device is back
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	// The press waits in the pipe until the rescan (after the loss was
	// handled: the Stop) opens the device again.
	w2.Write(event(evKey, 97, 1))
	rescan <- time.Now()
	expect(t, actions, Start)
	w2.Write(event(evKey, 97, 0)) // nothing came between
	expect(t, actions, Stop)
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// A keyboard that appears later (plugged in, back from suspend) is found by
// the rescan.
func TestNewDeviceFound(t *testing.T) {
	dir := t.TempDir()
	var writers []*os.File
	for _, n := range []string{"event3", "event5"} {
		if err := syscall.Mkfifo(filepath.Join(dir, n), 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		writers = append(writers, w)
	}
	proc := filepath.Join(t.TempDir(), "devices")
	// At first only the laptop keyboard (event3) is there.
	first := procSample[:strings.Index(procSample, "I: Bus=0003 Vendor=046d Product=c31c")]
	os.WriteFile(proc, []byte(first), 0o644)
	rescan := make(chan time.Time)
	actions, _ := run(t, Options{Key: "KEY_RIGHTCTRL", Mode: Toggle, procDevices: proc, devInput: dir, rescanTick: rescan})
	writers[0].Write(event(evKey, 97, 1))
	expect(t, actions, Start)
	// The USB keyboard's press waits in its pipe: only a rescan after the
	// keyboard arrived in the list opens it.
	writers[1].Write(event(evKey, 97, 1))
	os.WriteFile(proc, []byte(procSample), 0o644) // the USB keyboard arrives
	rescan <- time.Now()
	expect(t, actions, Stop)
	writers[1].Write(event(evKey, 97, 0))
	writers[1].Write(event(evKey, 97, 1)) // nothing came between
	expect(t, actions, Start)
}

func TestOpenErrors(t *testing.T) {
	p, w := fifo(t)
	defer w.Close()
	if _, err := Open(Options{Key: "KEY_NOPE", Mode: Hold, Device: p}); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := Open(Options{Key: "KEY_RIGHTCTRL", Mode: "press", Device: p}); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := Open(Options{Key: "KEY_RIGHTCTRL", Mode: Hold, Device: p + ".missing"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing device: %v", err)
	}
	proc := filepath.Join(t.TempDir(), "devices")
	os.WriteFile(proc, []byte(procSample), 0o644)
	if _, err := Open(Options{Key: "BTN_EXTRA", Mode: Hold, procDevices: proc, devInput: t.TempDir()}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("no device with the key: %v", err)
	}
}

// Devices found in /proc/bus/input/devices are opened.
func TestOpenDiscovers(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"event3", "event5"} {
		if err := syscall.Mkfifo(filepath.Join(dir, n), 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
	}
	proc := filepath.Join(t.TempDir(), "devices")
	os.WriteFile(proc, []byte(procSample), 0o644)
	l, err := Open(Options{Key: "KEY_RIGHTCTRL", Mode: Hold, procDevices: proc, devInput: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, want := l.Devices(), []string{filepath.Join(dir, "event3"), filepath.Join(dir, "event5")}; !slices.Equal(got, want) {
		t.Errorf("Devices = %v, want %v", got, want)
	}
}

// In the format of a laptop's file: the keyboard (event3), a USB keyboard (event5), the
// power button (event2, has KEY_POWER only), a mouse (event6, BTN_LEFT..).
const procSample = `I: Bus=0019 Vendor=0000 Product=0001 Version=0000
N: Name="Power Button"
P: Phys=LNXPWRBN/button/input0
S: Sysfs=/devices/LNXSYSTM:00/LNXPWRBN:00/input/input2
U: Uniq=
H: Handlers=kbd event2 
B: PROP=0
B: EV=3
B: KEY=10000000000000 0

I: Bus=0011 Vendor=0001 Product=0001 Version=ab41
N: Name="AT Translated Set 2 keyboard"
P: Phys=isa0060/serio0/input0
S: Sysfs=/devices/platform/i8042/serio0/input/input3
U: Uniq=
H: Handlers=sysrq kbd event3 leds 
B: PROP=0
B: EV=120013
B: KEY=402000000 3803078f800d001 feffffdfffefffff fffffffffffffffe
B: MSC=10
B: LED=7

I: Bus=0003 Vendor=046d Product=c31c Version=0110
N: Name="Logitech USB Keyboard"
P: Phys=usb-0000:00:14.0-2/input0
S: Sysfs=/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/0003:046D:C31C.0001/input/input5
U: Uniq=
H: Handlers=sysrq kbd leds event5 
B: PROP=0
B: EV=120013
B: KEY=1000000000007 ff800000000007ff febeffdff3cfffff fffffffffffffffe
B: MSC=10
B: LED=7

I: Bus=0003 Vendor=046d Product=c077 Version=0111
N: Name="Logitech USB Optical Mouse"
P: Phys=usb-0000:00:14.0-1/input0
S: Sysfs=/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0/0003:046D:C077.0002/input/input6
U: Uniq=
H: Handlers=mouse0 event6 
B: PROP=0
B: EV=17
B: KEY=70000 0 0 0 0
B: REL=903
B: MSC=10
`

func TestDevicesWithKey(t *testing.T) {
	tests := []struct {
		key  string
		want []string
	}{
		{"KEY_RIGHTCTRL", []string{"/dev/input/event3", "/dev/input/event5"}},
		{"KEY_POWER", []string{"/dev/input/event2", "/dev/input/event3", "/dev/input/event5"}},
		{"KEY_F22", []string{"/dev/input/event5"}},
		{"BTN_LEFT", []string{"/dev/input/event6"}},
		{"BTN_EXTRA", nil},
	}
	for _, tt := range tests {
		code, _ := keyname.Code(tt.key)
		got, err := DevicesWithKey(strings.NewReader(procSample), "/dev/input", code)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("DevicesWithKey(%s) = %v, %v; want %v", tt.key, got, err, tt.want)
		}
	}
}

// A device the user may not read gives the way to get access. Run as
// another user (nobody) when the test runs as root, who may read anything.
func TestPermissionError(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "event9")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var msg string
	if os.Geteuid() != 0 {
		os.Chmod(dev, 0)
		_, err := Open(Options{Key: "KEY_RIGHTCTRL", Mode: Hold, Device: dev})
		var pe *PermissionError
		if !errors.As(err, &pe) || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Open = %v, want a PermissionError", err)
		}
		msg = err.Error()
	} else {
		for _, d := range []string{dir, filepath.Dir(dir)} {
			os.Chmod(d, 0o711)
		}
		// A copy of the test binary where nobody may run it (only the
		// test's own temporary directories are opened up).
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(dir, "hotkey.test")
		if err := os.WriteFile(exe, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "HOTKEY_OPEN_AS="+dev)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("child as nobody: %v, output %q; want exit 3 (a PermissionError)", err, out)
		}
		msg = string(out)
	}
	for _, want := range []string{dev, "permission denied", "usermod -aG input", UdevRule, "udevadm trigger"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}
