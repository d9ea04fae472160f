// Package tts turns text into speech with the espeak-ng program, and holds the
// types of the supervised speak protocol shared by `yaz-speak --serve` and the
// daemon.
//
// Synthesize runs espeak-ng once per utterance: the text goes in on stdin
// (never on the command line, never through a shell, so a text that starts
// with "-" is never taken for a flag), espeak-ng's WAV comes back on stdout and
// is converted to the YazSes wire format (see package pcm): 16 kHz mono s16.
// espeak-ng runs in its own process group, and the whole group is killed when
// the context is cancelled; a cancel while espeak-ng's output is being
// converted returns at once too.
//
// The package is pure Go (no cgo) so that binaries built with CGO_ENABLED=0
// can use its protocol types. Errors never contain the text being spoken.
package tts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/wav"
)

// Options choose how espeak-ng speaks.
type Options struct {
	// Voice is an espeak-ng voice name such as "en-us" or "en-us+f3"
	// (`espeak-ng --voices` lists them). Empty means espeak-ng's default.
	Voice string
	// Rate is the speed in words per minute (espeak-ng -s), between MinRate
	// and MaxRate. Zero means espeak-ng's default (175).
	Rate int
	// Binary is the espeak-ng program, a name looked up in PATH or a path.
	// Empty means DefaultBinary.
	Binary string
}

// DefaultBinary is the program Synthesize runs when Options.Binary is empty.
const DefaultBinary = "espeak-ng"

// The rates espeak-ng accepts, in words per minute.
const (
	MinRate = 80
	MaxRate = 450
)

// MaxTextRunes is a sensible cap for one utterance (about four minutes of
// speech at 170 words per minute), for callers of untrusted.Line.
const MaxTextRunes = 4000

// MaxDuration caps the audio of one utterance; longer output is an error.
const MaxDuration = 10 * time.Minute

var (
	// ErrNotFound reports that espeak-ng is not installed.
	ErrNotFound = errors.New("espeak-ng not found: install it (apt install espeak-ng)")
	// ErrEmptyText reports a text with nothing to speak once sanitized.
	ErrEmptyText = errors.New("no text to speak")
	// ErrTooLong reports speech longer than MaxDuration.
	ErrTooLong = errors.New("speech longer than the maximum duration")
)

// voiceRE is the shape of espeak-ng voice names (language, variant, mbrola
// voices, paths below espeak-ng-data/voices). It never starts with "-".
var voiceRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+/-]*$`)

// waitDelay bounds how long Synthesize waits for espeak-ng's output pipes
// after the process was killed.
const waitDelay = time.Second

// Synthesize speaks text with espeak-ng and returns the audio as 16 kHz mono
// s16 samples. Control characters are stripped from text first (untrusted.Line
// without a length cap); a text with nothing left gives ErrEmptyText. A
// cancelled ctx kills espeak-ng's process group and returns ctx's error.
func Synthesize(ctx context.Context, text string, opt Options) ([]int16, error) {
	args, err := opt.args()
	if err != nil {
		return nil, fmt.Errorf("synthesize speech: %w", err)
	}
	text = untrusted.Line(text, 0)
	if text == "" {
		return nil, fmt.Errorf("synthesize speech: %w", ErrEmptyText)
	}
	path, err := opt.LookPath()
	if err != nil {
		return nil, fmt.Errorf("synthesize speech: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("synthesize speech: %w", err)
	}

	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(text + "\n")
	out := &cappedBuffer{max: maxWAVBytes}
	errOut := &cappedBuffer{max: 4096}
	cmd.Stdout = out
	cmd.Stderr = errOut
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	runErr := cmd.Run()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("synthesize speech: %w", err)
	}
	if runErr != nil {
		var exit *exec.ExitError
		if errors.As(runErr, &exit) {
			return nil, fmt.Errorf("synthesize speech: espeak-ng failed (%s)%s", exit.ProcessState, diagnostic(errOut.Bytes(), opt.Voice))
		}
		return nil, fmt.Errorf("synthesize speech: run espeak-ng: %w", runErr)
	}
	if out.overflow {
		return nil, fmt.Errorf("synthesize speech: %w", ErrTooLong)
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("synthesize speech: espeak-ng wrote no audio%s", diagnostic(errOut.Bytes(), opt.Voice))
	}
	samples, err := convert(ctx, bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("synthesize speech: %w", err)
	}
	return samples, nil
}

// convert turns espeak-ng's WAV into wire-format samples. Resampling a long
// utterance takes a while and cannot be interrupted, so it runs in a
// goroutine of its own and a cancel returns at once; the goroutine then
// finishes its bounded work on the in-memory buffer and exits (r is
// espeak-ng's output, already read; a test gives a reader that blocks).
func convert(ctx context.Context, r io.Reader) ([]int16, error) {
	type result struct {
		samples []int16
		err     error
	}
	done := make(chan result, 1)
	go func() {
		f, _, err := wav.ReadAll16k(r, maxSamples)
		switch {
		case errors.Is(err, wav.ErrTooLarge):
			done <- result{err: ErrTooLong}
		case err != nil:
			done <- result{err: fmt.Errorf("read espeak-ng output: %w", err)}
		default:
			done <- result{samples: pcm.FromFloat32(make([]int16, 0, len(f)), f)}
		}
	}()
	select {
	case r := <-done:
		return r.samples, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxSamples is MaxDuration at the wire rate.
var maxSamples = pcm.Samples(MaxDuration)

// maxWAVBytes is MaxDuration of espeak-ng output (22 050 Hz s16 mono) plus room
// for the header.
const maxWAVBytes = int(MaxDuration/time.Second)*22050*2 + 1<<16

// Validate checks the voice name's shape and the rate's range without
// running espeak-ng (whether the voice exists shows at synthesis).
func (o Options) Validate() error {
	if o.Voice != "" && (!voiceRE.MatchString(o.Voice) || len(o.Voice) > 100) {
		return fmt.Errorf("bad voice name %q", o.Voice)
	}
	if o.Rate != 0 && (o.Rate < MinRate || o.Rate > MaxRate) {
		return fmt.Errorf("rate %d outside %d-%d words per minute", o.Rate, MinRate, MaxRate)
	}
	return nil
}

// LookPath finds the espeak-ng program of o. When it is missing the error
// is ErrNotFound, which says how to install it.
func (o Options) LookPath() (string, error) {
	bin := o.Binary
	if bin == "" {
		bin = DefaultBinary
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if bin == DefaultBinary {
			return "", ErrNotFound
		}
		return "", fmt.Errorf("%w (looked for %q)", ErrNotFound, bin)
	}
	return path, nil
}

func (o Options) args() ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	args := []string{"--stdout", "--stdin", "-b", "1"}
	if o.Voice != "" {
		args = append(args, "-v", o.Voice)
	}
	if o.Rate != 0 {
		args = append(args, "-s", strconv.Itoa(o.Rate))
	}
	return args, nil
}

// diagnostic explains a failure from espeak-ng's stderr as ": reason", or
// "". Only messages known not to quote the text are recognised; the rest of
// stderr is never passed on, so errors stay free of the text whatever the
// program printed.
func diagnostic(stderr []byte, voice string) string {
	s := strings.ToLower(string(stderr))
	switch {
	case strings.Contains(s, "voice does not exist"), strings.Contains(s, "failed to read voice"):
		return fmt.Sprintf(": no voice %q (espeak-ng --voices lists them)", voice)
	case len(bytes.TrimSpace(stderr)) > 0:
		return " (its message is not repeated: it may quote the text)"
	}
	return ""
}

// cappedBuffer keeps the first max bytes written and drops the rest, so a
// runaway child never blocks on a full pipe nor fills memory.
type cappedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - c.Len()
	if len(p) > room {
		c.overflow = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
