package audio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"

	"github.com/yazses/yazses/lib/pcm"
)

// drainFrames is how much silence the device must have asked for after the
// last real sample before that sample counts as played, on a backend whose
// buffer Play cannot see: the whole device buffer plus one period of
// margin for the server's own latency.
const drainFrames = (playPeriods + 1) * playPeriodFrames

// player is the state the playback data callback works on. Every field the
// callback writes is atomic: miniaudio may call it from the goroutine in
// Start (pre-fill) and then from its own thread.
type player struct {
	samples []int16
	// drain is the silence the device must ask for after the last sample
	// before that sample counts as played; it may be set after the device
	// started (math.MaxInt64 until then: never).
	drain atomic.Int64

	calls     atomic.Int64 // data callbacks seen
	pos       atomic.Int64 // samples handed to the device
	requested atomic.Int64 // frames handed to the device, silence included
	tail      atomic.Int64 // silent frames handed after the last sample
	startSent atomic.Bool
	doneSent  atomic.Bool
	started   chan struct{} // closed after the first real samples
	done      chan struct{} // closed once the buffer has drained
}

func newPlayer(samples []int16, drain int64) *player {
	p := &player{samples: samples, started: make(chan struct{}), done: make(chan struct{})}
	p.drain.Store(drain)
	return p
}

// fill is the data callback: it copies the next samples into out (s16le)
// and pads the rest with silence.
func (p *player) fill(out []byte) {
	p.calls.Add(1)
	frames := len(out) / 2
	p.requested.Add(int64(frames))
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
		p.tail.Add(int64(frames - k))
		p.checkDrained()
	}
}

// setDrain sets the drain threshold and reports the end of playback at once
// if the device already asked for that much silence.
func (p *player) setDrain(frames int64) {
	p.drain.Store(frames)
	if p.pos.Load() == int64(len(p.samples)) {
		p.checkDrained()
	}
}

// checkDrained closes done, once, when the device has asked for drain
// frames of silence after the last sample.
func (p *player) checkDrained() {
	if p.tail.Load() >= p.drain.Load() && p.doneSent.CompareAndSwap(false, true) {
		close(p.done)
	}
}

// drainFor is the silence after the last sample that proves it played, for
// a device that was handed prefill frames while it started. PulseAudio asks
// for exactly what its stream buffer can take: miniaudio fills the whole
// buffer before it starts the stream (prefill), and from then on the server
// asks for as many frames as it has played out of it. Once it has asked
// for a buffer's worth of silence after the last sample, that sample has
// left the buffer: it went to the sink (the null sink's monitor records it
// there). Other backends fill their buffer from their own thread, where
// its size cannot be told from the calls: for them, drainFrames.
func drainFor(backend string, prefill int64) int64 {
	if backend == "pulseaudio" && prefill > 0 {
		return prefill
	}
	return drainFrames
}

// Play plays 16 kHz mono s16 samples on the playback device.
//
// started, if non-nil, is called once, right after the first data callback
// has copied real samples to the device (before Play returns whenever any
// sample was handed over). That is when the audio was handed over, not when
// it is heard: a sound server may hold it for a while (an idle PulseAudio
// null sink starts playing 0.2-2 s later).
//
// played, if non-nil, is called once the device has played the last sample,
// measured from the device's own requests for data: it asked for enough
// silence after the last sample to have played its buffer out (see
// drainFor), and at least the playing time of the samples has passed since
// the first of them was handed over. It is called from Play's goroutine
// before the device is closed (closing a PulseAudio stream takes up to a
// second or two more) and only when Play then returns nil.
//
// Play returns the number of samples handed to the device. It returns early
// with ctx.Err() when ctx is cancelled, stopping playback at once
// (barge-in). Otherwise it returns after played, once the device is closed.
func Play(ctx context.Context, cfg Config, samples []int16, started, played func()) (int, error) {
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

	p := newPlayer(samples, math.MaxInt64)

	dc := malgo.DefaultDeviceConfig(malgo.Playback)
	dc.Playback.Format = malgo.FormatS16
	dc.Playback.Channels = pcm.Channels
	dc.SampleRate = pcm.SampleRate
	dc.PeriodSizeInFrames = playPeriodFrames
	dc.Periods = playPeriods
	// The callback gets exactly what the backend asks for, so the frames
	// it hands over are the frames the device took (no read-ahead in
	// miniaudio's own buffer): what the drain is measured with.
	dc.NoFixedSizedCallback = 1
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
	prefill := p.requested.Load()
	drain := drainFor(c.backend, prefill)
	p.setDrain(drain)
	log := cfg.logger()
	log.Debug("playback started", "backend", c.backend, "prefill_ms", pcm.Millis(int(prefill)), "drain_ms", pcm.Millis(int(drain)))
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
			// report the end before the audio's own length has passed.
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
			after := time.Since(begin)
			log.Debug("played out", "backend", c.backend, "audio_ms", pcm.Millis(len(samples)),
				"after_ms", after.Milliseconds(), "late_ms", (after - pcm.Duration(len(samples))).Milliseconds())
			if played != nil {
				played()
			}
			return stop(), nil
		}
	}
}
