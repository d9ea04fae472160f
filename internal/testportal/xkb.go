package testportal

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The XKB oracle: libxkbcommon's own answers, through `xkbcli
// how-to-type`, which lists every key, layout and level that types a
// keysym, keycodes ascending (the order mutter searches in).

// Entry is one way to type a keysym: a keycode at a level (1-based) of a
// layout (1-based).
type Entry struct {
	Keycode, Layout, Level int
}

var (
	xkbMu    sync.Mutex
	xkbCache = map[string]howTo{}
)

type howTo struct {
	keysym  uint32
	entries []Entry
}

// howToType runs `xkbcli how-to-type` once per question.
func howToType(layout, options, what string, keysym bool) (howTo, error) {
	key := fmt.Sprint(layout, "|", options, "|", what, "|", keysym)
	xkbMu.Lock()
	h, ok := xkbCache[key]
	xkbMu.Unlock()
	if ok {
		return h, nil
	}
	args := []string{"how-to-type", "--layout", layout}
	if options != "" {
		args = append(args, "--options", options)
	}
	if keysym {
		args = append(args, "--keysym")
	}
	out, err := exec.Command("xkbcli", append(args, what)...).Output()
	if err != nil {
		return h, fmt.Errorf("xkbcli %s: %w", strings.Join(append(args, what), " "), err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "keysym:":
			v := strings.Trim(f[len(f)-1], "()")
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				return h, fmt.Errorf("xkbcli how-to-type: %q: %w", line, err)
			}
			h.keysym = uint32(n)
		case len(f) >= 5 && f[0] != "KEYCODE":
			mods := -1
			for i, s := range f {
				if strings.HasPrefix(s, "[") {
					mods = i
					break
				}
			}
			if mods < 4 {
				continue
			}
			kc, err1 := strconv.Atoi(f[0])
			lay, err2 := strconv.Atoi(f[2])
			lvl, err3 := strconv.Atoi(f[mods-1])
			if err1 != nil || err2 != nil || err3 != nil {
				return h, fmt.Errorf("xkbcli how-to-type: cannot read %q", line)
			}
			h.entries = append(h.entries, Entry{kc, lay, lvl})
		}
	}
	xkbMu.Lock()
	xkbCache[key] = h
	xkbMu.Unlock()
	return h, nil
}

func must(t testing.TB, h howTo, err error) howTo {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Keysym is the keysym libxkbcommon gives a character
// (xkb_utf32_to_keysym: a legacy keysym where one exists); 0 for none.
func Keysym(t testing.TB, r rune) uint32 {
	t.Helper()
	h, err := howToType("us", "", fmt.Sprintf("%#x", r), false)
	return must(t, h, err).keysym
}

// Entries are the ways layout types keysym ks.
func Entries(t testing.TB, layout string, ks uint32) []Entry {
	t.Helper()
	h, err := howToType(layout, "", fmt.Sprintf("%#x", ks), true)
	return must(t, h, err).entries
}

// firstLevel is the level of the first key (lowest keycode, lowest level)
// of the first layout that has ks: what mutter presses.
// It runs on the bus's goroutines: an error is returned, never fatal.
func firstLevel(layout, options string, ks uint32) (int, bool, error) {
	h, err := howToType(layout, options, fmt.Sprintf("%#x", ks), true)
	if err != nil {
		return 0, false, err
	}
	for _, e := range h.entries {
		if e.Layout == 1 {
			return e.Level, true, nil
		}
	}
	return 0, false, nil
}
