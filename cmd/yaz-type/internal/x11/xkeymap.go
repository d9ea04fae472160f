package x11

import (
	"errors"
	"slices"

	"github.com/jezek/xgb/xproto"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// keysymFor is the X keysym of r (backend.Keysym; none for a control
// character, which a cleaned text never has).
func keysymFor(r rune) xproto.Keysym {
	ks, _ := backend.Keysym(r)
	return xproto.Keysym(ks)
}

// keymap is the core keyboard map: per keysyms for each keycode from min.
type keymap struct {
	min  xproto.Keycode
	per  int
	syms []xproto.Keysym
}

// row is the keysyms of keycode kc (nil outside the map).
func (m keymap) row(kc xproto.Keycode) []xproto.Keysym {
	i := int(kc) - int(m.min)
	if i < 0 || m.per == 0 || (i+1)*m.per > len(m.syms) {
		return nil
	}
	return m.syms[i*m.per : (i+1)*m.per]
}

// keycodes is the number of keycodes in the map.
func (m keymap) keycodes() int {
	if m.per == 0 {
		return 0
	}
	return len(m.syms) / m.per
}

// stroke is how one character is typed: a keycode, with Shift or without.
type stroke struct {
	kc    xproto.Keycode
	shift bool
}

// direct finds the characters the map already has where typing them is
// safe whatever the keyboard group: a keysym on the first level (no
// modifier) or, when Shift exists, the second, of a key whose second group
// is empty or the same as the first (so a person who has switched to
// another layout still gets the same character: "a A a A" qualifies, "a A
// Cyrillic_ef Cyrillic_EF" does not). Plain keys win over shifted ones,
// low keycodes over high ones.
func (m keymap) direct(shift bool) map[xproto.Keysym]stroke {
	out := map[xproto.Keysym]stroke{}
	levels := 1
	if shift {
		levels = 2
	}
	for level := range levels {
		for i := range m.keycodes() {
			kc := m.min + xproto.Keycode(i)
			row := m.row(kc)
			if level >= len(row) || row[level] == 0 {
				continue
			}
			if len(row) > 2 && row[2] != 0 && row[2] != row[0] {
				continue
			}
			if len(row) > 3 && row[3] != 0 && row[3] != row[1] {
				continue
			}
			if _, ok := out[row[level]]; !ok {
				out[row[level]] = stroke{kc: kc, shift: level == 1}
			}
		}
	}
	return out
}

// spare lists the keycodes above 8 with no keysym at all: free to bind.
func (m keymap) spare() []xproto.Keycode {
	var out []xproto.Keycode
	for i := range m.keycodes() {
		kc := m.min + xproto.Keycode(i)
		if kc <= 8 {
			continue
		}
		if !slices.ContainsFunc(m.row(kc), func(s xproto.Keysym) bool { return s != 0 }) {
			out = append(out, kc)
		}
	}
	return out
}

// binding puts up to two keysyms on a spare keycode (the second one,
// typed with Shift, may be 0).
type binding struct {
	kc   xproto.Keycode
	syms [2]xproto.Keysym
}

// xplan is how a text is typed, in one round of bindings: the characters
// the map has are typed on their keys; the others are bound to spare
// keycodes (two on each, the second typed with Shift, when Shift exists)
// in one batch of map changes before the first key. A keycode is never
// bound again while the text is typed: a window reads the map when it
// looks up a key, maybe long after the key was sent, and would find the
// later character.
type xplan struct {
	text []rune
	bind []binding // keycodes whose keysyms change before the text
	keys map[rune]stroke
	// held is what the spare keycodes hold after the bindings, least
	// recently used first: what the next text finds (see x11Held).
	held []binding
}

// Errors of planX.
var (
	// errNoSpare: a character needs a binding and the map has no spare
	// keycode.
	errNoSpare = errors.New("no spare keycode in the keyboard map")
	// errTooMany: the text has more characters to bind than the spare
	// keycodes hold at once.
	errTooMany = errors.New("more characters to bind than the spare keycodes hold")
)

// planX plans text for map m. shift tells whether a Shift key exists (the
// second level is usable). held are the spare keycodes that earlier texts
// bound and that still hold what they bound, least recently used first:
// they count as spare, a character they hold is typed on them as it is,
// and one is bound again only when no keycode is free, the least recently
// used first (so that a window still reading the last text's keys finds
// them as they were).
func planX(text string, m keymap, shift bool, held []binding) (xplan, error) {
	// The held keycodes are spare for the plan: blank them.
	m.syms = slices.Clone(m.syms)
	for _, b := range held {
		clear(m.row(b.kc))
	}
	direct := m.direct(shift)
	levels := 1
	if shift {
		levels = 2
	}
	type slot struct {
		kc    xproto.Keycode
		level int
	}
	now := map[slot]xproto.Keysym{} // what the spare keycodes hold
	age := map[xproto.Keycode]int{} // position in held: lower is older
	for i, b := range held {
		age[b.kc] = i + 1
		for level := range levels {
			if b.syms[level] != 0 {
				now[slot{b.kc, level}] = b.syms[level]
			}
		}
	}
	var slots []slot
	for _, kc := range m.spare() {
		for level := range levels {
			slots = append(slots, slot{kc, level})
		}
	}
	p := xplan{text: []rune(text), keys: map[rune]stroke{}}
	var need []rune
	for _, r := range p.text {
		if _, ok := p.keys[r]; ok || slices.Contains(need, r) {
			continue
		}
		if s, ok := direct[keysymFor(r)]; ok {
			p.keys[r] = s
			continue
		}
		need = append(need, r)
	}
	if len(need) == 0 {
		p.held = held
		return p, nil
	}
	if len(slots) == 0 {
		return xplan{}, errNoSpare
	}
	if len(need) > len(slots) {
		return xplan{}, errTooMany
	}
	used := map[slot]bool{}
	var rest []rune
	for _, r := range need {
		ks := keysymFor(r)
		i := slices.IndexFunc(slots, func(s slot) bool { return now[s] == ks && !used[s] })
		if i < 0 {
			rest = append(rest, r)
			continue
		}
		used[slots[i]] = true
		p.keys[r] = stroke{kc: slots[i].kc, shift: slots[i].level == 1}
	}
	// Free slots first (in keycode order), then the least recently used.
	free := slices.Clone(slots)
	slices.SortStableFunc(free, func(a, b slot) int {
		ea, eb := now[a] == 0, now[b] == 0
		switch {
		case ea != eb:
			if ea {
				return -1
			}
			return 1
		case ea:
			return 0
		}
		return age[a.kc] - age[b.kc]
	})
	free = slices.DeleteFunc(free, func(s slot) bool { return used[s] })
	changed := map[xproto.Keycode]bool{}
	for i, r := range rest {
		s := free[i]
		now[s] = keysymFor(r)
		used[s] = true
		changed[s.kc] = true
		p.keys[r] = stroke{kc: s.kc, shift: s.level == 1}
	}
	// A changed keycode is set whole: both levels as they now are.
	var fresh []binding
	for _, kc := range m.spare() {
		b := binding{kc: kc, syms: [2]xproto.Keysym{now[slot{kc, 0}], now[slot{kc, 1}]}}
		if changed[kc] {
			p.bind = append(p.bind, b)
		}
		if b.syms != [2]xproto.Keysym{} && (used[slot{kc, 0}] || used[slot{kc, 1}]) {
			fresh = append(fresh, b)
		}
	}
	// What the text used goes last: the most recently used.
	for _, b := range held {
		if !slices.ContainsFunc(fresh, func(f binding) bool { return f.kc == b.kc }) {
			p.held = append(p.held, b)
		}
	}
	p.held = append(p.held, fresh...)
	return p, nil
}
