package wayland

import (
	"fmt"
	"strings"
	"testing"
)

// mixedScripts is Latin with combining marks, Greek, Hebrew, CJK, emoji
// and ASCII punctuation with spaces: every kind of character a keymap of
// its own must carry.
const mixedScripts = "Cafe\u0301 nai\u0308ve, Grüße! Καλημέρα κόσμε; שלום עולם: 日本語のテキスト 中文 😀🎉 " +
	"(1+2)*3 = 9, {ok} [yes] <no> @home #tag $5 %50 ^_^ ~/p|q\\r `t` 'q' \"dq\"? "

// mixedOf is n characters of mixedScripts, repeated; from 2000 characters
// on, with 300 more distinct CJK characters in it, so that the text needs
// more than one keymap.
func mixedOf(n int) string {
	var r []rune
	if n >= 2000 {
		for c := rune(0x4e00); c < 0x4e00+300; c++ {
			r = append(r, c)
		}
	}
	base := []rune(mixedScripts)
	for len(r) < n {
		r = append(r, base[:min(len(base), n-len(r))]...)
	}
	return string(r)
}

func TestWlPlan(t *testing.T) {
	for _, n := range []int{1, 58, 500, 2000, 5000} {
		text := mixedOf(n)
		pieces := wlPlan(text)
		var back strings.Builder
		for i, p := range pieces {
			if len(p.code) > wlKeysPerMap {
				t.Errorf("%d chars: piece %d has %d keys, more than %d", n, i, len(p.code), wlKeysPerMap)
			}
			seen := map[uint32]rune{}
			for r, c := range p.code {
				if c+8 < wlMinKeycode || c+8 > wlMaxKeycode {
					t.Errorf("%d chars: %U on keycode %d, outside %d-%d", n, r, c+8, wlMinKeycode, wlMaxKeycode)
				}
				if o, dup := seen[c]; dup {
					t.Errorf("%d chars: %U and %U share code %d", n, r, o, c)
				}
				seen[c] = r
				if !strings.Contains(p.keymap, fmt.Sprintf("<K%d> = %d;", c+8-wlMinKeycode, c+8)) ||
					!strings.Contains(p.keymap, fmt.Sprintf("key <K%d> { type = \"ONE_LEVEL\", [ %s ] };", c+8-wlMinKeycode, xkbKeysym(r))) {
					t.Errorf("%d chars: keymap lacks %U on keycode %d", n, r, c+8)
				}
			}
			back.WriteString(string(p.text))
		}
		if back.String() != text {
			t.Errorf("%d chars: the pieces spell %q", n, back.String())
		}
		if want := 1 + btoi(n >= 2000); len(pieces) != want {
			t.Errorf("%d chars: %d pieces, want %d", n, len(pieces), want)
		}
	}
	// Keysyms as xkbcommon names them: Latin-1 its own, others Unicode.
	for r, want := range map[rune]string{'a': "U0061", 'é': "U00E9", 'λ': "U03BB", '😀': "U1F600", 0x301: "U0301"} {
		if got := xkbKeysym(r); got != want {
			t.Errorf("keysym of %U = %s, want %s", r, got, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
