package tts

// The supervised speak protocol of `yaz-speak --serve` (docs/design.md,
// "Supervised speak"). Both sides exchange NDJSON: one compact JSON object per
// line. The daemon writes Requests to the speaker's stdin; the speaker answers
// each with Events on its stdout, in request order:
//
//	{"id":"q1","text":"An MCP client asks: ready?"}
//	{"id":"q1","event":"started","audible":true,"audio_ms":1850}
//	{"id":"q1","event":"done","audible":true}
//
// "started" means the first audio was handed to the output device, not
// heard: a sound server may hold it back for a while (an idle PulseAudio
// null sink started playing 1.9 s later). "done" means the device has
// played the last sample, and is sent as soon as it has, before the
// speaker closes the device; a reader that must not hear the utterance
// (the daemon listening for an answer) waits for "done", not for "started"
// plus audio_ms.
//
// or, when it fails, one "failed" event (after "started" when the failure
// came after audio reached the device):
//
//	{"id":"q2","event":"failed","audible":false}
//
// A failed event with Audible false is the proof of a pre-output failure that
// lets the gate release a reserved slot; every other outcome may have been
// heard.

// Request asks the speaker to say Text. ID is the caller's and comes back on
// every event of this request.
//
// A request with Cue instead of Text plays a sound cue (CueStart,
// CueEnd): a short tone the speaker generates, with the same events.
type Request struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Cue  string `json:"cue,omitempty"`
}

// The sound cues of Request.Cue (dictation.cues): a hold starts listening,
// a hold's recording ended.
const (
	CueStart = "start"
	CueEnd   = "end"
)

// Event reports the progress of one request.
type Event struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	// Audible is true once any sample of the request has been handed to the
	// output device. On a "failed" event, false proves that nothing was
	// played.
	Audible bool `json:"audible"`
	// AudioMs is the length of the utterance's audio, on "started" only.
	// It is not when playback ends: the device may start playing late;
	// "done" tells that.
	AudioMs int64 `json:"audio_ms,omitempty"`
}

// The values of Event.Event.
const (
	// EventStarted is sent once the first audio buffer has been handed to the
	// output device. It always has Audible true.
	EventStarted = "started"
	// EventDone is sent when all audio of the request has been played:
	// the output device has played the last sample (measured from its
	// own requests for data), before the speaker closes the device.
	EventDone = "done"
	// EventFailed is sent instead of EventDone when the request could not be
	// spoken in full: a malformed request, no text, a synthesis failure, a
	// device failure, or a cancel.
	EventFailed = "failed"
)

// MaxLineBytes is the longest request line a speaker reads; longer lines are
// answered with EventFailed.
const MaxLineBytes = 1 << 20

// ReadyFDEnv names the environment variable that carries the readiness file
// descriptor of a supervised speaker: once it is ready to take requests it
// writes "\n" to that descriptor and closes it.
const ReadyFDEnv = "YAZ_READY_FD"
