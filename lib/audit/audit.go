package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/linebound"
)

// Names and defaults.
const (
	DirName  = "yazses"
	FileName = "audit.jsonl"

	// DefaultMaxBytes and DefaultKeep are sensible arguments for [Open]:
	// at most 4 MiB of audit on disk.
	DefaultMaxBytes = 1 << 20
	DefaultKeep     = 3

	// maxLine bounds a line [Read] accepts. A valid Event encodes to a
	// few hundred bytes; anything longer is not ours and is skipped.
	maxLine = 4096

	// TallyWindow and TallyBurst bound what [Log.Tally] writes: of the
	// events of one kind and reason in a window, the first TallyBurst are
	// written one by one and the rest as one line with their count when
	// the window ends.
	TallyWindow = 10 * time.Minute
	TallyBurst  = 3

	// reserveBytes is the room Tally reserves for what comes next: a few
	// lines (an ask_human's spoken and answered lines).
	reserveBytes = 1024
)

// Errors.
var (
	// ErrBadWord is returned by [Log.Write] when Kind, Reason, Child or
	// Backend is not a closed-vocabulary word. The wrapping error names
	// the field, never the refused value.
	ErrBadWord = errors.New("not a closed-vocabulary word")
	// ErrSymlink is returned by [Open] when the log path is a symlink.
	ErrSymlink = errors.New("audit log path is a symlink")
	// ErrClosed is returned by [Log.Write] after [Log.Close].
	ErrClosed = errors.New("audit log closed")
)

// wordRE is the closed-vocabulary guard: lowercase, digits, '_' and '.',
// starting with a letter, at most 64 bytes. No spaces, so no sentences.
var wordRE = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)

// ValidWord reports whether s may be used as a Kind, Reason, Child or
// Backend.
func ValidWord(s string) bool { return wordRE.MatchString(s) }

// Event is one audit line. It has NO free-text field on purpose: kinds,
// reasons, counts, durations and peer ids only. Do not add string fields;
// a test enforces this.
type Event struct {
	Time time.Time `json:"time"`
	// Kind is required, e.g. "ask.reserved", "ask.spoken", "ask.answered",
	// "ask.refused", "ask.deferred", "peer.rejected", "dictation.typed",
	// "child.restarted".
	Kind string `json:"kind"`
	// Reason is a closed-vocabulary word, optional.
	Reason string `json:"reason,omitempty"`
	// Count is e.g. characters typed or words.
	Count int `json:"count,omitempty"`
	// Duration is written as DurationMs (whole milliseconds) when
	// DurationMs is zero; [Read] fills it back from DurationMs.
	Duration   time.Duration `json:"-"`
	DurationMs int64         `json:"duration_ms,omitempty"`
	PeerPID    int           `json:"peer_pid,omitempty"`
	PeerUID    int           `json:"peer_uid,omitempty"`
	// Child and Backend are closed-vocabulary words too: "gate",
	// "yaz_gate", "whisper" pass; "yaz-gate" (a hyphen) is refused.
	Child   string `json:"child,omitempty"`
	Backend string `json:"backend,omitempty"`
}

// validate checks every string field. The error never contains the value.
func (e *Event) validate() error {
	if !ValidWord(e.Kind) {
		return fmt.Errorf("field kind: %w", ErrBadWord)
	}
	for _, f := range []struct{ name, v string }{
		{"reason", e.Reason}, {"child", e.Child}, {"backend", e.Backend},
	} {
		if f.v != "" && !ValidWord(f.v) {
			return fmt.Errorf("field %s: %w", f.name, ErrBadWord)
		}
	}
	return nil
}

// Path is $XDG_STATE_HOME/yazses/audit.jsonl, or
// ~/.local/state/yazses/audit.jsonl when XDG_STATE_HOME is unset or not
// absolute (as the XDG base directory spec says). It is "" only when
// neither XDG_STATE_HOME nor the home directory is known.
func Path() string {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, DirName, FileName)
}

// Log is an open, size-capped audit log. Use [Open].
type Log struct {
	path     string
	maxBytes int64
	keep     int

	mu      sync.Mutex
	f       *os.File // nil after a failed reopen or Close
	size    int64
	closed  bool
	failing bool // the last write failed

	// tallies are the open windows of Tally, by kind and reason.
	tallies     map[tallyKey]*tally
	tallyWindow time.Duration
	tallyBurst  int
}

type tallyKey struct{ kind, reason string }

// tally is one kind and reason's window: written one by one so far, and
// counted since (written as one line when the window ends).
type tally struct {
	start   time.Time
	written int
	pending int
	timer   *time.Timer
}

// Open opens (creating if needed) the audit log at path for appending. The
// folder is created 0700, the file 0600. When a line would take the file
// past maxBytes it is rotated to path.1 … path.keep (keep 0 keeps no old
// files: the log starts over).
func Open(path string, maxBytes int64, keep int) (*Log, error) {
	if path == "" {
		return nil, errors.New("open audit log: empty path")
	}
	if maxBytes <= 0 || keep < 0 {
		return nil, fmt.Errorf("open audit log: invalid limits max_bytes=%d keep=%d", maxBytes, keep)
	}
	if err := prepareDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l := &Log{path: path, maxBytes: maxBytes, keep: keep,
		tallies: map[tallyKey]*tally{}, tallyWindow: TallyWindow, tallyBurst: TallyBurst}
	if err := l.openFile(); err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return l, nil
}

// prepareDir creates dir 0700 (parents with MkdirAll's usual 0700 too) and
// tightens a folder of ours that has group or other bits.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create folder: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("folder %s: not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("folder %s: not owned by this user", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("tighten folder mode: %w", err)
		}
	}
	return nil
}

// openFile opens l.path for appending and records its size. Caller holds
// l.mu (or has the only reference).
func (l *Log) openFile() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("%s: %w", l.path, ErrSymlink)
		}
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s: not a regular file", l.path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		f.Close()
		return fmt.Errorf("%s: not owned by this user", l.path)
	}
	if fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return fmt.Errorf("tighten mode: %w", err)
		}
	}
	size := fi.Size()
	if size > 0 {
		// A record cut by a crash mid-write: end its line, so the next
		// record stands alone (Read reports the cut one as damaged).
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return fmt.Errorf("end partial line: %w", err)
			}
			size++
		}
	}
	l.f, l.size = f, size
	return nil
}

// rotate shifts path.N up by one, moves path to path.1 and opens a fresh
// path. Caller holds l.mu.
func (l *Log) rotate() error {
	if l.f != nil {
		err := l.f.Close()
		l.f = nil
		if err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	if l.keep == 0 {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove: %w", err)
		}
	} else {
		for i := l.keep - 1; i >= 1; i-- {
			err := os.Rename(rotated(l.path, i), rotated(l.path, i+1))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("shift %d: %w", i, err)
			}
		}
		if err := os.Rename(l.path, rotated(l.path, 1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("shift current: %w", err)
		}
	}
	return l.openFile()
}

func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// Write appends e as one compact JSON line. Kind is required; Kind, Reason,
// Child and Backend must be closed-vocabulary words (else [ErrBadWord] and
// nothing is written). A zero Time is now; a zero DurationMs takes
// Duration in whole milliseconds.
func (l *Log) Write(e Event) error {
	line, err := encode(e)
	if err != nil {
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLine(line)
}

// writeLine appends one encoded line. Caller holds l.mu.
func (l *Log) writeLine(line []byte) error {
	if l.closed {
		return fmt.Errorf("write audit event: %w", ErrClosed)
	}
	err := l.append(line)
	l.failing = err != nil
	return err
}

// encode validates and encodes e as one line.
func encode(e Event) ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("write audit event: %w", err)
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if e.DurationMs == 0 && e.Duration != 0 {
		e.DurationMs = e.Duration.Milliseconds()
	}
	line, err := json.Marshal(&e)
	if err != nil {
		return nil, fmt.Errorf("write audit event: encode: %w", err)
	}
	return append(line, '\n'), nil
}

// Tally records an event that anyone may cause without limit (a refused
// or deferred question, a refused peer): of the events of one Kind and
// Reason in a window of TallyWindow, the first TallyBurst are written as
// Write writes them, and the rest are counted and written as one line
// when the window ends (or at Close): that Kind and Reason, Count the
// number of events it stands for, DurationMs the time since the window
// began, and no peer. So a flood writes a few lines per window and can
// never rotate away what Write records (a question spoken, a daemon
// started).
//
// Its error is Write's for an event written. For one counted, it is nil
// only when the log is not failing and the space for a line more was
// reserved in its file (fallocate, where the file system has it), so a
// caller may still treat it as proof that the log can record what comes
// next.
func (l *Log) Tally(e Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	line, err := encode(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := tallyKey{e.Kind, e.Reason}
	t := l.tallies[k]
	if t == nil || (t.pending == 0 && e.Time.Sub(t.start) >= l.tallyWindow) {
		t = &tally{start: e.Time}
		l.tallies[k] = t
	}
	if t.written < l.tallyBurst {
		t.written++
		return l.writeLine(line)
	}
	if l.closed {
		return fmt.Errorf("write audit event: %w", ErrClosed)
	}
	t.pending++
	if t.timer == nil {
		t.timer = time.AfterFunc(max(0, l.tallyWindow-time.Since(t.start)), func() { l.flushTally(k) })
	}
	return l.reserve()
}

// flushTally writes the count of a window that ended, and forgets it.
func (l *Log) flushTally(k tallyKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeTally(k)
}

// writeTally writes k's count, if any, and ends its window. Caller holds
// l.mu.
func (l *Log) writeTally(k tallyKey) {
	t := l.tallies[k]
	if t == nil {
		return
	}
	delete(l.tallies, k)
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.pending == 0 || l.closed {
		return
	}
	now := time.Now()
	line, err := encode(Event{Time: now, Kind: k.kind, Reason: k.reason, Count: t.pending,
		DurationMs: max(1, now.Sub(t.start).Milliseconds())})
	if err == nil {
		_ = l.writeLine(line) // a failing log shows in Failing
	}
}

// reserve makes sure the file has room for a line more: the space past
// its end is allocated (FALLOC_FL_KEEP_SIZE: its size stays). It never
// rotates (a flood must not), so a line that rotates goes to a file whose
// space was not reserved; a file system without fallocate leaves it to
// the last write's result. Caller holds l.mu.
func (l *Log) reserve() error {
	if l.f == nil {
		return errors.New("write audit event: the audit log is not open")
	}
	err := unix.Fallocate(int(l.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, l.size, reserveBytes)
	switch {
	case err == nil, errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		if l.failing {
			return errors.New("write audit event: the audit log is failing")
		}
		return nil
	default:
		l.failing = true
		return fmt.Errorf("write audit event: reserve space: %w", err)
	}
}

// append writes line whole or not at all. Caller holds l.mu.
func (l *Log) append(line []byte) error {
	if l.f == nil || (l.size > 0 && l.size+int64(len(line)) > l.maxBytes) {
		if err := l.rotate(); err != nil {
			return fmt.Errorf("write audit event: rotate: %w", err)
		}
	}
	n, err := l.f.Write(line)
	if err != nil {
		if n > 0 {
			// A short write (a full disk): take the partial record back,
			// so the next one is not glued to it. If even that fails,
			// end the partial line; Read reports it as damaged.
			// The file's own size, not l.size: the truncation must
			// take back exactly the n bytes just written.
			back := l.size
			if fi, serr := l.f.Stat(); serr == nil {
				back = fi.Size() - int64(n)
			}
			if terr := l.f.Truncate(back); terr != nil {
				if m, _ := l.f.Write([]byte{'\n'}); m == 1 {
					l.size += int64(n) + 1
				}
			}
		}
		return fmt.Errorf("write audit event: %w", err)
	}
	l.size += int64(n)
	return nil
}

// Close syncs and closes the log. Later writes fail with [ErrClosed];
// a second Close returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	for k := range l.tallies {
		l.writeTally(k) // the counts of open windows
	}
	l.closed = true
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	serr := f.Sync()
	if err := f.Close(); err != nil {
		return fmt.Errorf("close audit log: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("close audit log: sync: %w", serr)
	}
	return nil
}

// Read returns the last max events (all of them when max <= 0) of the log
// at path and its rotated files path.1, path.2 …, oldest first, newest
// last. A line that cannot be read back (malformed, cut short, over-long,
// or with words that fail the closed-vocabulary check) is reported in its
// place as an event of kind [KindDamaged] that carries none of its content;
// it is never hidden. A missing log is no events and no error.
func Read(path string, max int) ([]Event, error) {
	// Find the rotated files: path.1 … path.n, contiguous.
	n := 0
	for {
		if _, err := os.Lstat(rotated(path, n+1)); err != nil {
			break
		}
		n++
	}
	var ring []Event // grows to max, then is used as a ring
	start := 0
	add := func(e Event) {
		if max <= 0 || len(ring) < max {
			ring = append(ring, e)
			return
		}
		ring[start] = e
		start = (start + 1) % max
	}
	for i := n; i >= 0; i-- {
		p := path
		if i > 0 {
			p = rotated(path, i)
		}
		if err := readFile(p, add); err != nil {
			return nil, fmt.Errorf("read audit log: %w", err)
		}
	}
	out := make([]Event, 0, len(ring))
	out = append(out, ring[start:]...)
	out = append(out, ring[:start]...)
	return out, nil
}

// readFile feeds each valid event of one file to add, oldest first.
func readFile(path string, add func(Event)) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // rotated away meanwhile, or no log yet
		}
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("%s: %w", path, ErrSymlink)
		}
		return err
	}
	defer f.Close()
	lines := linebound.NewReader(f, linebound.Options{Max: maxLine - 1, Long: linebound.Skip, Last: linebound.KeepLast})
	for {
		line, err := lines.ReadLine()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, linebound.ErrTooLong):
			add(Event{Kind: KindDamaged, Count: 1})
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case len(bytes.TrimSpace(line)) > 0:
			if e, ok := parse(line); ok {
				add(e)
			} else {
				add(Event{Kind: KindDamaged, Count: 1})
			}
		}
	}
}

func parse(line []byte) (Event, bool) {
	var e Event
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return Event{}, false
	}
	if d.More() {
		return Event{}, false
	}
	if e.validate() != nil {
		return Event{}, false
	}
	e.Duration = time.Duration(e.DurationMs) * time.Millisecond
	return e, true
}

// KindDamaged is the kind [Read] reports, in its place and with Count 1, for
// a line it cannot read back (cut short, edited, not ours). The event
// carries nothing of the line.
const KindDamaged = "audit.damaged"

// Failing reports whether the last write failed (the disk is full, the
// file or its folder cannot be opened). It is false again after a write
// succeeds. The daemon asks before an ask_human: a question that cannot be
// audited is not asked.
func (l *Log) Failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing
}
