// Package capcmd is the yaz-capture command: flags, the choice between the
// sound device and a --file, and the stdout writer around them.
package capcmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"text/tabwriter"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/cmd/yaz-capture/internal/filesrc"
	"github.com/yazses/yazses/cmd/yaz-capture/internal/pcmout"
	"github.com/yazses/yazses/lib/audio"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/pcm"
)

const name = "yaz-capture"

// CLI is yaz-capture's command line.
type CLI struct {
	Device      string  `short:"d" help:"Capture device: an ID or a case-insensitive part of its name (see --list-devices); empty for the default." env:"YAZ_CAPTURE_DEVICE"`
	ListDevices bool    `help:"Print the capture and playback devices as a table and exit."`
	Backend     string  `help:"Audio backend: auto, pulseaudio, alsa or null (silence in real time, for tests)." default:"auto" enum:"auto,pulseaudio,alsa,null" env:"YAZ_AUDIO_BACKEND"`
	Seconds     float64 `short:"s" help:"Stop after this many seconds of audio (exactly seconds*16000 samples); 0 records until SIGINT/SIGTERM." default:"0"`
	Format      string  `short:"f" help:"Output format: raw (s16le 16 kHz mono PCM) or wav." default:"raw" enum:"raw,wav"`
	File        string  `help:"Play this WAV or raw .pcm file out in real time instead of recording, then end (for tests and replays)." type:"path"`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// Main runs yaz-capture and returns its exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c CLI
	_, code, done := cli.Parse(name, "Record 16 kHz mono s16le PCM from the microphone to stdout.", &c, args, stdout, stderr,
		nil)
	if done {
		return code
	}
	log := c.Logger(stderr)
	return cli.Report(name, stderr, c.run(ctx, log, stdout))
}

func (c *CLI) run(ctx context.Context, log *slog.Logger, stdout io.Writer) error {
	cfg := audio.Config{Backend: c.Backend, Device: c.Device, Log: log}
	if c.ListDevices {
		return listDevices(cfg, stdout)
	}
	limit, err := sampleLimit(c.Seconds)
	if err != nil {
		return err
	}
	if cli.IsTerminal(stdout) {
		return cli.Usagef("stdout is a terminal; pipe the audio on (yaz-capture | yaz-decode) or redirect it (yaz-capture --format wav > rec.wav)")
	}
	var samples []int16
	if c.File != "" {
		if samples, err = filesrc.Load(c.File); err != nil {
			return err
		}
	}
	out, err := pcmout.New(stdout, c.Format, limit, log)
	if err != nil {
		if pcmout.IsClosedPipe(err) {
			return nil
		}
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var werr error
	onSamples := func(s []int16) {
		if werr != nil {
			return
		}
		done, err := out.Write(s)
		if err != nil {
			werr = err
			cancel()
			return
		}
		if done {
			cancel()
		}
	}
	onReady := func() {
		if err := cli.Ready(); err != nil {
			log.Warn("readiness signal", "err", err)
		}
	}
	if c.File != "" {
		onReady()
		err = filesrc.Pace(ctx, samples, onSamples)
	} else {
		err = audio.Capture(ctx, cfg, onReady, onSamples)
	}
	cerr := out.Close()
	log.Debug("capture ended", "samples", out.Samples(), "ms", pcm.Millis(int(out.Samples())))
	switch {
	case werr != nil && pcmout.IsClosedPipe(werr):
		log.Debug("stdout closed by the reader; stopping")
		return nil
	case werr != nil:
		return werr
	case err != nil:
		return err
	}
	return cerr
}

// sampleLimit converts --seconds to a sample count; -1 means no limit.
func sampleLimit(seconds float64) (int64, error) {
	switch {
	case math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds < 0:
		return 0, cli.Usagef("--seconds must be 0 (no limit) or a positive number, not %v", seconds)
	case seconds == 0:
		return -1, nil
	case seconds > 1e7:
		return 0, cli.Usagef("--seconds %v is too long", seconds)
	}
	n := int64(math.Round(seconds * pcm.SampleRate))
	if n == 0 {
		return 0, cli.Usagef("--seconds %v is shorter than one sample", seconds)
	}
	return n, nil
}

func listDevices(cfg audio.Config, stdout io.Writer) error {
	devs, err := audio.ListDevices(cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tDEFAULT\tID\tNAME")
	for _, d := range devs {
		kind := "playback"
		if d.Capture {
			kind = "capture"
		}
		def := ""
		if d.Default {
			def = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", kind, def, d.ID, d.Name)
	}
	if err := tw.Flush(); err != nil && !pcmout.IsClosedPipe(err) {
		return fmt.Errorf("write device list: %w", err)
	}
	return nil
}
