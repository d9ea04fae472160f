// Package voice is yaz-decode's voice-activity detector: Silero VAD
// (package silero, whisper.cpp's trained detector) when its model is
// there, else the energy detector (package vad); which one a run takes
// and the one record that says so; the detector's settings for each mode
// (streams, serve's check, files, vad-stream); a stream's utterance
// cutter; and serve's "was anything said?".
package voice

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/startup"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
)

// Config is the detector's settings, from the flags.
type Config struct {
	VAD       string  // --vad: auto, silero or energy
	Model     string  // --vad-model: the Silero model file
	Threshold float32 // --vad-threshold
	// MinSpeech and MinSilence are --min-speech and --min-silence: they
	// cut a stream into utterances and say whether a served utterance
	// holds speech.
	MinSpeech, MinSilence time.Duration
	Verbose               bool // whisper.cpp's own log lines (--log-level debug)
}

// Detector is the voice-activity detector of a run: Silero VAD when it
// holds a model, else the energy detector. A nil *Detector is the energy
// detector, unannounced.
type Detector struct {
	model *silero.Model
	once  sync.Once
	say   func() // the one INFO record that says which detector runs
}

// New is Silero VAD with the model m, unannounced (tests, benchmarks);
// Close closes m.
func New(m *silero.Model) *Detector { return &Detector{model: m} }

// Silero reports whether Silero VAD decides what is speech.
func (d *Detector) Silero() bool { return d != nil && d.model != nil }

// Announce says once which detector runs. It is called where the detector
// is first needed (a stream's start, a file that could be read), so a run
// that fails on its input says nothing else.
func (d *Detector) Announce() {
	if d != nil && d.say != nil {
		d.once.Do(d.say)
	}
}

// Close frees the Silero model, if there is one.
func (d *Detector) Close() error {
	if d.Silero() {
		return d.model.Close()
	}
	return nil
}

// The Silero settings of each mode, besides --vad-threshold and, in stream
// mode and for serve mode's check, --min-speech and --min-silence.
const (
	// streamPad widens each utterance on both sides (the energy detector
	// keeps 300 ms before and 200 ms after): the first and last syllables'
	// soft edges are kept. With --min-silence at 400 ms or more it delays
	// no end.
	streamPad = 200 * time.Millisecond
	// StreamGateDB: on a live stream, 32 ms windows at or below this RMS
	// level (a quiet room's noise floor) skip the network once the
	// detector has idled for 512 ms (silero.QuietSkip). The energy detector
	// never takes anything below −50 dBFS for speech.
	StreamGateDB = -60
	// FilePad widens each speech span of a file (whisper.cpp's default is
	// 30 ms; a little more keeps soft word edges, at 5 encoder positions a
	// span).
	FilePad = 100 * time.Millisecond
	// FileMaxSpan splits a longer span at its last pause of more than
	// 98 ms (or where it is, as whisper.cpp does), so every span, padded,
	// fits one of whisper's 30 s windows.
	FileMaxSpan = 28 * time.Second
)

// Open picks the detector that --vad and --vad-model ask for and loads
// it; its Announce says once on stderr (one INFO record) which one runs.
// live is a stream on stdin: quiet windows skip the network there.
// A Silero model that cannot be used is a startup error with its cause:
// vad_model_missing when --vad silero finds no file, vad_model_invalid for
// a file that is there and is no Silero VAD model (with auto too: a broken
// download is reported, not silently replaced by the energy detector).
func Open(log *slog.Logger, c Config, live bool) (*Detector, error) {
	switch c.VAD {
	case "energy":
		return &Detector{say: func() { log.Info("voice detector: energy (--vad energy)", "vad", "energy") }}, nil
	case "auto", "":
		if _, err := os.Stat(c.Model); errors.Is(err, fs.ErrNotExist) {
			return &Detector{say: func() {
				log.Info("voice detector: energy; for the trained detector (fewer false starts in noise), fetch its model: yaz-fetch-model "+
					modelfile.DefaultVADName, "vad", "energy", "vad_model", c.Model)
			}}, nil
		}
	}
	gate := silero.DigitalSilence
	if live {
		gate = silero.QuietSkip{Level: StreamGateDB}
	}
	m, err := Load(c, gate)
	if err != nil {
		return nil, err
	}
	return &Detector{model: m, say: func() {
		log.Info("voice detector: Silero VAD", "vad", "silero", "vad_model", c.Model, "kind", m.Describe())
	}}, nil
}

// Load loads the Silero model at --vad-model, run on one thread, with
// the gate skip (the zero QuietSkip: none). A model that cannot be used
// is a startup error: vad_model_missing for a missing file,
// vad_model_invalid for a file that is no Silero VAD model.
func Load(c Config, skip silero.QuietSkip) (*silero.Model, error) {
	m, err := silero.Load(c.Model, silero.Options{Threads: 1, Verbose: c.Verbose, Skip: skip})
	if err != nil {
		cause := startup.VADModelInvalid
		if errors.Is(err, modelfile.ErrMissing) {
			cause = startup.VADModelMissing
		}
		return nil, &startup.Error{Cause: cause, Msg: err.Error(), Err: err}
	}
	return m, nil
}

// Params are the Silero settings from the flags, the base of every
// mode's: whisper.cpp's defaults (what whisper-cli --vad uses) with
// --vad-threshold. vad-stream applies only these.
func (c Config) Params() vadspan.Params {
	p := vadspan.DefaultParams()
	p.Threshold = c.Threshold
	return p
}

// StreamParams are the Silero parameters of stream mode and of serve
// mode's "was anything said?": the user's --min-speech and --min-silence,
// a wider pad.
func (c Config) StreamParams() vadspan.Params {
	p := c.Params()
	p.MinSpeech = c.MinSpeech
	p.MinSilence = c.MinSilence
	p.SpeechPad = streamPad
	return p
}

// FileParams are the Silero parameters for files: a wider pad and a
// longest span.
func (c Config) FileParams() vadspan.Params {
	p := c.Params()
	p.SpeechPad = FilePad
	p.MaxSpeech = FileMaxSpan
	return p
}

// Energy is the energy detector's configuration: its defaults with
// --min-speech and --min-silence.
func (c Config) Energy() vad.Config {
	v := vad.DefaultConfig()
	v.MinSpeech = c.MinSpeech
	v.MinSilence = c.MinSilence
	return v
}

// Cutter is what stream mode needs of a detector: vad.Cutter, and a
// detector failure.
type Cutter interface {
	vad.Cutter
	Err() error
	Close() error
}

// energyCutter is the energy detector as a Cutter: it never fails.
type energyCutter struct{ *vad.Segmenter }

func (energyCutter) Err() error   { return nil }
func (energyCutter) Close() error { return nil }

// NewCutter cuts stream mode's utterances with the detector.
func (d *Detector) NewCutter(c Config) (Cutter, error) {
	if !d.Silero() {
		return energyCutter{vad.NewSegmenter(c.Energy())}, nil
	}
	s, err := d.model.NewSegmenter(c.StreamParams(), 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// NewFileStream runs a file's samples through Silero VAD, with the
// settings for files (FileParams). Only a Detector that is Silero has
// one.
func (d *Detector) NewFileStream(c Config) (*silero.Stream, error) {
	if !d.Silero() {
		return nil, errors.New("the energy detector has no span stream")
	}
	return d.model.NewStream(c.FileParams())
}

// HasSpeech is serve mode's "was anything said?": Silero finds a span, or
// the energy detector's rule holds. A Silero failure (whisper.cpp out of
// memory) is an error; the caller then decodes rather than drop speech.
func (d *Detector) HasSpeech(ctx context.Context, c Config, samples []int16) (bool, error) {
	if !d.Silero() {
		return vad.HasSpeech(samples, c.Energy()), nil
	}
	spans, err := d.model.Spans(ctx, pcm.ToFloat32(nil, samples), c.StreamParams())
	return len(spans) > 0, err
}
