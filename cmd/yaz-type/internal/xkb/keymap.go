// Package xkb reads a compositor's keymap for the portal route: the XKB
// keymap in text format v1 that a Wayland compositor hands every
// client's wl_keyboard (mutter and KWin: xkb_keymap_get_as_string of the
// person's layouts), read for one thing: which characters a keysym sent
// through NotifyKeyboardKeysym types ([Keymap.Plan]). Its table is the
// keysyms of X11/keysymdef.h that stand for one character (keysyms.go,
// written by gen_keysyms.go).
//
// The portal's backend does not type a keysym itself: it looks for a
// keycode of the keymap that has it, in the layout (XKB group) in use at
// that moment, and presses it, with Shift for the second level. mutter
// takes the first keycode (lowest first) and level that has the keysym,
// presses Shift_L for level 2 and ISO_Level3_Shift for level 3, and drops
// a keysym the current layout lacks with a warning in the journal, so the
// character is lost and nobody is told. KWin works alike. Which layout is
// current cannot be asked (a client without keyboard focus gets no
// wl_keyboard.modifiers), so a character counts as typeable only when
// every layout of the keymap has its keysym, and where the first key of it
// is at the first or second level: plain or with Shift, the two levels
// every backend presses right (the third, AltGr, mutter does; what every
// KDE version does is not documented). Any other character is pasted (see
// package portal).
package xkb

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// Keymap is one parsed keymap: for each layout (group), the level of the
// first key that has each keysym.
type Keymap struct {
	first []map[uint32]int // by group, then keysym
}

// Keysyms of keys that are not characters, which the paste chord needs.
const (
	ShiftL   = 0xffe1
	Insert   = 0xff63
	ControlL = 0xffe3
	CapsLock = 0xffe5
)

var namedKeys = map[string]uint32{"Shift_L": ShiftL, "Insert": Insert, "Control_L": ControlL, "Caps_Lock": CapsLock}

var (
	tableOnce sync.Once
	byName    map[string]uint32
	byRune    map[rune][]uint32 // the legacy keysyms of a character
)

func table() {
	tableOnce.Do(func() {
		byName = make(map[string]uint32, len(keysymTable)+len(namedKeys))
		byRune = map[rune][]uint32{}
		for _, e := range keysymTable {
			byName[e.name] = e.ks
			if !slices.Contains(byRune[e.r], e.ks) {
				byRune[e.r] = append(byRune[e.r], e.ks)
			}
		}
		for n, ks := range namedKeys {
			byName[n] = ks
		}
		for r := range byRune {
			slices.Sort(byRune[r])
		}
	})
}

// keysymOf resolves a keysym as a keymap names it: a name of the table,
// "Uxxxx" (a character's Unicode keysym; below U+0100 its Latin-1
// keysym), or a number ("0x1000263"). ok is false for the names of keys
// that are not characters (Escape, XF86AudioMute …) and NoSymbol.
func keysymOf(name string) (uint32, bool) {
	table()
	if ks, ok := byName[name]; ok {
		return ks, true
	}
	if strings.HasPrefix(name, "0x") {
		n, err := strconv.ParseUint(name[2:], 16, 32)
		return uint32(n), err == nil && n != 0
	}
	if len(name) >= 5 && name[0] == 'U' {
		n, err := strconv.ParseUint(name[1:], 16, 32)
		if err != nil || n > 0x10ffff {
			return 0, false
		}
		return backend.Keysym(rune(n))
	}
	return 0, false
}

// candidates are the keysyms that stand for r: its legacy ones (Greek_alpha
// for α, as xkeyboard-config's layouts write it) and its Unicode keysym.
func candidates(r rune) []uint32 {
	table()
	out := slices.Clone(byRune[r])
	if u, ok := backend.Keysym(r); ok && !slices.Contains(out, u) {
		out = append(out, u)
	}
	return out
}

// keysym is the keysym to send for r: one that every layout of the keymap
// types at its first or second level. ok is false when there is none.
func (m *Keymap) keysym(r rune) (uint32, bool) {
	if len(m.first) == 0 {
		return 0, false
	}
	for _, ks := range candidates(r) {
		if m.Everywhere(ks, 1) {
			return ks, true
		}
	}
	return 0, false
}

// Everywhere reports whether every layout has ks on its first key at a
// level of at most maxLevel (0-based), and Shift_L where that is 1.
func (m *Keymap) Everywhere(ks uint32, maxLevel int) bool {
	for _, g := range m.first {
		l, ok := g[ks]
		if !ok || l > maxLevel {
			return false
		}
		if l == 1 {
			if _, ok := g[ShiftL]; !ok {
				return false
			}
		}
	}
	return true
}

// Plan says how to type text: the keysym of each character, or ok false
// when a character has none (the text is then pasted).
func (m *Keymap) Plan(text string) (keysyms []uint32, ok bool) {
	for _, r := range text {
		ks, found := m.keysym(r)
		if !found {
			return nil, false
		}
		keysyms = append(keysyms, ks)
	}
	return keysyms, true
}

// errKeymap: a keymap text this parser cannot read.
var errKeymap = errors.New("unreadable XKB keymap")

// Parse reads the xkb_keycodes and xkb_symbols sections of a keymap
// in text format v1 (as xkb_keymap_get_as_string writes it), in order:
// the keycode of each key name ([keycodes.read]), the keysyms of each key
// that has one ([keycodes.symbols]), and then for each layout the level
// of the first key of each keysym ([firstLevels]).
func Parse(text string) (*Keymap, error) {
	toks := lexXKB(text)
	codes := keycodes{byName: map[string]int{}, aliases: map[string]string{}}
	var keys []symKey
	groups := 0
	for i := 0; i < len(toks); {
		switch toks[i] {
		case "xkb_keycodes":
			end := blockEnd(toks, i)
			codes.read(toks[i:end])
			i = end
		case "xkb_symbols":
			end := blockEnd(toks, i)
			ks, n := codes.symbols(toks[i:end])
			keys, groups = append(keys, ks...), max(groups, n)
			i = end
		default:
			i++
		}
	}
	if len(codes.byName) == 0 || len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keycodes or no symbols", errKeymap)
	}
	return firstLevels(keys, groups), nil
}

// keycodes are what the xkb_keycodes sections read so far name: the
// keycode of each key name, and the aliases of key names.
type keycodes struct {
	byName  map[string]int
	aliases map[string]string
}

// read adds an xkb_keycodes section's "<NAME> = 38;" and
// "alias <ALIAS> = <NAME>;" statements.
func (c keycodes) read(sec []string) {
	for j, t := range sec {
		switch {
		case t == "alias" && j+3 < len(sec) && sec[j+2] == "=":
			c.aliases[sec[j+1]] = sec[j+3]
		case isKeyName(t) && j+2 < len(sec) && sec[j+1] == "=" && (j == 0 || sec[j-1] != "alias"):
			if n, err := strconv.Atoi(sec[j+2]); err == nil {
				c.byName[t] = n
			}
		}
	}
}

// code is the keycode of a key name or of the name it is an alias of.
func (c keycodes) code(name string) (int, bool) {
	if n, ok := c.byName[name]; ok {
		return n, true
	}
	n, ok := c.byName[c.aliases[name]]
	return n, ok
}

// symKey is a key of xkb_symbols with its keycode.
type symKey struct {
	code   int
	groups [][][]uint32 // group, level, keysyms
}

// symbols reads an xkb_symbols section's "key <NAME> { … };" statements:
// the keys with a keycode and keysyms, and the most groups any key of
// it has (a key without a keycode counts there too).
func (c keycodes) symbols(sec []string) (keys []symKey, groups int) {
	for j := 0; j < len(sec); j++ {
		if sec[j] != "key" || j+2 >= len(sec) || !isKeyName(sec[j+1]) || sec[j+2] != "{" {
			continue
		}
		bodyEnd := max(matching(sec, j+2), j+3) // an unclosed "{" at the end: no body
		gs := keyGroups(sec[j+3 : bodyEnd])
		groups = max(groups, len(gs))
		if code, ok := c.code(sec[j+1]); ok && len(gs) > 0 {
			keys = append(keys, symKey{code, gs})
		}
		j = bodyEnd
	}
	return keys, groups
}

// firstLevels is the keymap of keys with groups layouts: in each, the
// level of the first key (lowest keycode first) that has each keysym.
func firstLevels(keys []symKey, groups int) *Keymap {
	slices.SortStableFunc(keys, func(a, b symKey) int { return a.code - b.code })
	m := &Keymap{first: make([]map[uint32]int, groups)}
	for g := range m.first {
		m.first[g] = firstLevelsOf(keys, g)
	}
	return m
}

// firstLevelsOf is group g's level of the first of keys that has each
// keysym.
func firstLevelsOf(keys []symKey, g int) map[uint32]int {
	first := map[uint32]int{}
	for _, k := range keys {
		kg := k.groups[g%len(k.groups)] // XKB wraps a layout the key lacks
		for level, syms := range kg {
			for _, ks := range syms {
				if _, seen := first[ks]; !seen {
					first[ks] = level
				}
			}
		}
	}
	return first
}

// keyGroups reads a key's body: "symbols[GroupN]= [ … ]" entries, or bare
// "[ … ]" lists, one per group in order; every other entry (type,
// actions[…], virtualMods, repeat) is skipped.
func keyGroups(body []string) [][][]uint32 {
	var groups [][][]uint32
	set := func(g int, levels [][]uint32) {
		for len(groups) <= g {
			groups = append(groups, [][]uint32{})
		}
		groups[g] = levels
	}
	implicit := 0
	for _, e := range entries(body) {
		switch {
		case len(e) >= 2 && e[0] == "[":
			set(implicit, levelList(e[1:matching(e, 0)]))
			implicit++
		case len(e) >= 7 && e[0] == "symbols" && e[1] == "[" && e[3] == "]" && e[4] == "=" && e[5] == "[":
			g, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(e[2]), "group"))
			if err == nil && g >= 1 && g <= 8 {
				set(g-1, levelList(e[6:matching(e, 5)]))
			}
		}
	}
	return groups
}

// entries cuts a body at its commas outside brackets.
func entries(body []string) [][]string {
	var out [][]string
	depth, start := 0, 0
	for i, t := range body {
		switch t {
		case "{", "[":
			depth++
		case "}", "]":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, body[start:i])
				start = i + 1
			}
		}
	}
	return append(out, body[start:])
}

// levelList reads "a, A, { x, y }, NoSymbol": the keysyms of each level.
func levelList(toks []string) [][]uint32 {
	var levels [][]uint32
	cur := []uint32{}
	for i := 0; i < len(toks); i++ {
		switch t := toks[i]; t {
		case ",":
			levels = append(levels, cur)
			cur = []uint32{}
		case "{", "}":
		default:
			if ks, ok := keysymOf(t); ok {
				cur = append(cur, ks)
			}
		}
	}
	return append(levels, cur)
}

func isKeyName(t string) bool { return len(t) > 2 && t[0] == '<' && t[len(t)-1] == '>' }

// blockEnd is the index after the block that starts at the first "{"
// after i (the whole rest when there is none).
func blockEnd(toks []string, i int) int {
	for j := i; j < len(toks); j++ {
		if toks[j] == "{" {
			return matching(toks, j) + 1
		}
	}
	return len(toks)
}

// matching is the index of the bracket that closes toks[open] ("{" or
// "["), or the last index when it is never closed.
func matching(toks []string, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j] {
		case "{", "[":
			depth++
		case "}", "]":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}

// lexXKB cuts a keymap into tokens: names, numbers, <key names>, strings
// (kept with their quotes) and the punctuation { } [ ] ( ) , ; = + - !.
// Comments (// and #) are dropped.
func lexXKB(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(s) && s[i+1] == '/', c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			toks = append(toks, s[i:min(j+1, len(s))])
			i = j + 1
		case c == '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return toks
			}
			toks = append(toks, s[i:i+j+1])
			i += j + 1
		case strings.IndexByte("{}[](),;=+-!.", c) >= 0:
			toks = append(toks, string(c))
			i++
		default:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				j++
			}
			if j == i {
				j++ // a byte of no token: skipped
			} else {
				toks = append(toks, s[i:j])
			}
			i = j
		}
	}
	return toks
}
