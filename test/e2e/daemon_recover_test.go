package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// longQuestion takes several seconds to speak.
const longQuestion = "I have finished the migration of the billing database and the tests are green; " +
	"the deployment window opens in ten minutes and the rollback plan is ready; shall I go ahead?"

// settleFDs waits until the daemon holds no more than want descriptors
// again (a connection closing can make it one fewer, never more).
func (d *daemon) settleFDs(want int) {
	d.T.Helper()
	d.Await(5*time.Second, func() bool { return d.FDs() <= want })
	if got := d.FDs(); got > want {
		d.T.Errorf("daemon holds %d file descriptors after the recovery, %d before: a leak", got, want)
	}
}

// TestChildKilledDuringAskRecovers: SIGKILL of each child while a question
// is being handled. The daemon restarts the child, the call ends with a
// result from the closed vocabulary, the next question works (or, for the
// gate, is refused: a killed gate never hands out a fresh budget), no
// descriptor leaks, and no process outlives the daemon (checked when it
// stops).
func TestChildKilledDuringAskRecovers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		child string
		cfg   func() toml
		env   []string
		// kill waits for the moment to kill the child.
		kill func(d *daemon)
		// after checks the result of the killed ask.
		after func(t *testing.T, r daemonapi.AskResult)
	}{
		{
			child: "gate",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill:  func(d *daemon) { d.WaitFor(20*time.Second, "the question", func() bool { return d.Status().Asking }) },
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered && r.Result != daemonapi.NoAnswer {
					t.Errorf("killed-gate ask = %+v, want the spoken question answered or not", r)
				}
			},
		},
		{
			child: "speak",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill: func(d *daemon) {
				waitSpoken(d, 1) // playback started: the question is audible
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.NoAnswer || r.Reason != daemonapi.ReasonSpeakFailed {
					t.Errorf("killed-speaker ask = %+v, want no_answer speak_failed", r)
				}
			},
		},
		{
			child: "decode",
			cfg: func() toml {
				return baseConfig().With("budget.ask_human_per_hour", "3").
					With("children.decode", arr(bin("fakedecode")))
			},
			env: []string{"YAZ_FAKE_DELAY_MS=3000", "YAZ_FAKE_TEXT=go ahead"},
			kill: func(d *daemon) {
				d.WaitLog(40*time.Second, "the answer's decoding", func(m map[string]any) bool {
					return m["child"] == "decode" && m["msg"] == "decoding utterance"
				})
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered || r.Answer != "go ahead" {
					t.Errorf("killed-decoder ask = %+v, want answered on the restarted decoder", r)
				}
			},
		},
		{
			child: "capture",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill: func(d *daemon) {
				d.WaitFor(40*time.Second, "the microphone", func() bool { return d.Child("capture").State == "running" })
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered && r.Result != daemonapi.NoAnswer {
					t.Errorf("killed-capture ask = %+v, want answered or no_answer", r)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.child, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, tc.cfg(), tc.env...)
			fds := d.FDs()
			res := make(chan daemonapi.AskResult, 1)
			go func() { res <- d.Ask(longQuestion, 60) }()
			tc.kill(d)
			pid := d.PidOf(tc.child)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s: %v", tc.child, err)
			}
			var r daemonapi.AskResult
			select {
			case r = <-res:
			case <-time.After(90 * time.Second):
				t.Fatalf("ask did not end after %s was killed\n%s", tc.child, d.LogTail(40))
			}
			tc.after(t, r)
			if tc.child != "capture" { // on demand: restarted by the next ask
				d.WaitFor(20*time.Second, tc.child+" restarted", func() bool {
					c := d.Child(tc.child)
					return c.State == "running" && c.PID != pid && c.Restarts >= 1
				})
			}
			next := d.Ask("And the next one?", 30)
			if tc.child == "gate" {
				if next.Result != daemonapi.Refused || next.Reason != daemonapi.ReasonBudgetExhausted {
					t.Errorf("ask after the gate was killed = %+v, want refused: a restarted gate is fully spent", next)
				}
				if b := d.Budget(); !b.FailClosed || b.Used != b.PerHour {
					t.Errorf("budget after the gate was killed = %+v, want fail_closed and all 3 used", b)
				}
			} else if next.Result != daemonapi.Answered {
				t.Errorf("ask after %s was killed and restarted = %+v, want answered", tc.child, next)
			}
			d.settleFDs(fds)
		})
	}
}

// smallTmpfs mounts a tmpfs of size bytes (root only: CI runs as root) and
// unmounts it when the test ends.
func smallTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: mounting a small tmpfs needs root (CI runs as root); cmd/yazsesd/internal/daemon TestMarkerWriteFailsClosed covers ENOSPC with an injected writer")
	}
	mnt, err := os.MkdirTemp("", "yzf-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size)+",mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		os.Remove(mnt)
		t.Fatalf("mount a %d-byte tmpfs at %s: %v: %s", size, mnt, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
			exec.Command("umount", "-l", mnt).Run()
		}
		os.Remove(mnt)
	})
	return mnt
}

// fillBut fills the file system of dir with one file until it is full,
// then frees pages pages of it; it returns the file's path.
func fillBut(t *testing.T, dir string, pages int) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	used := (fi.Size() + 4095) / 4096
	if err := f.Truncate((used - int64(pages)) * 4096); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		t.Logf("%s: %d bytes free after filling it and freeing %d page(s)", dir, st.Bavail*uint64(st.Bsize), pages)
	}
	return p
}

// TestFullRuntimeAndStateFolderFailsClosed: the
// runtime and state folders on one small tmpfs (as /run/user/$UID is,
// which any program of the user can fill), full but one page, which the
// socket's lock file takes: the crash marker cannot be written, so the
// daemon speaks no question (unavailable state_unavailable, status says
// why), dictation aside. Once the space is freed the next question writes
// the marker and is spoken; a kill -9 and a restart then start spent.
// With a cap of 3 one question is spoken in all. (It used to log that the
// marker could not be written and serve: two questions, kill -9, free
// the space, restart: used 0, and a third was spoken.)
func TestFullRuntimeAndStateFolderFailsClosed(t *testing.T) {
	t.Parallel()
	mnt := smallTmpfs(t, 512<<10)
	d := newDaemon(t, baseConfig().With("budget.ask_human_per_hour", "3"))
	d.Runtime = filepath.Join(mnt, "run")
	if err := os.Mkdir(d.Runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(mnt, "state")
	d.Audit = filepath.Join(state, "yazses", "audit.jsonl")
	d.Env = append(d.Env, "XDG_RUNTIME_DIR="+d.Runtime, "XDG_STATE_HOME="+state) // the last value wins

	// A first run and a clean stop: the folders, the audit log, the locks.
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	d.Stop()

	filler := fillBut(t, mnt, 1)
	d.restart()
	if st := d.Status(); !strings.Contains(st.StateFailing, "crash marker") || !strings.Contains(st.StateFailing, "no space left") {
		t.Errorf("status on a full folder: state_failing %q, want the crash marker and the cause", st.StateFailing)
	}
	for i := range 2 {
		if r := d.Ask("Shall I deploy the build?", 20); r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonStateUnavailable {
			t.Errorf("ask %d on a full folder = %+v, want unavailable state_unavailable (no marker, no question)", i+1, r)
		}
	}
	if n := d.SpokenBySpeaker(); n != 0 {
		t.Errorf("%d questions spoken with no crash marker, want 0", n)
	}

	// The space is freed: the next question writes the marker first.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if r := d.Ask("Shall I deploy it now?", 30); r.Result != daemonapi.Answered {
		t.Errorf("ask once the space is free = %+v, want answered", r)
	}
	if st := d.Status(); st.StateFailing != "" {
		t.Errorf("status once the marker is written: state_failing %q, want none", st.StateFailing)
	}

	d.kill9()
	d.restart()
	if b := d.Budget(); !b.FailClosed || b.FailClosedReason != daemonapi.FailClosedDaemon {
		t.Errorf("after kill -9 and a restart: budget %+v, want fail_closed %s", b, daemonapi.FailClosedDaemon)
	}
	if r := d.Ask("Did the restart reset the budget?", 10); r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonBudgetExhausted {
		t.Errorf("ask after kill -9 and a restart = %+v, want refused budget_exhausted", r)
	}
	spoken := d.SpokenBySpeaker()
	t.Logf("questions spoken in all: %d, cap 3", spoken)
	if spoken != 1 {
		t.Errorf("%d questions spoken in all, want 1 (cap 3: the full folder spoke none, the restart none)", spoken)
	}
}
