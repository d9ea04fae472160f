package audio

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"

	"github.com/yazses/yazses/lib/pcm"
)

// drainFrames is how much silence the device must have asked for after the
// last real sample before that sample counts as played: the whole device
// buffer plus one period of margin for the server's own latency.
const drainFrames = (playPeriods + 1) * playPeriodFrames

// player is the state the playback data callback works on. Every field the
// callback writes is atomic: miniaudio may call it from the goroutine in
// Start (pre-fill) and then from its own thread.
type player struct {
	samples []int16
	drain   int64

	calls     atomic.Int64 // data callbacks seen
	pos       atomic.Int64 // samples handed to the device
	tail      atomic.Int64 // silent frames handed after the last sample
	startSent atomic.Bool
	doneSent  atomic.Bool
	started   chan struct{} // closed after the first real samples
	done      chan struct{} // closed once the buffer has drained
}

func newPlayer(samples []int16, drain int64) *player {
	return &player{samples: samples, drain: drain, started: make(chan struct{}), done: make(chan struct{})}
}

// fill is the data callback: it copies the next samples into out (s16le)
// and pads the rest with silence.
func (p *player) fill(out []byte) {
	p.calls.Add(1)
	frames := len(out) / 2
	pos := int(p.pos.Load())
	k := min(frames, len(p.samples)-pos)
	for i := 0; i < k; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(p.samples[pos+i]))
	}
	clear(out[2*k:])
	if k > 0 {
		p.pos.Store(int64(pos + k))
		if p.startSent.CompareAndSwap(false, true) {
			close(p.started)
		}
	}
	if pos+k == len(p.samples) {
		if p.tail.Add(int64(frames-k)) >= p.drain && p.doneSent.CompareAndSwap(false, true) {
			close(p.done)
		}
	}
}

// Play plays 16 kHz mono s16 samples on the playback device. started, if
// non-nil, is called once, right after the first data callback has copied
// real samples to the device (before Play returns whenever any sample was
// handed over). Play returns the number of samples handed to the device. It
// returns early with ctx.Err() when ctx is cancelled, stopping playback at
// once (barge-in). Otherwise it returns once the device has played the last
// sample: the device asked for a full buffer of silence after it, and at
// least the playing time of the samples has passed since the start.
func Play(ctx context.Context, cfg Config, samples []int16, started func()) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(samples) == 0 {
		return 0, nil
	}
	c, err := openContext(cfg)
	if err != nil {
		return 0, err
	}
	defer c.close()
	id, name, err := c.resolve(malgo.Playback, cfg.Device)
	if err != nil {
		return 0, err
	}

	p := newPlayer(samples, drainFrames)

	dc := malgo.DefaultDeviceConfig(malgo.Playback)
	dc.Playback.Format = malgo.FormatS16
	dc.Playback.Channels = pcm.Channels
	dc.SampleRate = pcm.SampleRate
	dc.PeriodSizeInFrames = playPeriodFrames
	dc.Periods = playPeriods
	dc.Pulse.StreamNamePlayback = "yazses speech"
	var pin runtime.Pinner
	defer pin.Unpin()
	if id != nil {
		pin.Pin(id)
		dc.Playback.DeviceID = unsafe.Pointer(id)
	}
	dev, err := openDevice(c, dc, func(out, _ []byte, _ uint32) { p.fill(out) })
	if err != nil {
		return 0, deviceError("open", malgo.Playback, name, c.backend, err)
	}
	stop := func() int {
		dev.close() // no callback after this
		return int(p.pos.Load())
	}
	defer stop()

	startedCalled := false
	callStarted := func() {
		if !startedCalled {
			startedCalled = true
			if started != nil {
				started()
			}
		}
	}
	// finishStarted calls started if samples reached the device but the
	// signal has not been handled yet: a caller must never miss that audio
	// may have been heard.
	finishStarted := func(n int) {
		if n > 0 {
			callStarted()
		}
	}

	begin := time.Now()
	if err := dev.Start(); err != nil {
		n := stop()
		finishStarted(n)
		return n, deviceError("start", malgo.Playback, name, c.backend, err)
	}
	startedCh := p.started
	watch := time.NewTicker(watchEvery)
	defer watch.Stop()
	var seen int64
	lastProgress := time.Now()
	for {
		select {
		case now := <-watch.C:
			if n := p.calls.Load(); n != seen {
				seen, lastProgress = n, now
				break
			}
			if now.Sub(lastProgress) >= stallTimeout {
				n := stop()
				finishStarted(n)
				return n, fmt.Errorf("play on %s device (backend %s): no progress for %v after %d of %d samples: %w; is the device still there and the sound server running?",
					name, c.backend, stallTimeout, n, len(samples), ErrDeviceStopped)
			}
		case <-ctx.Done():
			n := stop()
			finishStarted(n)
			return n, ctx.Err()
		case <-startedCh:
			startedCh = nil
			begin = time.Now()
			callStarted()
		case <-dev.stopped:
			n := stop()
			finishStarted(n)
			return n, fmt.Errorf("play on %s device (backend %s) after %d of %d samples: %w", name, c.backend, n, len(samples), ErrDeviceStopped)
		case <-p.done:
			callStarted()
			// A backend may ask for data faster than it plays: never
			// return before the audio's own length has passed.
			if wait := time.Until(begin.Add(pcm.Duration(len(samples)))); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					n := stop()
					return n, ctx.Err()
				case <-t.C:
				}
			}
			return stop(), nil
		}
	}
}
