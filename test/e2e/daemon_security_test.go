package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// rawDialEnv makes the test binary a plain unix-socket client: it connects
// to the path, sends a status request and prints what comes back.
const rawDialEnv = "YAZ_E2E_RAWDIAL"

func rawDial(path string) int {
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("dial error:", err)
		return 3
	}
	defer conn.Close()
	fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":1,"method":"status"}`+"\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if line != "" {
		fmt.Println("reply:", strings.TrimSpace(line))
		return 0
	}
	fmt.Println("no reply:", err)
	return 4
}

// TestSocketIsPrivate: the folder is 0700 and the socket 0600; a client of
// another uid that gets past the file modes (it holds CAP_DAC_OVERRIDE) is
// still refused by the SO_PEERCRED check, and the refusal is audited.
func TestSocketIsPrivate(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs a client as another uid and needs root (as make test in CI has)")
	}
	d := startDaemon(t, baseConfig())
	dir := filepath.Join(d.Runtime, safesocket.DirName)
	sock := safesocket.SocketPath(dir)
	for path, want := range map[string]os.FileMode{dir: 0o700, sock: 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %04o, want %04o", path, got, want)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	caps := "+dac_override,+dac_read_search"
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps="+caps, "--ambient-caps="+caps, self)
	cmd.Env = append(os.Environ(), rawDialEnv+"="+sock)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "no reply") {
		t.Fatalf("a client of uid 65534 got: %s (want no reply: refused)", out)
	}
	d.WaitFor(5*time.Second, "the audited refusal", func() bool {
		for _, e := range d.Events() {
			if e.Kind == "peer.rejected" && e.PeerUID == 65534 && e.PeerPID > 0 {
				return true
			}
		}
		return false
	})
	// Our own uid, the same way, is served.
	cmd = exec.Command(self)
	cmd.Env = append(os.Environ(), rawDialEnv+"="+sock)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"result"`) {
		t.Errorf("a client of our uid got: %s %v", out, err)
	}
}

// socketInodes returns the inodes of the sockets in /proc/net/FILE.
func socketInodes(t *testing.T, pid int, files ...string) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue // no IPv6 on this machine
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 {
				inodes[fields[9]] = true
			}
		}
	}
	return inodes
}

// TestNoNetworkSockets: no process of a running daemon (the daemon and
// every child, during a question) holds a TCP, UDP or raw socket; and the
// daemon runs in a network namespace that has no interfaces at all.
func TestNoNetworkSockets(t *testing.T) {
	t.Parallel()
	t.Run("no inet sockets", func(t *testing.T) {
		d := startDaemon(t, baseConfig())
		res := make(chan daemonapi.AskResult, 1)
		go func() { res <- d.Ask(longQuestion, 40) }()
		d.WaitFor(20*time.Second, "the question", func() bool { return d.Status().Asking })
		checked := 0
		for _, pid := range d.Processes() {
			inet := socketInodes(t, pid, "tcp", "tcp6", "udp", "udp6", "raw", "raw6", "udplite", "udplite6")
			fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			if err != nil {
				continue // ended meanwhile
			}
			checked++
			for _, fd := range fds {
				link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
				if ino, ok := strings.CutPrefix(link, "socket:["); ok && inet[strings.TrimSuffix(ino, "]")] {
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					t.Errorf("process %d (%s) holds an inet socket on fd %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), fd.Name())
				}
			}
		}
		if checked < 4 { // daemon, gate, speak, decode at least
			t.Errorf("checked %d processes, want the daemon and its children", checked)
		}
		<-res
	})
	t.Run("empty network namespace", func(t *testing.T) {
		d := newDaemon(t, baseConfig())
		d.Wrap = []string{"unshare", "--net"}
		d.Start()
		d.WaitRunning("gate", "speak", "decode")
		dev, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", d.Status().PID))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(dev), "\n")[2:] {
			if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name != "lo" {
				t.Fatalf("the daemon's namespace has interface %q; want none but lo", name)
			}
		}
		if r := d.Ask("Does this work without a network?", 30); r.Result != daemonapi.Answered {
			t.Errorf("ask in an empty network namespace = %+v, want answered", r)
		}
	})
}

// TestNoTextInLogs: a question, an answer and a dictation, each carrying a
// marker, go through the daemon; the markers come back to the caller and
// appear in no log line, audit line or error output.
func TestNoTextInLogs(t *testing.T) {
	t.Parallel()
	const qMark, aMark = "QMARKzx81", "AMARKqv27"
	d := startDaemon(t, baseConfig().With("budget.ask_human_per_hour", "2").
		With("children.decode", arr(bin("fakedecode"))), "YAZ_FAKE_TEXT=yes "+aMark+" indeed")
	r := d.Ask("Is "+qMark+" the right branch?", 30)
	if r.Result != daemonapi.Answered || !strings.Contains(r.Answer, aMark) {
		t.Fatalf("ask = %+v, want the answer with the marker (else this test proves nothing)", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ctlErr, _ := d.Ctl(ctx, "ask_human", `{"question":"And `+qMark+` again?","timeout_s":20}`)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, answerWAV()))
	d.stopHold(c)
	last, err := c.Last(ctx)
	if err != nil || !strings.Contains(last.Text, aMark) {
		t.Fatalf("last = %+v, %v: want the dictation with the marker", last, err)
	}
	// A question that is refused as invalid (too long) must not echo it.
	_, err = c.AskHuman(ctx, daemonapi.AskParams{Question: strings.Repeat(qMark+" ", 100)})
	if err == nil || strings.Contains(err.Error(), qMark) {
		t.Errorf("an over-long question: err %v, want an error without its text", err)
	}
	d.Stop()
	audit, err := os.ReadFile(d.Audit)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"daemon log": d.Log.String(), "audit": string(audit), "ctl stderr": ctlErr, "stdout": d.Stdout.String()} {
		for _, m := range []string{qMark, aMark} {
			if strings.Contains(text, m) {
				t.Errorf("%s contains the marker %s", name, m)
			}
		}
	}
}
