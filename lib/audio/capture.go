package audio

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"

	"github.com/yazses/yazses/lib/pcm"
)

const (
	// periodFrames is the capture period asked of miniaudio: 20 ms.
	periodFrames = pcm.SampleRate / 50
	// capturePeriods is the number of periods in the capture buffer
	// (PulseAudio drops what exceeds it while the client is descheduled).
	capturePeriods = 10
	// playPeriodFrames is the playback period: 100 ms. miniaudio asks
	// PulseAudio for a target latency of one period; 20 ms underran on a
	// loaded machine. Barge-in does not wait for it: stopping corks the
	// stream, and buffered audio is dropped.
	playPeriodFrames = pcm.SampleRate / 10
	// playPeriods is the number of periods in the playback buffer.
	playPeriods = 3
	// deliverSamples is the most samples one onSamples call gets.
	deliverSamples = 4096
	// silentWarnAfter is how long Capture waits for a first callback
	// before it warns that the device gives nothing.
	silentWarnAfter = 5 * time.Second
	// overrunLogEvery limits overrun warnings to one per interval.
	overrunLogEvery = time.Second
)

// ringSamples is the capture slack between the device thread and a slow
// consumer (a blocked pipe): about 8 s. A variable so tests can shrink it.
var ringSamples = 1 << 17

// stallTimeout is how long a running device may go without a data
// callback before it counts as gone. miniaudio does not notice a sound
// server that dies (PulseAudio's main loop just waits), so this watchdog
// does. A variable so tests can shorten it.
var stallTimeout = 4 * time.Second

// watchEvery is how often the watchdog looks.
const watchEvery = 250 * time.Millisecond

// stopDevice stops and frees a device. Stop first: Uninit alone leaves
// miniaudio's PulseAudio thread waiting for a server event that a dead
// server never sends.
func stopDevice(dev *malgo.Device) {
	_ = dev.Stop()
	dev.Uninit()
}

// device is an open miniaudio device. A stop that we did not ask for (the
// device unplugged, the sound server gone) is reported on stopped.
type device struct {
	*malgo.Device
	stopping atomic.Bool
	stopped  chan struct{}
	closed   bool
}

// openDevice initialises a device of config dc around the data callback.
func openDevice(c *audioContext, dc malgo.DeviceConfig, data malgo.DataProc) (*device, error) {
	d := &device{stopped: make(chan struct{}, 1)}
	dev, err := malgo.InitDevice(c.Context, dc, malgo.DeviceCallbacks{
		Data: data,
		Stop: func() {
			if !d.stopping.Load() {
				select {
				case d.stopped <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	d.Device = dev
	return d, nil
}

// close stops and frees the device, once; no callback runs after it returns.
func (d *device) close() {
	if !d.closed {
		d.closed = true
		d.stopping.Store(true)
		stopDevice(d.Device)
	}
}

// Capture records 16 kHz mono s16 from the capture device and calls
// onSamples (from the calling goroutine, in order, never concurrently; the
// slice is reused after it returns) until ctx is done; it then stops the
// device, hands over what was already recorded, and returns nil:
// cancellation is a clean end. onReady, if non-nil, is called once when the
// first data callback has arrived, so a caller can wait until the device
// really runs (an idle PulseAudio source may take a second or two).
//
// A device that stops by itself (unplugged, sound server gone) ends Capture
// with an error wrapping ErrDeviceStopped.
func Capture(ctx context.Context, cfg Config, onReady func(), onSamples func([]int16)) error {
	if err := ctx.Err(); err != nil {
		return nil
	}
	log := cfg.logger()
	c, err := openContext(cfg)
	if err != nil {
		return err
	}
	defer c.close()
	id, name, err := c.resolve(malgo.Capture, cfg.Device)
	if err != nil {
		return err
	}

	q := newRing(ringSamples)

	dc := malgo.DefaultDeviceConfig(malgo.Capture)
	dc.Capture.Format = malgo.FormatS16
	dc.Capture.Channels = pcm.Channels
	dc.SampleRate = pcm.SampleRate
	dc.PeriodSizeInFrames = periodFrames
	dc.Periods = capturePeriods
	dc.Pulse.StreamNameCapture = "yazses capture"
	var pin runtime.Pinner
	defer pin.Unpin()
	if id != nil {
		pin.Pin(id) // miniaudio reads it through the C config
		dc.Capture.DeviceID = unsafe.Pointer(id)
	}
	dev, err := openDevice(c, dc, func(_, in []byte, _ uint32) { q.put(in) })
	if err != nil {
		return deviceError("open", malgo.Capture, name, c.backend, err)
	}
	stop := dev.close // waits for the device thread: no callback after this
	defer stop()
	if err := dev.Start(); err != nil {
		return deviceError("start", malgo.Capture, name, c.backend, err)
	}
	log.Debug("capture started", "device", name, "backend", c.backend)

	buf := make([]int16, 0, deliverSamples)
	ready := false
	var reported uint64
	var lastWarn time.Time
	drain := func() {
		if !ready && q.callbacks.Load() > 0 {
			ready = true
			if onReady != nil {
				onReady()
			}
		}
		for {
			s := q.get(buf)
			if len(s) == 0 {
				break
			}
			onSamples(s)
		}
		if d := q.dropped.Load(); d > reported && time.Since(lastWarn) >= overrunLogEvery {
			log.Warn("capture overrun: samples dropped because the consumer was too slow",
				"dropped", d-reported, "dropped_total", d, "device", name)
			reported, lastWarn = d, time.Now()
		}
	}
	finish := func() {
		stop()
		drain()
		if d := q.dropped.Load(); d > reported {
			log.Warn("capture overrun: samples dropped because the consumer was too slow",
				"dropped", d-reported, "dropped_total", d, "device", name)
		}
	}

	silent := time.NewTimer(silentWarnAfter)
	defer silent.Stop()
	watch := time.NewTicker(watchEvery)
	defer watch.Stop()
	var seen uint64
	lastProgress := time.Now()
	for {
		select {
		case <-ctx.Done():
			finish()
			return nil
		case <-dev.stopped:
			finish()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("capture from %s device (backend %s): %w", name, c.backend, ErrDeviceStopped)
		case <-q.wake:
			drain()
		case now := <-watch.C:
			n := q.callbacks.Load()
			if n != seen {
				seen, lastProgress = n, now
				break
			}
			if n > 0 && now.Sub(lastProgress) >= stallTimeout {
				finish()
				return fmt.Errorf("capture from %s device (backend %s): no audio for %v: %w; is the device still there and the sound server running?",
					name, c.backend, stallTimeout, ErrDeviceStopped)
			}
		case <-silent.C:
			if q.callbacks.Load() == 0 {
				log.Warn("capture device delivers no audio yet", "device", name, "backend", c.backend, "waited", silentWarnAfter)
			}
		}
	}
}
