package inject

import (
	"slices"

	"github.com/jezek/xgb/xproto"
)

// keysymFor is the X keysym of r: ASCII and Latin-1 are their own keysyms,
// everything else is a Unicode keysym, 0x01000000 + the code point (as
// Xlib's Unicode keysyms are defined).
func keysymFor(r rune) xproto.Keysym {
	if (r >= 0x20 && r <= 0x7e) || (r >= 0xa0 && r <= 0xff) {
		return xproto.Keysym(r)
	}
	return xproto.Keysym(0x01000000 + r)
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

// chunk is a piece of the text and the bindings to make before typing it.
type chunk struct {
	text []rune
	bind []binding // keycodes whose keysyms change before this chunk
	keys map[rune]stroke
}

// xplan is how a text is typed: the characters the map has are typed on
// their keys; the others are bound to spare keycodes, as many as fit (two
// on each, the second typed with Shift, when Shift exists), in one batch
// of map changes per chunk. A text that needs more of them than fit is cut
// into chunks, and a binding changes only between chunks.
type xplan struct {
	chunks []chunk
	// touched are the spare keycodes that any chunk binds.
	touched []xproto.Keycode
}

// planX plans text for map m. shift tells whether a Shift key exists (the
// second level is usable). It fails only when a character needs binding
// and the map has no spare keycode.
func planX(text string, m keymap, shift bool) (xplan, bool) {
	direct := m.direct(shift)
	spare := m.spare()
	type slot struct {
		kc    xproto.Keycode
		level int
	}
	var slots []slot
	for _, kc := range spare {
		slots = append(slots, slot{kc, 0})
		if shift {
			slots = append(slots, slot{kc, 1})
		}
	}
	var p xplan
	bound := map[rune]slot{} // what the map holds now
	held := map[slot]rune{}  // the reverse
	cur := chunk{keys: map[rune]stroke{}}
	need := map[rune]bool{} // characters the current chunk binds
	flush := func() {
		if len(cur.text) > 0 {
			p.chunks = append(p.chunks, cur)
		}
		cur = chunk{keys: map[rune]stroke{}}
		clear(need)
	}
	for _, r := range text {
		ks := keysymFor(r)
		if s, ok := direct[ks]; ok {
			cur.keys[r] = s
			cur.text = append(cur.text, r)
			continue
		}
		if !need[r] {
			if len(slots) == 0 {
				return xplan{}, false
			}
			if len(need) == len(slots) {
				flush()
			}
			need[r] = true
			if _, ok := bound[r]; !ok {
				// A slot that no character of this chunk uses.
				var free slot
				found := false
				for _, s := range slots {
					if old, ok := held[s]; !ok || !need[old] {
						free, found = s, true
						if !ok {
							break
						}
					}
				}
				if !found {
					return xplan{}, false // cannot happen: len(need) < len(slots)
				}
				if old, ok := held[free]; ok {
					delete(bound, old)
				}
				bound[r], held[free] = free, r
				cur.bind = setBinding(cur.bind, free.kc, free.level, ks)
				if !slices.Contains(p.touched, free.kc) {
					p.touched = append(p.touched, free.kc)
				}
			}
			s := bound[r]
			cur.keys[r] = stroke{kc: s.kc, shift: s.level == 1}
		}
		cur.text = append(cur.text, r)
	}
	flush()
	// A changed keycode is set whole: fill in the level that stays.
	for i := range p.chunks {
		for j := range p.chunks[i].bind {
			b := &p.chunks[i].bind[j]
			for level := range 2 {
				if b.syms[level] == 0 {
					b.syms[level] = symAt(p.chunks[:i], b.kc, level)
				}
			}
		}
	}
	return p, true
}

// setBinding sets one level of keycode kc in list.
func setBinding(list []binding, kc xproto.Keycode, level int, ks xproto.Keysym) []binding {
	for i := range list {
		if list[i].kc == kc {
			list[i].syms[level] = ks
			return list
		}
	}
	b := binding{kc: kc}
	b.syms[level] = ks
	return append(list, b)
}

// symAt is the keysym the chunks before leave on keycode kc, level level.
func symAt(before []chunk, kc xproto.Keycode, level int) xproto.Keysym {
	for i := len(before) - 1; i >= 0; i-- {
		for _, b := range before[i].bind {
			if b.kc == kc && b.syms[level] != 0 {
				return b.syms[level]
			}
		}
	}
	return 0
}
