package vadspan

// EventKind tells a span's start from its end.
type EventKind uint8

// The events of a Tracker.
const (
	SpeechStart EventKind = iota + 1 // a span starts at Event.At
	SpeechEnd                        // the open span ends at Event.At
)

func (k EventKind) String() string {
	switch k {
	case SpeechStart:
		return "start"
	case SpeechEnd:
		return "end"
	}
	return "?"
}

// Event is a settled span boundary: At is a sample offset of the stream,
// padding included. It lies before the audio that settled it, by about
// MinSpeech plus SpeechPad for a start (more when probabilities linger
// between the thresholds) and the longer of MinSilence and the merge gap
// for an end: keep that audio (see Tracker.Earliest).
type Event struct {
	Kind EventKind
	At   int64
}

// group is a span in the making: raw spans merged (or to be merged), not
// yet padded.
type group struct {
	s, e    int64 // raw start; raw end of the members pushed so far
	members bool  // a member has been pushed
	pending bool  // the open raw span will be pushed into this group
	pendLB  int64 // a lower bound of where the pending member ends
	closed  bool  // no later raw span can merge into it
	started bool  // SpeechStart reported
}

// lb is a lower bound of the group's final raw end.
func (g *group) lb() int64 {
	e := g.s
	if g.members {
		e = g.e
	}
	if g.pending && g.pendLB > e {
		e = g.pendLB
	}
	return e
}

// Tracker finds spans on a stream, one probability at a time, reporting
// exactly what Spans reports for the whole stream (see the package
// comment). It is not safe for concurrent use.
type Tracker struct {
	r       resolved
	a       stageA
	raws    []raw
	gs      []*group // spans not yet ended, in order: closed ones (kept), then maybe the open one
	hasPrev bool     // a span has ended
	prevE   int64    // its raw end, for the next start's padding
	pendID  int64    // the open raw span that is pending in a group (stageA.reopenings), 0 none
	flushed bool
	ev      []Event
}

// NewTracker returns a Tracker at the start of a stream.
func NewTracker(p Params) *Tracker {
	return &Tracker{r: p.resolve(), ev: make([]Event, 0, 4)}
}

// Reset starts a new stream (sample offsets count from 0 again).
func (t *Tracker) Reset() { *t = Tracker{r: t.r, ev: t.ev[:0], raws: t.raws[:0]} }

// Push takes the probabilities of the next windows and returns the events
// they settle, or nil. The slice is reused by the next call.
func (t *Tracker) Push(probs ...float32) []Event {
	t.ev = t.ev[:0]
	if t.flushed {
		return nil
	}
	for _, p := range probs {
		t.raws = t.a.step(&t.r, p, t.raws[:0])
		for _, r := range t.raws {
			t.push(r)
		}
		t.assign()
		t.settle()
	}
	return t.ev
}

// Flush ends the stream: it returns the events still open, so that every
// span has ended. Later Pushes are ignored until Reset.
func (t *Tracker) Flush() []Event {
	t.ev = t.ev[:0]
	if t.flushed {
		return nil
	}
	audioLen := t.a.n * Window
	if t.a.hasCurr && audioLen-t.a.currStart > t.r.minSpeech {
		t.push(raw{t.a.currStart, audioLen})
	}
	t.a.hasCurr, t.a.isSpeech = false, false
	t.flushed = true
	t.settle()
	return t.ev
}

// Speaking reports whisper.cpp's raw state after the last window: a span is
// open (a window reached Threshold and MinSilence below NegThreshold has
// not yet followed). It reacts at once, before a span is settled, and may
// yet turn out to be too short to count.
func (t *Tracker) Speaking() bool { return t.a.isSpeech }

// InSpan reports whether a SpeechStart has been reported without its
// SpeechEnd.
func (t *Tracker) InSpan() bool { return len(t.gs) > 0 && t.gs[0].started }

// Pos is the stream's length so far in samples: windows times Window.
func (t *Tracker) Pos() int64 { return t.a.n * Window }

// Earliest is the earliest sample a later SpeechStart can name: audio
// before it is no longer needed for a span that has not started.
func (t *Tracker) Earliest() int64 {
	for _, g := range t.gs {
		if !g.started {
			return clampSub(g.s, t.r.pad)
		}
	}
	if t.a.hasCurr {
		return clampSub(t.a.currStart, t.r.pad)
	}
	return clampSub(t.a.n*Window, t.r.pad)
}

// open is the group raw spans may still join, or nil.
func (t *Tracker) open() *group {
	if n := len(t.gs); n > 0 && !t.gs[n-1].closed {
		return t.gs[n-1]
	}
	return nil
}

// push adds a raw span, as whisper.cpp's merge step would.
func (t *Tracker) push(r raw) {
	if g := t.open(); g != nil {
		if g.pending {
			// r is the open raw span that was sure to come.
			if !g.members {
				g.s = r.s
			}
			g.e, g.members, g.pending, t.pendID = r.e, true, false, 0
			return
		}
		if r.s-g.e < mergeGap {
			g.e = r.e
			return
		}
		t.close(g)
	}
	t.gs = append(t.gs, &group{s: r.s, e: r.e, members: true})
}

// assign puts the open raw span into a group once it is sure to be pushed,
// so that its span can start before it ends.
func (t *Tracker) assign() {
	a := &t.a
	if !a.hasCurr {
		return
	}
	if t.pendID == a.reopenings {
		if g := t.open(); g != nil && g.pending {
			g.pendLB = a.endBound(&t.r)
		}
		return
	}
	if !a.sure(&t.r) {
		return
	}
	g := t.open()
	if g != nil && a.currStart-g.e < mergeGap {
		g.pending = true
	} else {
		if g != nil {
			t.close(g)
		}
		g = &group{s: a.currStart, pending: true}
		t.gs = append(t.gs, g)
	}
	g.pendLB = a.endBound(&t.r)
	t.pendID = a.reopenings
}

// close ends merging into g and drops it if it is too short.
func (t *Tracker) close(g *group) {
	g.closed = true
	if g.e-g.s < t.r.minSpeech {
		// Never started: a started group was sure to be long enough.
		t.gs = t.gs[:len(t.gs)-1]
	}
}

// frontier is the earliest start a raw span not yet pushed can have.
func (t *Tracker) frontier() int64 {
	if t.a.hasCurr {
		return t.a.currStart
	}
	return t.a.n * Window
}

// settle closes what can no longer change and reports it.
func (t *Tracker) settle() {
	if g := t.open(); g != nil && !g.pending && (t.flushed || t.frontier() >= g.e+mergeGap) {
		t.close(g)
	}
	for len(t.gs) > 0 {
		g := t.gs[0]
		if !g.started {
			if !g.closed && g.lb()-g.s < t.r.minSpeech {
				return
			}
			t.ev = append(t.ev, Event{SpeechStart, t.padStart(g.s)})
			g.started = true
		}
		if !g.closed {
			return
		}
		at, ok := t.padEnd(g)
		if !ok {
			return
		}
		t.ev = append(t.ev, Event{SpeechEnd, at})
		t.hasPrev, t.prevE = true, g.e
		t.gs[0] = nil
		t.gs = t.gs[1:]
	}
}

// padStart is the padded start of the span after the last one that ended.
func (t *Tracker) padStart(s int64) int64 {
	if t.hasPrev {
		if gap := s - t.prevE; gap < 2*t.r.pad {
			return clampSub(s, gap/2)
		}
	}
	return clampSub(s, t.r.pad)
}

// padEnd is the padded end of the closed span g = t.gs[0], once the next
// span's start (or that there is none close by) is known.
func (t *Tracker) padEnd(g *group) (int64, bool) {
	pad := t.r.pad
	if len(t.gs) > 1 {
		nx := t.gs[1]
		switch {
		case nx.closed || nx.lb()-nx.s >= t.r.minSpeech: // the next span, surely
			if gap := nx.s - g.e; gap < 2*pad {
				return g.e + gap/2, true
			}
		case nx.s < g.e+2*pad: // it may yet be dropped
			return 0, false
		}
	} else if !t.flushed && t.frontier() < g.e+2*pad {
		return 0, false
	}
	audioLen := t.a.n * Window
	if !t.flushed && audioLen < g.e+pad {
		return 0, false
	}
	return min(g.e+pad, audioLen), true
}
