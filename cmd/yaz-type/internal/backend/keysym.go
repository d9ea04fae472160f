package backend

// Keysym is the X keysym of a character, the rule that X11 (Xlib's
// Unicode keysyms) and xkbcommon (a keymap's "U" + the code point) share:
// ASCII and Latin-1 characters are their own keysyms, every other one is
// 0x01000000 | its code point. Control characters have none (ok false):
// a cleaned text has none.
func Keysym(r rune) (ks uint32, ok bool) {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0) || r > 0x10ffff:
		return 0, false
	case r < 0x100:
		return uint32(r), true
	}
	return 0x01000000 | uint32(r), true
}
