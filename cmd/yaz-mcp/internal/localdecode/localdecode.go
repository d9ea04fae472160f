// Package localdecode transcribes one audio file by running yaz-decode as a
// child process, the way yaz-mcp does when no daemon decodes for it.
//
// The child runs in a process group of its own at a lower CPU priority
// (nice, so dictation and the rest of the desktop come first) and reads the
// file through an inherited descriptor (/dev/fd/3): it never sees the path,
// and the file it decodes is the one the caller checked. Cancelling the
// context kills the whole group at once. Its stderr is read only for the
// progress percentage; nothing the child prints is passed on, so its error
// texts can never reach a caller.
package localdecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/frame"
)

// Errors of Run. Each wraps the underlying cause for logs; callers show
// only the sentinel.
var (
	// ErrModelMissing: the model file does not exist (or is not a file).
	ErrModelMissing = errors.New("model missing")
	// ErrDecodeFailed: the decoder exited with an error or printed no
	// transcript.
	ErrDecodeFailed = errors.New("decode failed")
	// ErrStart: the decoder could not be started.
	ErrStart = errors.New("decoder did not start")
)

// maxOutput caps the transcript JSON read from the child: 4 hours of
// speech is far below it.
const maxOutput = 64 << 20

// Options says how to run the decoder.
type Options struct {
	// Command is the decoder's argv prefix: the resolved yaz-decode
	// program, and any fixed arguments.
	Command []string
	// Model is the whisper model file.
	Model    string
	Language string // "" keeps yaz-decode's default
	Threads  int    // 0 keeps yaz-decode's default
	BeamSize int    // 0 keeps yaz-decode's default
	Prompt   string
	// VAD is the voice detector ([vad]: engine, model, threshold); a zero
	// field keeps yaz-decode's default (auto, its default model, 0.5).
	VAD config.VAD
	// Nice is added to the child's CPU niceness (0 leaves it as is).
	Nice int
	// MaxDuration is passed as --max-duration when set.
	MaxDuration time.Duration
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
	DecodeMs int64     `json:"decode_ms"`
	// Truncated: the file is cut short (its header declares more audio
	// than it holds); the transcript is of the audio it holds.
	Truncated bool `json:"truncated,omitempty"`
	// PID is the decoder's process id (for tests and logs).
	PID int `json:"-"`
}

// Args is the decoder's full argv for opt, reading the file on fd 3.
func (opt Options) Args() []string {
	args := append([]string(nil), opt.Command...)
	args = append(args, "--model="+opt.Model, "--output=json", "--progress=always",
		"--log-format=json", "--log-level=error")
	if opt.Language != "" {
		args = append(args, "--language="+opt.Language)
	}
	if opt.Threads > 0 {
		args = append(args, "--threads="+strconv.Itoa(opt.Threads))
	}
	if opt.BeamSize > 0 {
		args = append(args, "--beam-size="+strconv.Itoa(opt.BeamSize))
	}
	if opt.Prompt != "" {
		// The prompt is private (docs/config.md): it goes on stdin as a
		// Prompt frame (Stdin), never on the command line, which every
		// local user can read.
		args = append(args, "--prompt-stdin")
	}
	if opt.VAD.Engine != "" {
		args = append(args, "--vad="+opt.VAD.Engine)
	}
	if opt.VAD.Model != "" {
		args = append(args, "--vad-model="+opt.VAD.Model)
	}
	if opt.VAD.Threshold > 0 {
		args = append(args, "--vad-threshold="+strconv.FormatFloat(opt.VAD.Threshold, 'g', -1, 64))
	}
	if opt.MaxDuration > 0 {
		args = append(args, "--max-duration="+opt.MaxDuration.String())
	}
	return append(args, "--", "/dev/fd/3")
}

// Stdin is what the decoder reads on stdin: the vocabulary hint as one
// Prompt frame when there is one (Args then passes --prompt-stdin), else
// nothing.
func (opt Options) Stdin() (io.Reader, error) {
	if opt.Prompt == "" {
		return nil, nil
	}
	var b bytes.Buffer
	if err := frame.NewWriter(&b).Prompt(opt.Prompt); err != nil {
		return nil, fmt.Errorf("%w: prompt: %w", ErrStart, err)
	}
	return &b, nil
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

// Run decodes the file f (open for reading) and returns its transcript.
// progress, if not nil, receives whisper's progress in percent, rising, from
// the goroutine that reads the child's stderr. started, if not nil, is
// called with the child's pid once it runs.
func Run(ctx context.Context, opt Options, f *os.File, progress func(pct int), started func(pid int)) (Result, error) {
	if len(opt.Command) == 0 {
		return Result{}, fmt.Errorf("%w: no decoder command", ErrStart)
	}
	if err := CheckModel(opt.Model); err != nil {
		return Result{}, err
	}
	argv := opt.Args()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = opt.Env
	cmd.ExtraFiles = []*os.File{f}
	stdin, err := opt.Stdin()
	if err != nil {
		return Result{}, err
	}
	cmd.Stdin = stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Cancel kills the whole group at once: the decoder writes nothing
	// worth waiting for once the caller has gone.
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = time.Second
	out := &capped{max: maxOutput}
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrStart, err)
	}

	start := time.Now()
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
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readProgress(stderr, progress)
	}()
	<-readDone // the pipe closes when the child exits (or WaitDelay ends it)
	err = cmd.Wait()
	_ = killGroup(pid) // nothing of the group outlives the call
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("decode: %w", ctx.Err())
	}
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrDecodeFailed, err)
	}
	if out.over {
		return Result{}, fmt.Errorf("%w: transcript over %d bytes", ErrDecodeFailed, maxOutput)
	}
	var doc struct {
		AudioMs   int64     `json:"audio_ms"`
		Text      *string   `json:"text"`
		Segments  []Segment `json:"segments"`
		Truncated bool      `json:"truncated"`
	}
	if err := json.Unmarshal(out.buf.Bytes(), &doc); err != nil || doc.Text == nil {
		return Result{}, fmt.Errorf("%w: unreadable transcript JSON", ErrDecodeFailed)
	}
	if doc.Segments == nil {
		doc.Segments = []Segment{}
	}
	return Result{Text: *doc.Text, Segments: doc.Segments, AudioMs: doc.AudioMs, DecodeMs: elapsed.Milliseconds(), Truncated: doc.Truncated, PID: pid}, nil
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

// The progress bar yaz-decode draws with --progress=always:
// "\rLABEL [=====     ]  42% 3s".
var percentRE = regexp.MustCompile(`\]\s+(\d{1,3})%`)

// readProgress reads the child's stderr to its end, passing each new, higher
// percentage to progress. Everything else is dropped.
func readProgress(r io.Reader, progress func(int)) {
	br := bufio.NewReaderSize(r, 64<<10)
	last := -1
	var line []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return
		}
		if b != '\r' && b != '\n' {
			if len(line) < 4096 {
				line = append(line, b)
			}
			continue
		}
		if m := percentRE.FindSubmatch(line); m != nil && progress != nil {
			if pct, err := strconv.Atoi(string(m[1])); err == nil && pct > last && pct <= 100 {
				last = pct
				progress(pct)
			}
		}
		line = line[:0]
	}
}

// capped keeps at most max bytes and remembers whether more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}
