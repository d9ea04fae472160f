package x11

import (
	"errors"
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

// simulate types a plan against m: it applies the bindings to m (so that
// the next plan finds them) and looks every stroke up in the map as it
// then is.
func simulate(t *testing.T, p xplan, m keymap) string {
	t.Helper()
	for _, b := range p.bind {
		row := m.row(b.kc)
		clear(row)
		copy(row, b.syms[:])
	}
	var out []rune
	for _, r := range p.text {
		k, ok := p.keys[r]
		if !ok {
			t.Fatalf("no key for %q", r)
		}
		level := 0
		if k.shift {
			level = 1
		}
		out = append(out, rune(m.row(k.kc)[level]))
	}
	return string(out)
}

// keysyms is what text types as (Latin-1 keysyms are the runes; Unicode
// ones are 0x01000000 more).
func keysyms(text string) string {
	var want []rune
	for _, r := range text {
		want = append(want, rune(keysymFor(r)))
	}
	return string(want)
}

func TestPlanX(t *testing.T) {
	tests := []struct {
		text  string
		shift bool
		err   error
	}{
		{"ab BA", true, nil},
		{"aäöüß", true, nil},          // 4 bound, 6 slots
		{"xäöüßé", true, nil},         // x is bound too: 6 slots
		{"xäöüßéñ", true, errTooMany}, // 7 to bind
		{"äöü äöü", false, nil},       // 3 slots without Shift
		{"äöüß", false, errTooMany},   // 4 to bind, 3 slots
		{"A", false, nil},             // A has no plain key: bound
		{strings.Repeat("ab", 50), true, nil},
	}
	for _, tt := range tests {
		m := testMap()
		p, err := planX(tt.text, m, tt.shift, nil)
		if !errors.Is(err, tt.err) {
			t.Errorf("planX(%q, shift %v) = %v, want %v", tt.text, tt.shift, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		if got := simulate(t, p, m); got != keysyms(tt.text) {
			t.Errorf("planX(%q) types %q", tt.text, got)
		}
		for _, b := range p.bind {
			if !slices.Contains(testMap().spare(), b.kc) {
				t.Errorf("planX(%q) binds keycode %d, which is not spare", tt.text, b.kc)
			}
		}
	}
	full := keymap{min: 8, per: 2, syms: []xproto.Keysym{'a', 'A', 'b', 0}}
	if _, err := planX("ä", full, true, nil); !errors.Is(err, errNoSpare) {
		t.Errorf("planX with no spare keycode = %v, want errNoSpare", err)
	}
	if p, err := planX("ab", full, true, nil); err != nil || len(p.bind) != 0 {
		t.Errorf("planX of direct keys without spare keycodes = %+v, %v", p, err)
	}
}

// The bindings stay from one text to the next: a character still bound is
// typed where it is, and a keycode is bound again only when none is
// free, the least recently used first.
func TestPlanXKeepsBindings(t *testing.T) {
	m := testMap()
	var held []binding
	step := func(text string, wantBind int) {
		t.Helper()
		p, err := planX(text, m, true, held)
		if err != nil {
			t.Fatalf("planX(%q): %v", text, err)
		}
		if len(p.bind) != wantBind {
			t.Errorf("planX(%q) changes %d keycodes, want %d: %v", text, len(p.bind), wantBind, p.bind)
		}
		if got := simulate(t, p, m); got != keysyms(text) {
			t.Errorf("planX(%q) types %q", text, got)
		}
		held = p.held
	}
	step("äö", 1)   // 12: ä ö
	step("äö ü", 1) // 13: ü; 12 as it was
	step("üäö", 0)  // all bound
	step("ßé", 2)   // the free slots: 13 (Shift): ß, 14: é
	step("ñ", 1)    // the last free slot: 14 (Shift)
	step("ñç", 1)   // none free: ç on 12, the least recently used
	if r := m.row(12); r[0] != 'ç' {
		t.Errorf("keycode 12 = %v, want ç on it", r)
	}
	if r := m.row(13); r[0] != 'ü' || r[1] != 'ß' {
		t.Errorf("keycode 13 = %v, want ü ß kept", r)
	}
	// Bindings that somebody changed since are not ours: m.row(12) now
	// holds something else and the plan leaves it alone.
	copy(m.row(12), []xproto.Keysym{'q', 'Q', 0, 0})
	held = slices.DeleteFunc(held, func(b binding) bool { return !ourRow(m.row(b.kc), b.syms) })
	p, err := planX("qä", m, true, held)
	if err != nil {
		t.Fatal(err)
	}
	if k := p.keys['q']; k.kc != 12 {
		t.Errorf("q typed on %v, want keycode 12 (now a used key)", k)
	}
	for _, b := range p.bind {
		if b.kc == 12 {
			t.Errorf("planX rebinds keycode 12, which is no longer spare")
		}
	}
}
