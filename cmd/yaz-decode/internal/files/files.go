// Package files is yaz-decode's files mode: each WAV file given is read
// as a stream and transcribed, its speech spans with Silero VAD (package
// spans groups them), else in pieces of at most 30 s; the transcript goes
// to stdout, or to a file of its own in --output-dir, in the format
// asked for (package transcript).
package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/pcm"
	pieces "github.com/yazses/yazses/lib/piece"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/wav"
)

// name is the program's, on its warning and error lines.
const name = "yaz-decode"

// Recognizer is what files need of a model; a fake stands in for it in
// unit tests.
type Recognizer interface {
	Transcribe(ctx context.Context, samples []float32, opt asr.Options) (asr.Result, error)
}

// Config is what files mode works with: the flags of the command, and
// what loading the model found out.
type Config struct {
	Files       []string
	Output      string        // --format: txt, json, srt or vtt
	OutputDir   string        // --output-dir ("": stdout)
	Progress    string        // --progress: auto, always or never
	MaxDuration time.Duration // --max-duration
	Options     asr.Options   // how each piece or group is decoded
	// Lang is the language the model decodes for --language ("auto":
	// detected), the JSON's language when nothing was decoded.
	Lang     string
	VADGate  bool            // --vad-gate: decode only what holds speech
	Detector *voice.Detector // nil: the energy detector, unannounced
	VAD      voice.Config
}

// Run transcribes each file; a failed file is reported and the others
// still run. The error at the end says how many failed. Several files
// printed as text on stdout each get a header line, as head(1) prints them
// ("==> PATH <==", a blank line between files); a file with no speech
// prints nothing at all.
func (c *Config) Run(ctx context.Context, log *slog.Logger, m Recognizer, stdout, stderr io.Writer) error {
	if len(c.Files) == 1 {
		err := c.file(ctx, log, m, c.Files[0], stdout, stderr, nil)
		if err != nil && ctx.Err() != nil {
			return nil // interrupted: not an error
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.Files[0], err)
		}
		return nil
	}
	failed, headed := 0, 0
	for _, path := range c.Files {
		var header func() error
		if c.OutputDir == "" && c.Output == "txt" {
			header = func() error {
				sep := ""
				if headed > 0 {
					sep = "\n"
				}
				headed++
				_, err := fmt.Fprintf(stdout, "%s==> %s <==\n", sep, path)
				return err
			}
		}
		if err := c.file(ctx, log, m, path, stdout, stderr, header); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: not an error
			}
			failed++
			fmt.Fprintf(stderr, "%s: %s: %v\n", name, path, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files failed", failed, len(c.Files))
	}
	return nil
}

// file transcribes one file. header, if not nil, is called before its
// transcript goes to stdout, if there is one. With Silero, only the file's
// speech spans are decoded (fileSpans); otherwise the file is decoded in
// pieces of at most 30 s, each one in which the energy detector finds
// speech (or every one, with --no-vad-gate; filePieces). Either way the
// file is read as a stream: memory does not grow with its length.
func (c *Config) file(ctx context.Context, log *slog.Logger, m Recognizer, path string, stdout, stderr io.Writer, header func() error) error {
	var (
		segs  []transcript.Segment
		lang  string
		audio time.Duration
		short int64
		err   error
	)
	if c.Detector.Silero() {
		segs, lang, audio, short, err = c.fileSpans(ctx, log, m, path, stderr)
	} else {
		segs, lang, audio, short, err = c.filePieces(ctx, log, m, path, stderr)
	}
	if err != nil {
		return err
	}
	if lang == "" && c.Lang != "auto" {
		lang = c.Lang // nothing decoded
	}
	if short > 0 {
		// Not an error: the audio it holds is transcribed (exit 0), as
		// whisper-cli does; the person is told the file is incomplete.
		fmt.Fprintf(stderr, "%s: warning: %s: the file is cut short: it ends %d bytes before the audio its header declares (an interrupted download?); transcribed the %s it holds\n",
			name, path, short, seconds(audio))
	}
	doc := transcript.JSONDoc{File: path, AudioMs: audio.Milliseconds(), Language: lang, Truncated: short > 0}
	if c.OutputDir == "" {
		// Silence prints nothing, not even its header.
		if header != nil && transcript.Text(segs) != "" {
			if err := header(); err != nil {
				return err
			}
		}
		return transcript.Write(stdout, c.Output, segs, doc)
	}
	var buf bytes.Buffer
	if err := transcript.Write(&buf, c.Output, segs, doc); err != nil {
		return err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return writeAtomic(filepath.Join(c.OutputDir, base+"."+c.Output), buf.Bytes())
}

// Pieces of a file decoded without Silero (filePieces): as yazsesd sends a
// file to its decoder (lib/piece).
const (
	// pieceMax is the longest piece: whisper's window.
	pieceMax = 30 * time.Second
	// pieceSearch is the end part of a full piece in which it is cut at
	// the quietest moment.
	pieceSearch = 10 * time.Second
)

// seconds says a length in seconds to a tenth: "4.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// filePieces reads the file as a stream and decodes it in pieces of at most
// pieceMax, each cut at the quietest 100 ms of its last pieceSearch
// (lib/piece), so memory holds one piece whatever the file's length. With
// --vad-gate (the default) a piece in which the energy detector finds no
// speech is not decoded. The segments of each piece are moved onto the
// file's timeline. It returns the segments, the language decoded ("" when
// nothing was), the file's length and how many bytes it lacked (0: none;
// see fileAudio).
func (c *Config) filePieces(ctx context.Context, log *slog.Logger, m Recognizer, path string, stderr io.Writer) ([]transcript.Segment, string, time.Duration, int64, error) {
	maxSamples := int(c.MaxDuration / time.Second * pcm.SampleRate)
	src, err := openFileAudio(path, maxSamples)
	if err != nil {
		return nil, "", 0, 0, explainRead(path, err, c.MaxDuration)
	}
	defer src.Close()
	info := src.Info()
	total := fileSamples(info)
	log.Debug("file opened", "rate", info.SampleRate, "channels", info.Channels, "bits", info.BitsPerSample,
		"audio_ms", pcm.Millis(int(total)))
	bar := newProgress(stderr, c.Progress, filepath.Base(path), pcm.Duration(int(total)))
	defer bar.done()
	var (
		segs     []transcript.Segment
		lang     string
		n, done  int // pieces, pieces decoded
		decodeMs int64
		s16      []int16
	)
	cut := pieces.New(src, pcm.Samples(pieceMax), pcm.Samples(pieceSearch), 0)
	for {
		p, at, err := cut.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", 0, 0, explainRead(path, errors.Unwrap(err), c.MaxDuration)
		}
		n++
		// Said once the file has given a piece: a file that fails on
		// its input says nothing else (one line).
		c.Detector.Announce()
		if c.VADGate {
			s16 = pcm.FromFloat32(s16[:0], p)
			if !vad.HasSpeech(s16, c.VAD.Energy()) {
				log.Debug("no speech in piece: not decoded", "from_ms", pcm.Millis(int(at)), "audio_ms", pcm.Millis(len(p)))
				continue
			}
		}
		opt := c.Options
		if total > 0 {
			size := int64(len(p))
			opt.Progress = func(pct int) { bar.set(int((at + size*int64(pct)/100) * 100 / total)) }
		}
		start := time.Now()
		res, err := m.Transcribe(ctx, p, opt)
		if err != nil {
			return nil, "", 0, 0, fmt.Errorf("decode: %w", err)
		}
		done++
		decodeMs += time.Since(start).Milliseconds()
		if lang == "" {
			lang = res.Language
		}
		off := pcm.Duration(int(at))
		for _, sg := range res.Segments {
			segs = append(segs, transcript.Segment{Start: sg.Start + off, End: sg.End + off, Text: sg.Text})
		}
		log.Debug("piece decoded", "from_ms", pcm.Millis(int(at)), "audio_ms", pcm.Millis(len(p)),
			"decode_ms", time.Since(start).Milliseconds(), "segments", len(res.Segments), "audio_ctx", res.AudioCtx, "retried", res.Retried)
	}
	audio := pcm.Duration(int(cut.End()))
	if done > 0 {
		bar.set(100)
	}
	if done == 0 {
		log.Debug("no speech in file: not decoded", "audio_ms", audio.Milliseconds())
	} else {
		log.Debug("file decoded", "audio_ms", audio.Milliseconds(), "pieces", n, "decoded", done,
			"decode_ms", decodeMs, "segments", len(segs))
	}
	return segs, lang, audio, src.Short(), nil
}

// explainRead turns a read error into one line that says what to do.
func explainRead(path string, err error, maxDur time.Duration) error {
	switch {
	case errors.Is(err, wav.ErrEmpty):
		// No converter finds audio in it either: no advice to convert.
		return fmt.Errorf("the file is empty (0 bytes): it holds no audio: %w", err)
	case errors.Is(err, wav.ErrNotWAV), errors.Is(err, wav.ErrUnsupported):
		q := shellQuote(path)
		return fmt.Errorf("%v; convert it to 16 kHz mono first, e.g.: ffmpeg -i %s -ar 16000 -ac 1 -f wav - | yaz-decode   or: sox %s -t raw -r 16000 -c 1 -b 16 -e signed - | yaz-decode", err, q, q)
	case errors.Is(err, wav.ErrTooLarge):
		return fmt.Errorf("longer than --max-duration %s: %w", maxDur, err)
	}
	return err
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeAtomic writes data to path through a temporary file and a rename, so
// a reader never sees half a transcript.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// progress draws a one-line bar on stderr while a file decodes.
type progress struct {
	w     io.Writer
	label string
	on    bool
	last  int
	start time.Time
	audio time.Duration
}

func newProgress(stderr io.Writer, mode, label string, audio time.Duration) *progress {
	on := mode == "always" || (mode == "auto" && cli.IsTerminal(stderr) && audio > 30*time.Second)
	return &progress{w: stderr, label: label, on: on, last: -1, start: time.Now(), audio: audio}
}

// set draws pct. whisper.cpp's progress callback runs at the top of each
// window, before its end-of-audio check, so it reports more than 100 % when
// a window's seek jumps past the end: every value is clamped to 0–100.
func (p *progress) set(pct int) {
	pct = min(max(pct, 0), 100)
	if !p.on || pct == p.last {
		return
	}
	p.last = pct
	const width = 30
	n := pct * width / 100
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %s", p.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), pct,
		time.Since(p.start).Round(time.Second))
}

func (p *progress) done() {
	if p.on && p.last >= 0 {
		fmt.Fprintln(p.w)
	}
}
