package inject

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"
)

func TestKeysymFor(t *testing.T) {
	tests := []struct {
		r    rune
		want xproto.Keysym
	}{
		{'a', 0x61}, {' ', 0x20}, {'~', 0x7e}, {'\u00a0', 0xa0}, {'ü', 0xfc}, {'ÿ', 0xff},
		{'Ā', 0x1000100}, {'Ω', 0x10003a9}, {'✓', 0x1002713}, {'😀', 0x101f600}, {'ש', 0x10005e9},
	}
	for _, tt := range tests {
		if got := keysymFor(tt.r); got != tt.want {
			t.Errorf("keysymFor(%q) = %#x, want %#x", tt.r, got, tt.want)
		}
	}
}

// testMap is a small map from keycode 8: per 4, with US letters a and b
// (one group), an x key whose second group differs, the space, and spare
// keycodes 12, 13 and 14.
func testMap() keymap {
	rows := [][]xproto.Keysym{
		{},                               // 8: spare, but never used
		{'a', 'A', 'a', 'A'},             // 9
		{'b', 'B', 0, 0},                 // 10
		{'x', 'X', 0x1000447, 0x1000427}, // 11: x in group 1, ч in group 2
		{},                               // 12
		{},                               // 13
		{},                               // 14
		{' ', 0, ' ', 0},                 // 15
	}
	m := keymap{min: 8, per: 4}
	for _, r := range rows {
		row := make([]xproto.Keysym, 4)
		copy(row, r)
		m.syms = append(m.syms, row...)
	}
	return m
}

func TestKeymapDirectAndSpare(t *testing.T) {
	m := testMap()
	if got := m.spare(); !slices.Equal(got, []xproto.Keycode{12, 13, 14}) {
		t.Errorf("spare = %v", got)
	}
	d := m.direct(true)
	for ks, want := range map[xproto.Keysym]stroke{'a': {9, false}, 'A': {9, true}, 'b': {10, false}, 'B': {10, true}, ' ': {15, false}} {
		if got, ok := d[ks]; !ok || got != want {
			t.Errorf("direct[%q] = %v, %v; want %v", rune(ks), got, ok, want)
		}
	}
	if _, ok := d['x']; ok {
		t.Error("x is direct, but its second group differs")
	}
	if _, ok := m.direct(false)['A']; ok {
		t.Error("A is direct without a Shift key")
	}
}

// type simulates typing a plan against m: it applies each chunk's
// bindings and looks every stroke up in the map as it is then.
func simulate(t *testing.T, p xplan, m keymap) string {
	t.Helper()
	m.syms = slices.Clone(m.syms)
	var out []rune
	for _, ch := range p.chunks {
		for _, b := range ch.bind {
			row := m.row(b.kc)
			clear(row)
			copy(row, b.syms[:])
		}
		for _, r := range ch.text {
			k, ok := ch.keys[r]
			if !ok {
				t.Fatalf("no key for %q", r)
			}
			level := 0
			if k.shift {
				level = 1
			}
			out = append(out, rune(m.row(k.kc)[level]))
		}
	}
	return string(out)
}

func TestPlanX(t *testing.T) {
	m := testMap()
	tests := []struct {
		text   string
		shift  bool
		chunks int
	}{
		{"ab BA", true, 1},
		{"aäöüß", true, 1},       // 4 bound, 6 slots
		{"xäöüßé", true, 1},      // x is bound too: 6 slots
		{"xäöüßéñ", true, 2},     // 7 to bind
		{"äöü äöü", false, 1},    // 3 slots without Shift
		{"äöüßéñçø", false, 3},   // 8 to bind, 3 at a time
		{"äöüäöüßäöü", false, 3}, // back to äöü after ß
		{"A", false, 1},          // A has no plain key: bound
		{strings.Repeat("ab", 50), true, 1},
	}
	for _, tt := range tests {
		p, ok := planX(tt.text, m, tt.shift)
		if !ok {
			t.Errorf("planX(%q) failed", tt.text)
			continue
		}
		if len(p.chunks) != tt.chunks {
			t.Errorf("planX(%q, shift %v) = %d chunks, want %d", tt.text, tt.shift, len(p.chunks), tt.chunks)
		}
		got := simulate(t, p, m)
		// Latin-1 keysyms are the runes; Unicode ones are 0x01000000 more.
		var want []rune
		for _, r := range tt.text {
			want = append(want, rune(keysymFor(r)))
		}
		if got != string(want) {
			t.Errorf("planX(%q) types %q", tt.text, got)
		}
		for _, kc := range p.touched {
			if !slices.Contains(m.spare(), kc) {
				t.Errorf("planX(%q) touches keycode %d, which is not spare", tt.text, kc)
			}
		}
	}
	full := keymap{min: 8, per: 2, syms: []xproto.Keysym{'a', 'A', 'b', 0}}
	if _, ok := planX("ä", full, true); ok {
		t.Error("planX with no spare keycode succeeded")
	}
	if p, ok := planX("ab", full, true); !ok || len(p.chunks) != 1 {
		t.Error("planX of direct keys failed without spare keycodes")
	}
}

func TestParseDisplay(t *testing.T) {
	tests := []struct {
		in                     string
		network, addr, host, n string
		screen                 int
	}{
		{":0", "unix", "/tmp/.X11-unix/X0", "", "0", 0},
		{":12.1", "unix", "/tmp/.X11-unix/X12", "", "12", 1},
		{"unix:3", "unix", "/tmp/.X11-unix/X3", "", "3", 0},
		{"localhost:10.0", "tcp", "localhost:6010", "localhost", "10", 0},
		{"tcp/example.org:1", "tcp", "example.org:6001", "example.org", "1", 0},
		{"/private/tmp/launch-x/org.xquartz:0", "unix", "/private/tmp/launch-x/org.xquartz:0", "", "0", 0},
	}
	for _, tt := range tests {
		d, err := parseDisplay(tt.in)
		if err != nil || d.network != tt.network || d.addr != tt.addr || d.host != tt.host || d.number != tt.n || d.screen != tt.screen {
			t.Errorf("parseDisplay(%q) = %+v, %v", tt.in, d, err)
		}
	}
	for _, bad := range []string{"", "0", ":", ":x", ":1.y", ":-1"} {
		if _, err := parseDisplay(bad); err == nil {
			t.Errorf("parseDisplay(%q) succeeded", bad)
		}
	}
}

// xauthEntry is one record of an authority file.
func xauthEntry(family uint16, addr, disp string, cookie []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, family)
	for _, f := range [][]byte{[]byte(addr), []byte(disp), []byte("MIT-MAGIC-COOKIE-1"), cookie} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

// A server that wants a cookie: the in-process backend finds it in the
// file that the environment's XAUTHORITY names (for this display, among
// others), and is refused without it.
func TestX11Authority(t *testing.T) {
	dir := t.TempDir()
	cookie := []byte("0123456789abcdef")
	server := filepath.Join(dir, "server")
	if err := os.WriteFile(server, xauthEntry(familyWild, "", "", cookie), 0o600); err != nil {
		t.Fatal(err)
	}
	env := startXWith(t, "-auth", server)
	d, _ := parseDisplay((Options{Environ: env}).getenv("DISPLAY"))
	host, _ := os.Hostname()
	wrong := []byte("fedcba9876543210")
	client := filepath.Join(dir, "client")
	file := append(xauthEntry(familyLocal, host, d.number+"9", wrong), xauthEntry(familyLocal, host, d.number, cookie)...)
	if err := os.WriteFile(client, file, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x, err := dialX(ctx, append(withoutEnv(env, "XAUTHORITY"), "XAUTHORITY="+client))
	if err != nil {
		t.Fatalf("dialX with the cookie: %v", err)
	}
	if _, err := x.sync(); err != nil {
		t.Errorf("round trip: %v", err)
	}
	x.close()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, xauthEntry(familyLocal, host, d.number, wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dialX(ctx, append(withoutEnv(env, "XAUTHORITY"), "XAUTHORITY="+bad)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("dialX with a wrong cookie = %v, want ErrUnavailable", err)
	}
}
