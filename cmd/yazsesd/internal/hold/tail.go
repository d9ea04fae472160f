package hold

import (
	"context"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/pcm"
)

// tail is the hold's tail: recording after the release until the
// detector hears tailQuiet of silence after it ("silence"), had heard it
// already at the release ("quiet"), the capture stream ends ("ended"), or
// the tail's maximum ("max"; also when Run's context ends). A detector
// that fails during the tail hands it to the energy detector, which hears
// the last second before the release and the tail after it. The debug
// log says which and how much audio the tail added.
type tail struct {
	done     bool // ended: the hold goes on to Collected
	start    time.Time
	released int64 // where the release came: samples fed by then
	pos      int64 // the whole windows the detector can answer of it
	max      time.Duration
	clock    *time.Timer
	detector string // which detector decides, for the debug log

	w       *waited // the Wait running, or nil
	wcancel context.CancelFunc
	// watching: the detector answered the release without silence; a
	// silence after pos ends the tail.
	watching bool
	// energy: the hold's detector failed; e decides from at on.
	energy bool
	e      Detector
	at     int64
}

// waited is what a Wait answered.
type waited struct {
	st  vadlink.State
	err error
}

func (t *tail) begin(h *hold, max time.Duration) {
	t.start, t.max = time.Now(), max
	t.released = h.fed
	t.pos = t.released - t.released%vadWindow
	t.clock = time.NewTimer(max)
	t.detector = h.deps.Detector.Engine()
	if h.micEnd {
		// Nothing more is recorded (a capture child restarted after a
		// failure is not waited for): the detector is told so, and
		// answers the release at once (the energy detector holds a
		// window back until more audio comes): quiet, or ended.
		h.audio = nil
		h.deps.Detector.End()
	}
	t.wait(h, h.deps.Detector, t.pos)
}

// timer is the channel of the tail's maximum while it runs.
func (t *tail) timer() <-chan time.Time {
	if t.clock == nil || t.done {
		return nil
	}
	return t.clock.C
}

// events are the energy detector's, once it decides the tail.
func (t *tail) events() <-chan vadlink.Event {
	if !t.energy || !t.watching || t.done {
		return nil
	}
	return t.e.Events()
}

// wait starts det.Wait(pos) on a goroutine the hold owns.
func (t *tail) wait(h *hold, det Detector, pos int64) {
	ctx, cancel := context.WithCancel(h.ctx)
	w := &waited{}
	t.w, t.wcancel = w, cancel
	h.running++
	go func() { // owned: the hold receives w before it ends (drain)
		w.st, w.err = det.Wait(ctx, pos)
		h.msgs <- w
	}()
}

// waited takes the answer of a Wait.
func (t *tail) waited(h *hold, w *waited) {
	if w != t.w || t.done {
		return // cancelled
	}
	t.w = nil
	t.wcancel()
	switch {
	case w.err == nil && w.st.Silent() >= tailQuiet:
		h.tailEnd("quiet") // the speaker had stopped: no tail
	case h.micEnd && (t.energy || w.err != nil || h.quietAt <= t.pos):
		h.tailEnd("ended") // nothing more to record
	case t.energy:
		t.watching = true
	case w.err != nil: // the detector failed
		t.toEnergy(h)
	default:
		t.watching = true
		switch {
		case h.quietAt > t.pos:
			h.tailEnd("silence") // the speaker stopped during the tail
		case h.events == nil: // the detector failed during the tail
			t.toEnergy(h)
		}
	}
}

// quiet: the hold's detector heard tailQuiet of silence at at.
func (t *tail) quiet(h *hold, at int64) {
	if t.watching && !t.energy && !t.done && at > t.pos {
		h.tailEnd("silence")
	}
}

// micEnded: the capture stream ended. Nothing more can be recorded: a
// tail whose detector answered the release ends; one still waiting for
// the answer tells the detector deciding that the audio ended (End), so
// that it answers at once (the energy detector answers a window only once
// more audio came) and the answer ends the tail.
func (t *tail) micEnded(h *hold) {
	switch {
	case t.clock == nil || t.done:
	case t.w == nil:
		h.tailEnd("ended")
	case t.energy:
		t.e.End()
	default:
		h.deps.Detector.End()
	}
}

// detectorGone: the hold's detector's events ended (it failed).
func (t *tail) detectorGone(h *hold) {
	if t.watching && !t.energy && !t.done {
		t.toEnergy(h)
	}
}

// energyEvent takes an event of the energy detector deciding the tail.
func (t *tail) energyEvent(h *hold, e vadlink.Event, ok bool) {
	switch {
	case !ok: // the energy detector cannot fail but with the daemon
		t.watching = false
	case e.Kind == vadlink.Silence && e.At > t.at:
		h.tailEnd("silence")
	}
}

// toEnergy hands the tail to the energy detector: the last second before
// the release, then the tail as it comes.
func (t *tail) toEnergy(h *hold) {
	t.energy, t.watching, t.detector = true, false, "energy"
	u := h.deps.Energy()
	if u == nil { // the daemon stops
		h.tailEnd("max")
		return
	}
	t.e = u
	base := max(0, t.released-int64(pcm.Samples(time.Second)))
	u.Feed(h.samples[base:])
	t.at = t.released - base
	t.at -= t.at % vadWindow
	t.wait(h, u, t.at)
}

// feed gives the tail's energy detector the audio as it comes.
func (t *tail) feed(s []int16) {
	if t.e != nil && !t.done {
		t.e.Feed(s)
	}
}

// stop ends what the tail started: its Wait, its energy detector, its
// timer.
func (t *tail) stop() {
	if t.w != nil {
		t.wcancel()
		t.w = nil // its answer is dropped
	}
	if t.e != nil {
		t.e.Release()
		t.e = nil
	}
	if t.clock != nil {
		t.clock.Stop()
	}
}

// tailEnd ends the tail for why.
func (h *hold) tailEnd(why string) {
	t := &h.tail
	if t.done {
		return
	}
	t.done = true
	t.stop()
	h.log.Debug("hold tail", "why", why, "tail_ms", time.Since(t.start).Milliseconds(),
		"tail_audio_ms", pcm.Duration(int(h.fed-t.released)).Milliseconds(), "max_ms", t.max.Milliseconds(), "detector", t.detector)
}
