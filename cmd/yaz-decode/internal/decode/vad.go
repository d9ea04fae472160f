package decode

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
)

// detector is the voice-activity detector of a run: Silero VAD (package
// silero, whisper.cpp's trained detector) when model is set, else the
// energy detector (package vad). A nil *detector is the energy detector,
// unannounced.
type detector struct {
	model *silero.Model
	once  sync.Once
	say   func() // the one INFO record that says which detector runs
}

// silero reports whether Silero VAD decides what is speech.
func (d *detector) silero() bool { return d != nil && d.model != nil }

// announce says once which detector runs. It is called where the detector
// is first needed (a stream's start, a file that could be read), so a run
// that fails on its input says nothing else.
func (d *detector) announce() {
	if d != nil && d.say != nil {
		d.once.Do(d.say)
	}
}

// Close frees the Silero model, if there is one.
func (d *detector) Close() error {
	if d.silero() {
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
	// streamGateDB: on a live stream, 32 ms windows at or below this RMS
	// level (a quiet room's noise floor) skip the network once the
	// detector has idled for 512 ms (silero.QuietSkip). The energy detector
	// never takes anything below −50 dBFS for speech.
	streamGateDB = -60
	// filePad widens each speech span of a file (whisper.cpp's default is
	// 30 ms; a little more keeps soft word edges, at 5 encoder positions a
	// span).
	filePad = 100 * time.Millisecond
	// fileMaxSpan splits a longer span at its last pause of more than
	// 98 ms (or where it is, as whisper.cpp does), so every span, padded,
	// fits one of whisper's 30 s windows.
	fileMaxSpan = 28 * time.Second
)

// openDetector picks the detector that --vad and --vad-model ask for and
// loads it; its announce says once on stderr (one INFO record) which one
// runs. A mode that needs none (files or serve with --no-vad-gate) gets
// none (nil).
// A Silero model that cannot be used is a startup error with its cause:
// vad_model_missing when --vad silero finds no file, vad_model_invalid for
// a file that is there and is no Silero VAD model (with auto too: a broken
// download is reported, not silently replaced by the energy detector).
func (c *settings) openDetector(log *slog.Logger) (*detector, error) {
	stream := len(c.Files) == 0 && !c.framed
	if !stream && !c.VADGate {
		return nil, nil
	}
	switch c.VAD {
	case "energy":
		return &detector{say: func() { log.Info("voice detector: energy (--vad energy)", "vad", "energy") }}, nil
	case "auto", "":
		if _, err := os.Stat(c.VADModel); errors.Is(err, fs.ErrNotExist) {
			return &detector{say: func() {
				log.Info("voice detector: energy; for the trained detector (fewer false starts in noise), fetch its model: yaz-fetch-model "+
					modelfile.DefaultVADName, "vad", "energy", "vad_model", c.VADModel)
			}}, nil
		}
	}
	gate := silero.DigitalSilence
	if stream {
		gate = silero.QuietSkip{Level: streamGateDB}
	}
	m, err := silero.Load(c.VADModel, silero.Options{Threads: 1, Verbose: c.Debug(), Skip: gate})
	if err != nil {
		cause := causeVADModelInvalid
		if errors.Is(err, modelfile.ErrMissing) {
			cause = causeVADModelMissing
		}
		return nil, &startupError{cause: cause, msg: err.Error(), err: err}
	}
	return &detector{model: m, say: func() {
		log.Info("voice detector: Silero VAD", "vad", "silero", "vad_model", c.VADModel, "kind", m.Describe())
	}}, nil
}

// vadParams are the Silero settings from the flags, the base of every
// mode's: whisper.cpp's defaults (what whisper-cli --vad uses) with
// --vad-threshold. vad-stream applies only these.
func (c *settings) vadParams() vadspan.Params {
	p := vadspan.DefaultParams()
	p.Threshold = c.VADThreshold
	return p
}

// streamParams are the Silero parameters of stream mode and of serve
// mode's "was anything said?": the user's --min-speech and --min-silence,
// a wider pad.
func (c *settings) streamParams() vadspan.Params {
	p := c.vadParams()
	p.MinSpeech = c.MinSpeech
	p.MinSilence = c.MinSilence
	p.SpeechPad = streamPad
	return p
}

// fileParams are the Silero parameters for files: a wider pad and a
// longest span.
func (c *settings) fileParams() vadspan.Params {
	p := c.vadParams()
	p.SpeechPad = filePad
	p.MaxSpeech = fileMaxSpan
	return p
}

// cutter is what stream mode needs of a detector: vad.Cutter, and a
// detector failure.
type cutter interface {
	vad.Cutter
	Err() error
	Close() error
}

// energyCutter is the energy detector as a cutter: it never fails.
type energyCutter struct{ *vad.Segmenter }

func (energyCutter) Err() error   { return nil }
func (energyCutter) Close() error { return nil }

// newCutter cuts stream mode's utterances with the run's detector.
func (c *settings) newCutter() (cutter, error) {
	if !c.det.silero() {
		return energyCutter{vad.NewSegmenter(c.vadConfig())}, nil
	}
	s, err := c.det.model.NewSegmenter(c.streamParams(), 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// hasSpeech is serve mode's "was anything said?": Silero finds a span, or
// the energy detector's rule holds. A Silero failure (whisper.cpp out of
// memory) is an error; the caller then decodes rather than drop speech.
func (c *settings) hasSpeech(ctx context.Context, samples []int16) (bool, error) {
	if !c.det.silero() {
		return vad.HasSpeech(samples, c.vadConfig()), nil
	}
	spans, err := c.det.model.Spans(ctx, pcm.ToFloat32(nil, samples), c.streamParams())
	return len(spans) > 0, err
}
