package wayland

import (
	"fmt"
	"strings"
)

// The "wayland" backend's keymaps: one XKB keymap (text format v1) per
// piece of a text, with one key per distinct character on a key of its
// own at the only level, so that no modifier is ever pressed and the
// user's layout does not matter.

// Keycodes of the keymap: XKB keycodes 9 to 255 (evdev codes 1 to 247),
// the range every client takes (Xwayland's is 8 to 255).
const (
	wlMinKeycode = 9
	wlMaxKeycode = 255
	wlKeysPerMap = wlMaxKeycode - wlMinKeycode + 1
)

// wlPiece is a run of a text that one keymap types.
type wlPiece struct {
	text   []rune
	keymap string
	// code is each character's evdev key code (the XKB keycode - 8).
	code map[rune]uint32
}

// wlPlan cuts text into pieces of at most wlKeysPerMap distinct
// characters, each with its keymap.
func wlPlan(text string) []wlPiece {
	var pieces []wlPiece
	cur := wlPiece{code: map[rune]uint32{}}
	var order []rune
	flush := func() {
		if len(cur.text) > 0 {
			cur.keymap = xkbKeymap(order)
			pieces = append(pieces, cur)
		}
		cur, order = wlPiece{code: map[rune]uint32{}}, nil
	}
	for _, r := range text {
		if _, ok := cur.code[r]; !ok {
			if len(order) == wlKeysPerMap {
				flush()
			}
			cur.code[r] = uint32(wlMinKeycode + len(order) - 8)
			order = append(order, r)
		}
		cur.text = append(cur.text, r)
	}
	flush()
	return pieces
}

// xkbKeysym is the keysym of a character: Latin-1 (and ASCII) characters
// are their own keysyms, every other one is 0x01000000 | its code point.
// xkbcommon's name Uxxxx means exactly that.
func xkbKeysym(r rune) string {
	return fmt.Sprintf("U%04X", r)
}

// xkbKeymap is a keymap with the characters on keycodes from wlMinKeycode
// on, in order. It includes nothing, so it compiles without the
// compositor's XKB files.
func xkbKeymap(chars []rune) string {
	var b strings.Builder
	b.WriteString("xkb_keymap {\nxkb_keycodes \"yazses\" {\n")
	fmt.Fprintf(&b, "minimum = 8;\nmaximum = %d;\n", wlMaxKeycode)
	for i := range chars {
		fmt.Fprintf(&b, "<K%d> = %d;\n", i, wlMinKeycode+i)
	}
	b.WriteString("};\n")
	b.WriteString("xkb_types \"yazses\" {\ntype \"ONE_LEVEL\" {\nmodifiers = none;\nlevel_name[Level1] = \"Any\";\n};\n};\n")
	b.WriteString("xkb_compatibility \"yazses\" {\n};\n")
	b.WriteString("xkb_symbols \"yazses\" {\n")
	for i, r := range chars {
		fmt.Fprintf(&b, "key <K%d> { type = \"ONE_LEVEL\", [ %s ] };\n", i, xkbKeysym(r))
	}
	b.WriteString("};\n};\n")
	return b.String()
}
