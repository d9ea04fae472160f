package audio

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gen2brain/malgo"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackendList(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", []string{"pulseaudio", "alsa", "jack"}, false},
		{"auto", []string{"pulseaudio", "alsa", "jack"}, false},
		{"pulseaudio", []string{"pulseaudio"}, false},
		{"ALSA", []string{"alsa"}, false},
		{"null", []string{"null"}, false},
		{"oss4", nil, true},
	}
	if runtime.GOOS != "linux" {
		tests = tests[2:] // auto differs per OS
	}
	for _, tt := range tests {
		got, err := backendList(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("backendList(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		var names []string
		for _, b := range got {
			names = append(names, b.name)
		}
		if diff := cmp.Diff(tt.want, names); diff != "" {
			t.Errorf("backendList(%q) names (-want +got):\n%s", tt.in, diff)
		}
	}
	// The null backend is the last of miniaudio's enum, one past malgo's
	// mislabelled constant; auto never picks it.
	nul, _ := backendList("null")
	if nul[0].backend != malgo.Backend(malgo.BackendNull+1) {
		t.Errorf("null backend = %d, want %d", nul[0].backend, malgo.BackendNull+1)
	}
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd", "android"} {
		for _, b := range autoBackends(goos) {
			if b.backend == backendNull || b.backend == malgo.BackendNull {
				t.Errorf("autoBackends(%s) contains a null/custom backend", goos)
			}
		}
	}
}

func TestIDString(t *testing.T) {
	var named, zero, num malgo.DeviceID
	copy(named[:], "alsa_input.pci-0000_00_1f.3.analog-stereo")
	num[0] = 3
	var odd malgo.DeviceID
	copy(odd[:], "ab\x01c")
	tests := []struct {
		id   malgo.DeviceID
		want string
	}{
		{named, "alsa_input.pci-0000_00_1f.3.analog-stereo"},
		{zero, "00"},
		{num, "03"},
		{odd, "61620163"},
	}
	for _, tt := range tests {
		if got := idString(tt.id); got != tt.want {
			t.Errorf("idString(%q) = %q, want %q", tt.id[:8], got, tt.want)
		}
	}
}

func TestPick(t *testing.T) {
	devs := []Device{
		{ID: "yaz.monitor", Name: "Monitor of yaz"},
		{ID: "alsa_input.usb-Blue_Yeti", Name: "Yeti Stereo Microphone Analog Stereo"},
		{ID: "alsa_input.usb-Blue_Yeti.2", Name: "Yeti Stereo Microphone Digital"},
		{ID: "mic", Name: "Built-in Audio"},
	}
	tests := []struct {
		want    string
		idx     int
		wantErr error
	}{
		{"yaz.monitor", 0, nil},
		{"monitor OF YAZ", 0, nil},
		{"built-in", 3, nil},
		{"mic", 3, nil},                            // exact ID beats the substring "Microphone"
		{"analog", 1, nil},                         // one substring hit
		{"yeti stereo microphone digital", 2, nil}, // exact name
		{"yeti", -1, ErrAmbiguousDevice},           // two hits
		{"nonexistent", -1, ErrNoSuchDevice},
	}
	for _, tt := range tests {
		i, err := pick(devs, tt.want)
		if !errors.Is(err, tt.wantErr) || i != tt.idx {
			t.Errorf("pick(%q) = %d, %v; want %d, %v", tt.want, i, err, tt.idx, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--list-devices") {
			t.Errorf("pick(%q) error %q does not say how to list devices", tt.want, err)
		}
	}
}

func TestDeviceError(t *testing.T) {
	tests := []struct {
		err    error
		name   string
		is     error
		substr string
	}{
		{malgo.ErrNoDevice, "foo", ErrNoSuchDevice, `open capture device "foo" (backend alsa): no such device; list devices with yaz-capture --list-devices`},
		{malgo.ErrAccessDenied, "default", ErrPermission, "open default capture device (backend alsa): permission denied; check that you are in the audio group"},
		{malgo.ErrBusy, "hw:0", nil, "device busy"},
		{malgo.ErrFailedToOpenBackendDevice, "hw:0", nil, "failed to open backend device"},
		{malgo.ErrFormatNotSupported, "hw:0", nil, "format not supported"},
	}
	for _, tt := range tests {
		err := deviceError("open", malgo.Capture, tt.name, "alsa", tt.err)
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("deviceError(%v) = %v, not %v", tt.err, err, tt.is)
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.substr)) {
			t.Errorf("deviceError(%v) = %q, want it to contain %q", tt.err, err, tt.substr)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("deviceError(%v) = %q is more than one line", tt.err, err)
		}
	}
}

func le(samples ...int16) []byte {
	var b []byte
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

func TestRingWrapAndOverrun(t *testing.T) {
	q := newRing(5) // rounds up to 8
	if len(q.buf) != 8 {
		t.Fatalf("newRing(5) size = %d, want 8", len(q.buf))
	}
	dst := make([]int16, 0, 8)
	q.put(le(1, 2, 3, 4, 5, 6))
	if got := q.get(dst[:0:4]); !cmp.Equal(got, []int16{1, 2, 3, 4}) {
		t.Fatalf("get = %v, want [1 2 3 4]", got)
	}
	q.put(le(7, 8, 9, 10, 11, 12)) // wraps: 5..12 fills all 8
	q.put(le(13, 14))              // does not fit
	if got := q.get(dst); !cmp.Equal(got, []int16{5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Fatalf("get after wrap = %v", got)
	}
	if d := q.dropped.Load(); d != 2 {
		t.Errorf("dropped = %d, want 2", d)
	}
	if c := q.callbacks.Load(); c != 3 {
		t.Errorf("callbacks = %d, want 3", c)
	}
	if got := q.get(dst); len(got) != 0 {
		t.Errorf("get on empty ring = %v", got)
	}
	q.put(le(-32768, 32767))
	if got := q.get(dst); !cmp.Equal(got, []int16{-32768, 32767}) {
		t.Errorf("get extremes = %v", got)
	}
}

// TestRingConcurrent runs a producer and a consumer as Capture does (run it
// with -race): every sample arrives once, in order, or is counted dropped.
func TestRingConcurrent(t *testing.T) {
	q := newRing(256)
	const total = 200000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := int16(0)
		buf := make([]byte, 0, 2*97)
		for sent := 0; sent < total; sent += 97 {
			buf = buf[:0]
			for i := 0; i < 97; i++ {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(next))
				next++
			}
			q.put(buf)
		}
		close(q.wake)
	}()
	dst := make([]int16, 0, 64)
	var got int
	var last int16 = -1
	gaps := 0
	check := func(s []int16) {
		for _, v := range s {
			if v != last+1 {
				gaps++
			}
			last = v
			got++
		}
	}
	bound := time.After(testwait.Hang)
	for open := true; open; {
		select {
		case _, open = <-q.wake:
			for s := q.get(dst); open && len(s) > 0; s = q.get(dst) {
				check(s)
			}
		case <-bound:
			t.Fatalf("waiting for the producer to put all %d samples: not within %v (%d received)", total, testwait.Hang, got)
		}
	}
	testwait.Group(t, &wg, "the producer to end")
	for s := q.get(dst); len(s) > 0; s = q.get(dst) {
		check(s)
	}
	sent := (total + 96) / 97 * 97
	if uint64(got)+q.dropped.Load() != uint64(sent) {
		t.Errorf("received %d + dropped %d != sent %d", got, q.dropped.Load(), sent)
	}
	if q.dropped.Load() == 0 && gaps != 0 {
		t.Errorf("%d gaps with nothing dropped", gaps)
	}
}

func TestPlayerFill(t *testing.T) {
	p := newPlayer([]int16{1, -2, 3, -4, 5}, 6)
	out := make([]byte, 2*3)
	for i := range out {
		out[i] = 0xAA // the device buffer may hold garbage
	}
	p.fill(out)
	if got := decode(out); !cmp.Equal(got, []int16{1, -2, 3}) {
		t.Fatalf("first fill = %v", got)
	}
	select {
	case <-p.started:
	default:
		t.Fatal("started not signalled after the first real samples")
	}
	p.fill(out)
	if got := decode(out); !cmp.Equal(got, []int16{-4, 5, 0}) {
		t.Fatalf("second fill = %v, want the tail padded with silence", got)
	}
	if n := p.pos.Load(); n != 5 {
		t.Errorf("pos = %d, want 5", n)
	}
	// 1 silent frame so far; drain needs 6.
	for i := 0; i < 1; i++ {
		p.fill(out)
	}
	select {
	case <-p.done:
		t.Fatal("done after 4 silent frames, drain is 6")
	default:
	}
	p.fill(out) // 7 silent frames
	select {
	case <-p.done:
	default:
		t.Fatal("done not signalled after the drain")
	}
	p.fill(out) // no double close
	if got := decode(out); !cmp.Equal(got, []int16{0, 0, 0}) {
		t.Errorf("fill after the end = %v, want silence", got)
	}
}

// TestPlayerDrainSetLate: the drain threshold is known only once the device
// has started (the prefill PulseAudio took); a device that already asked
// for that much silence by then has played out at once, one that has not
// when it has.
func TestPlayerDrainSetLate(t *testing.T) {
	p := newPlayer([]int16{1, 2}, math.MaxInt64)
	out := make([]byte, 2*4)
	p.fill(out) // 2 samples, 2 silent frames
	p.fill(out) // 6 silent frames
	select {
	case <-p.done:
		t.Fatal("done before a drain threshold was set")
	default:
	}
	if got := p.requested.Load(); got != 8 {
		t.Errorf("requested = %d frames, want 8", got)
	}
	p.setDrain(7)
	select {
	case <-p.done:
		t.Fatal("done after 6 silent frames, drain is 7")
	default:
	}
	p.fill(out)
	select {
	case <-p.done:
	default:
		t.Fatal("done not signalled after 10 silent frames, drain 7")
	}

	q := newPlayer([]int16{1}, math.MaxInt64)
	q.fill(out) // 3 silent frames
	q.setDrain(3)
	select {
	case <-q.done:
	default:
		t.Fatal("setDrain(3) after 3 silent frames: done not signalled")
	}
	q.setDrain(2) // no double close
}

func TestDrainFor(t *testing.T) {
	tests := []struct {
		backend string
		prefill int64
		want    int64
	}{
		{"pulseaudio", 1120, 1120},
		{"pulseaudio", 0, drainFrames},
		{"alsa", 1600, drainFrames},
		{"null", 0, drainFrames},
	}
	for _, tt := range tests {
		if got := drainFor(tt.backend, tt.prefill); got != tt.want {
			t.Errorf("drainFor(%q, %d) = %d, want %d", tt.backend, tt.prefill, got, tt.want)
		}
	}
}

func decode(b []byte) []int16 {
	var s []int16
	for i := 0; i+1 < len(b); i += 2 {
		s = append(s, int16(binary.LittleEndian.Uint16(b[i:])))
	}
	return s
}
