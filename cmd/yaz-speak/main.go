package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/cmd/yaz-speak/internal/speaker"
	"github.com/yazses/yazses/lib/audio"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
)

const name = "yaz-speak"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// CLI is yaz-speak's command line.
type CLI struct {
	Text []string `arg:"" optional:"" help:"Text to speak, joined with spaces; none: one utterance per line of stdin."`

	Voice   string `help:"espeak-ng voice (espeak-ng --voices lists them)." default:"en-us" env:"YAZ_VOICE"`
	Rate    int    `help:"Speed in words per minute (80-450)." default:"170" env:"YAZ_RATE"`
	Out     string `name:"output" short:"o" aliases:"out" help:"Write 16 kHz mono audio to FILE, or to stdout for -, instead of playing it (--out, the old name, still works)." placeholder:"FILE|-"`
	Format  string `short:"f" help:"Format of --output: auto (wav for a FILE ending in .wav, else raw), raw (s16le PCM, no header) or wav." default:"auto" enum:"auto,raw,wav"`
	Backend string `help:"Playback backend: auto, pulseaudio, alsa or null." default:"auto" env:"YAZ_AUDIO_BACKEND"`
	Device  string `short:"d" help:"Playback device: an ID or part of its name; empty: the default device." env:"YAZ_PLAYBACK_DEVICE"`
	Serve   bool   `help:"Supervised mode for yazsesd: JSON requests on stdin, events on stdout."`
	Espeak  string `help:"The espeak-ng program." default:"espeak-ng" env:"YAZ_ESPEAK"`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// run is yaz-speak: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c CLI
	_, code, done := cli.Parse(name, "Offline text to speech with espeak-ng.", &c, args, stdout, stderr,
		nil)
	if done {
		return code
	}
	log := c.Logger(stderr)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// With SIGPIPE caught, a write to a closed stdout returns EPIPE instead
	// of killing the process, and ends the run cleanly.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	err := c.run(ctx, log, stdin, stdout)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		log.Debug("stopped by signal")
		err = nil
	case errors.Is(err, syscall.EPIPE):
		log.Debug("stdout closed")
		err = nil
	}
	return cli.Report(name, stderr, err)
}

func (c *CLI) options() tts.Options {
	return tts.Options{Voice: c.Voice, Rate: c.Rate, Binary: c.Espeak}
}

func (c *CLI) player(log *slog.Logger) speaker.Player {
	return devicePlayer{audio.Config{Backend: c.Backend, Device: c.Device, Log: log}}
}

// devicePlayer plays on a sound device through lib/audio.
type devicePlayer struct{ cfg audio.Config }

func (p devicePlayer) Play(ctx context.Context, samples []int16, started, played func()) (int, error) {
	n, err := audio.Play(ctx, p.cfg, samples, started, played)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("play: %w", err)
	}
	return n, err
}

func (c *CLI) run(ctx context.Context, log *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	opt := c.options()
	if err := opt.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	if c.Out == "" && c.Format != "auto" {
		return cli.Usagef("--format %s needs --out", c.Format)
	}
	if wavName(c.Out) && c.Format == "raw" {
		return cli.Usagef("--format raw writes PCM without a header, not a WAV file: use --format wav for %s, or another name", c.Out)
	}
	if c.Serve {
		if c.Out != "" || len(c.Text) > 0 {
			return cli.Usagef("--serve takes neither text arguments nor --out")
		}
		return c.serve(ctx, log, stdin, stdout)
	}

	var texts <-chan speaker.Line
	readErr := func() error { return nil }
	single := len(c.Text) > 0
	if single {
		text := untrusted.Line(strings.Join(c.Text, " "), 0)
		if text == "" {
			return cli.Usagef("no text to speak")
		}
		ch := make(chan speaker.Line, 1)
		ch <- speaker.Line{Data: []byte(text)}
		close(ch)
		texts = ch
	} else {
		if cli.IsTerminal(stdin) {
			return cli.Usagef("no text: give it as arguments, or pipe lines on stdin")
		}
	}
	if _, err := opt.LookPath(); err != nil {
		return err
	}
	if !single {
		texts, readErr = speaker.Lines(ctx, stdin, tts.MaxLineBytes)
	}

	sink, err := c.openSink(log, stdout, single)
	if err != nil {
		return err
	}
	defer sink.Close()
	for {
		var l speaker.Line
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok = <-texts:
		}
		if !ok {
			break
		}
		if l.TooLong {
			log.Warn("input line skipped: longer than the limit", "max_bytes", tts.MaxLineBytes)
			continue
		}
		text := untrusted.Line(string(l.Data), 0)
		if text == "" {
			continue
		}
		if utf8.RuneCountInString(text) > tts.MaxTextRunes {
			log.Warn("text cut to the limit", "max_runes", tts.MaxTextRunes)
			text = untrusted.Line(text, tts.MaxTextRunes)
		}
		samples, err := tts.Synthesize(ctx, text, opt)
		if err != nil {
			return err
		}
		if err := sink.Write(ctx, samples); err != nil {
			return err
		}
		log.Debug("spoken", "samples", len(samples), "audio_ms", pcm.Millis(len(samples)))
	}
	if err := readErr(); err != nil {
		return err
	}
	return sink.Close()
}

// serve runs the supervised speak protocol until EOF or a signal.
func (c *CLI) serve(ctx context.Context, log *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	opt := c.options()
	if _, err := opt.LookPath(); err != nil {
		return err
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	skip := make(chan struct{}, 1)
	fwdDone := make(chan struct{})
	fwdCtx, fwdCancel := context.WithCancel(ctx)
	go func() {
		defer close(fwdDone)
		for {
			select {
			case <-fwdCtx.Done():
				return
			case <-usr1:
				select {
				case skip <- struct{}{}:
				default:
				}
			}
		}
	}()
	defer func() {
		fwdCancel()
		<-fwdDone
	}()

	srv := &speaker.Server{
		Synthesize: func(ctx context.Context, text string) ([]int16, error) {
			return tts.Synthesize(ctx, text, opt)
		},
		Player: c.player(log),
		Log:    log,
		Skip:   skip,
	}
	if err := cli.Ready(); err != nil {
		return err
	}
	log.Debug("serving")
	return srv.Serve(ctx, stdin, stdout)
}
