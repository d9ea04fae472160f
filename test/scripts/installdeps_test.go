package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestInstallDeps: scripts/install-deps.sh, with stand-ins for dpkg-query
// (every package installed but those in $MISSING), apt-get and sudo (both
// record their calls) and id (not root), sleep (instant):
//   - nothing missing: no apt-get, no output;
//   - two missing: it says which and what each is for, and that sudo
//     will ask, before the first apt-get; it installs exactly those, with
//     sudo, waiting for the dpkg lock (DPkg::Lock::Timeout);
//   - another apt holding the package lists: apt-get update is tried again
//     until it gets them, and the wait is said once;
//   - update failing otherwise: its error, exit 1, nothing installed.
func TestInstallDeps(t *testing.T) {
	deps := filepath.Join(filepath.Dir(script()), "install-deps.sh")
	for _, tc := range []struct {
		name    string
		missing string
		locked  int    // apt-get update calls that find the lists locked
		update  string // apt-get update's failure other than a lock
		calls   string // want: the calls, a line each
		says    []string
		fail    bool
	}{
		{name: "none missing", calls: ""},
		{name: "two missing", missing: "xsel jq",
			calls: "sudo apt-get update -qq\nsudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends jq xsel\n",
			says: []string{"2 Debian package(s) missing, installing them with sudo apt-get:",
				"jq the README's yaz-decode -o json | jq example",
				"xsel cmd/yaz-type: the X11 clipboard"}},
		{name: "lists locked", missing: "sox", locked: 3,
			calls: strings.Repeat("sudo apt-get update -qq\n", 4) + "sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends sox\n",
			says:  []string{"waiting for another apt to finish: E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)"}},
		{name: "update fails", missing: "sox", update: "E: Failed to fetch http://deb.debian.org/debian: 404",
			calls: "sudo apt-get update -qq\n", says: []string{"E: Failed to fetch"}, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stub := t.TempDir()
			calls := filepath.Join(stub, "calls")
			writeExe(t, filepath.Join(stub, "id"), "#!/bin/sh\necho 1000\n")
			writeExe(t, filepath.Join(stub, "sleep"), "#!/bin/sh\n:\n")
			writeExe(t, filepath.Join(stub, "sudo"), "#!/bin/sh\nprintf 'sudo ' >> \"$STUB/calls\"\nexec \"$@\"\n")
			writeExe(t, filepath.Join(stub, "dpkg-query"), `#!/bin/sh
for p in $MISSING; do [ "$p" != "$3" ] || exit 1; done
printf 'install ok installed'
`)
			writeExe(t, filepath.Join(stub, "apt-get"), `#!/bin/bash
echo "apt-get $*" >> "$STUB/calls"
echo "apt-get called" >&2
case " $* " in
*" update "*)
  n=$(cat "$STUB/updates" 2>/dev/null || echo 0); echo $((n + 1)) > "$STUB/updates"
  if [ "$n" -lt "$LOCKED" ]; then
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2
    echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
    exit 100
  fi
  [ -z "$UPDATE" ] || { echo "$UPDATE" >&2; exit 100; } ;;
esac
`)
			cmd := exec.Command(deps)
			cmd.Env = []string{"PATH=" + stub + ":/usr/bin:/bin", "STUB=" + stub, "MISSING=" + tc.missing,
				"LOCKED=" + strconv.Itoa(tc.locked), "UPDATE=" + tc.update}
			out, err := cmd.CombinedOutput()
			if tc.fail != (err != nil) {
				t.Fatalf("install-deps.sh: %v, want failure %v\n%s", err, tc.fail, out)
			}
			got, _ := os.ReadFile(calls)
			if string(got) != tc.calls {
				t.Errorf("calls:\n%s\nwant:\n%s", got, tc.calls)
			}
			if tc.missing == "" && len(out) != 0 {
				t.Errorf("with nothing missing it said %q", out)
			}
			before, _, _ := strings.Cut(string(out), "apt-get called")
			for _, s := range tc.says {
				if !hasLine(string(out), s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if tc.missing != "" {
				for _, p := range strings.Fields(tc.missing) {
					if !strings.Contains(before, "  "+p+" ") {
						t.Errorf("%s is not named before the first apt-get:\n%s", p, out)
					}
				}
			}
			if n := strings.Count(string(out), "waiting for another apt"); n > 1 {
				t.Errorf("the wait is said %d times:\n%s", n, out)
			}
		})
	}
}

// hasLine: a line of out holds s, spaces between words counted as one.
func hasLine(out, s string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(strings.Join(strings.Fields(l), " "), s) {
			return true
		}
	}
	return false
}
