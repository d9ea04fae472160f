// Package localdecode transcribes one audio file on a yaz-decode serve
// child of its own, the way yaz-mcp does when no daemon decodes for it.
//
// The file is cut and decoded as lib/filedecode defines it, the definition
// the daemon's transcribe follows on its resident decoder: the same pieces,
// each one utterance with the same flags and prompt, so the same file with
// the same settings gives the same text on either path. The child loads the
// model for the one call and ends when its stdin closes.
//
// The child runs in a process group of its own at a lower CPU priority
// (nice, so dictation and the rest of the desktop come first) and gets the
// file's audio as frames on its stdin: it never sees the path, and the file
// it decodes is the one the caller checked (read through the descriptor
// the caller opened). Cancelling the context kills the whole group at
// once. Its stderr is dropped: nothing the child prints is passed on, so
// its error texts can never reach a caller.
package localdecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/filedecode"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/linebound"
	"github.com/yazses/yazses/lib/wav"
)

// Errors of Run. Each wraps the underlying cause for logs; callers show
// only the sentinel.
var (
	// ErrModelMissing: the model file does not exist (or is not a file).
	ErrModelMissing = errors.New("model missing")
	// ErrDecodeFailed: the decoder exited with an error, answered what
	// it should not, or the audio could not be read.
	ErrDecodeFailed = errors.New("decode failed")
	// ErrStart: the decoder could not be started.
	ErrStart = errors.New("decoder did not start")
)

// maxResultLine caps one result line of the child: a 30 s piece's
// segments are far below it.
const maxResultLine = 4 << 20

// Options says how to run the decoder.
type Options struct {
	// Command is the decoder's argv prefix: the resolved yaz-decode
	// program and "serve".
	Command []string
	// Flags are the decoder's flags: filedecode.Flags.
	Flags []string
	// Model is the whisper model file the flags name, checked before the
	// decoder starts.
	Model string
	// Prompt is the vocabulary hint, sent with each piece as a Prompt
	// frame (never on the command line, which every local user can read).
	Prompt string
	// Nice is added to the child's CPU niceness (0 leaves it as is).
	Nice int
	// Env is the child's environment; nil inherits this process's.
	Env []string
}

// Segment is one timed piece of the transcript.
type Segment struct {
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
	Text    string `json:"text"`
}

// Result is a finished transcript.
type Result struct {
	Text     string    `json:"text"`
	Segments []Segment `json:"segments"`
	AudioMs  int64     `json:"audio_ms"`
	// DecodeMs is the decoder's time on the pieces (filedecode).
	DecodeMs int64 `json:"decode_ms"`
	// Pieces is how many pieces the file was cut into.
	Pieces int `json:"-"`
	// Truncated: the file is cut short (its header declares more audio
	// than it holds, as after an interrupted download); the transcript is
	// of the audio it holds, as the daemon's is.
	Truncated bool `json:"-"`
	// PID is the decoder's process id (for tests and logs).
	PID int `json:"-"`
}

// Args is the decoder's full argv.
func (opt Options) Args() []string {
	return append(slices.Clone(opt.Command), opt.Flags...)
}

// CheckModel reports ErrModelMissing unless the model is a regular file.
func CheckModel(path string) error {
	if path == "" {
		return fmt.Errorf("%w: no model configured", ErrModelMissing)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrModelMissing, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %w", ErrModelMissing, fs.ErrInvalid)
	}
	return nil
}

// Run decodes the WAV file f (open for reading; read from its start) and
// returns its transcript. progress, if not nil, hears the milliseconds of
// audio decoded after each piece. started, if not nil, is called with the
// child's pid once it runs.
func Run(ctx context.Context, opt Options, f *os.File, progress func(doneMs int64), started func(pid int)) (Result, error) {
	if len(opt.Command) == 0 {
		return Result{}, fmt.Errorf("%w: no decoder command", ErrStart)
	}
	if err := CheckModel(opt.Model); err != nil {
		return Result{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Result{}, fmt.Errorf("%w: rewind the file: %w", ErrDecodeFailed, err)
	}
	audio, err := wav.NewReader16k(f)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrDecodeFailed, err)
	}
	audio.ShortOK() // a file cut short is transcribed as far as it goes
	argv := opt.Args()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = opt.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Cancel kills the whole group at once: the decoder writes nothing
	// worth waiting for once the caller has gone.
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = time.Second
	cmd.Stderr = io.Discard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrStart, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if err := startLocked(cmd); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrStart, err)
	}
	pid := cmd.Process.Pid
	if opt.Nice != 0 {
		// Added to our own niceness (setpriority sets it absolutely;
		// getpriority(2) returns 20-nice). PRIO_PGRP sets every thread
		// of the group (Linux niceness is per thread); threads made
		// later inherit it.
		nice := opt.Nice
		if p, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil {
			nice = min(19, 20-p+opt.Nice)
		}
		_ = unix.Setpriority(unix.PRIO_PGRP, pid, nice)
	}
	if started != nil {
		started(pid)
	}
	sc := &serveClient{fw: frame.NewWriter(stdin), lines: linebound.NewReader(stdout, linebound.Options{Max: maxResultLine}), prompt: opt.Prompt}
	res, terr := filedecode.Transcribe(ctx, audio, sc, progress)
	stdin.Close() // the decoder ends at EOF
	if terr != nil {
		_ = killGroup(pid) // nothing of it is waited for
	}
	werr := cmd.Wait()
	_ = killGroup(pid) // nothing of the group outlives the call
	switch {
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("decode: %w", ctx.Err())
	case terr != nil:
		return Result{}, fmt.Errorf("%w: %w", ErrDecodeFailed, terr)
	case werr != nil:
		return Result{}, fmt.Errorf("%w: %w", ErrDecodeFailed, werr)
	}
	out := Result{Text: res.Text, Segments: make([]Segment, 0, len(res.Segments)), AudioMs: res.AudioMs,
		DecodeMs: res.DecodeMs, Pieces: res.Pieces, Truncated: audio.Short() > 0, PID: pid}
	for _, g := range res.Segments {
		out.Segments = append(out.Segments, Segment{StartMs: g.StartMs, EndMs: g.EndMs, Text: g.Text})
	}
	return out, nil
}

// serveClient sends each piece to the child as one utterance (its Prompt
// frame, its audio, an End frame) and reads the child's answer to it
// (filedecode.Decoder). The child dying or being killed ends the read
// with EOF.
type serveClient struct {
	fw     *frame.Writer
	lines  *linebound.Reader
	prompt string
	utt    int
}

func (c *serveClient) Decode(_ context.Context, samples []int16) (frame.Result, error) {
	if c.prompt != "" {
		if err := c.fw.Prompt(c.prompt); err != nil {
			return frame.Result{}, err
		}
	}
	if err := c.fw.Audio(samples); err != nil {
		return frame.Result{}, err
	}
	if err := c.fw.End(); err != nil {
		return frame.Result{}, err
	}
	c.utt++
	line, err := c.lines.ReadLine()
	if err != nil {
		return frame.Result{}, fmt.Errorf("read the answer to utterance %d: %w", c.utt, err)
	}
	var r frame.Result
	if err := json.Unmarshal(line, &r); err != nil {
		return frame.Result{}, fmt.Errorf("utterance %d: unreadable answer: %w", c.utt, err)
	}
	switch {
	case r.Utt != c.utt:
		return frame.Result{}, fmt.Errorf("answer for utterance %d, want %d", r.Utt, c.utt)
	case r.Error != "":
		return frame.Result{}, fmt.Errorf("utterance %d: decoder: %s", c.utt, r.Error)
	}
	return r, nil
}

// startLocked starts cmd on a locked OS thread: Pdeathsig follows the
// thread that forked, which must not be one the runtime may retire.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}

func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
