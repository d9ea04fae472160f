package xkb

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testportal"
)

// testChars are characters of many scripts: ASCII, Latin with
// diacritics (precomposed and combining), Greek, Hebrew, Cyrillic,
// Czech, Japanese, symbols and an emoji.
const testChars = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~" +
	"äöüßÄÖÜéèêàçœ€£§°²³µ½ïñ" + "e\u0301" + "αβγΑΒΓάές" + "שלוםא" + "бвгдЖЁ" + "čřžšěůĚ" + "日本語カナ" + "✓–—„“”«»🎉"

// TestKeymapAgainstXKB checks what the parser says each layout types
// against libxkbcommon itself (xkbcli how-to-type, on the keymap
// xkbcli compile-keymap writes, which is what a compositor hands out): a
// character is typeable when the first key of its keysym is at level 1
// or 2, and the keysym chosen is the one libxkbcommon gives it.
func TestKeymapAgainstXKB(t *testing.T) {
	for _, layout := range []string{"us", "de", "fr", "gr", "il", "ru", "cz", "jp", "us(intl)"} {
		t.Run(layout, func(t *testing.T) {
			km, err := Parse(testportal.Keymap(t, layout))
			if err != nil {
				t.Fatal(err)
			}
			if len(km.first) != 1 {
				t.Errorf("%d layouts, want 1", len(km.first))
			}
			var typeable int
			for _, r := range testChars {
				want := testportal.Keysym(t, r)
				oracle := false
				for _, e := range testportal.Entries(t, layout, want) {
					if e.Layout == 1 {
						oracle = e.Level <= 2
						break
					}
				}
				got, ok := km.keysym(r)
				if ok != oracle {
					t.Errorf("keysym(%q) ok = %v, libxkbcommon: typeable = %v", r, ok, oracle)
					continue
				}
				if ok {
					typeable++
					if got != want {
						t.Errorf("keysym(%q) = %#x, libxkbcommon's is %#x", r, got, want)
					}
				}
			}
			if typeable < 30 {
				t.Errorf("only %d characters typeable: the parser reads too little", typeable)
			}
		})
	}
}

// TestKeymapLayouts: with two layouts a character counts only when both
// type it (the one in use cannot be asked).
func TestKeymapLayouts(t *testing.T) {
	for _, layouts := range []string{"us,gr", "de,ru", "us,de,il"} {
		t.Run(layouts, func(t *testing.T) {
			km, err := Parse(testportal.Keymap(t, layouts))
			if err != nil {
				t.Fatal(err)
			}
			names := strings.Split(layouts, ",")
			if len(km.first) != len(names) {
				t.Fatalf("%d layouts, want %d", len(km.first), len(names))
			}
			var alone []*Keymap
			for _, l := range names {
				a, err := Parse(testportal.Keymap(t, l))
				if err != nil {
					t.Fatal(err)
				}
				alone = append(alone, a)
			}
			for _, r := range testChars {
				want := true
				for _, a := range alone {
					_, ok := a.keysym(r)
					want = want && ok
				}
				if _, ok := km.keysym(r); ok != want {
					t.Errorf("keysym(%q) ok = %v, want %v (typed by every one of %s alone)", r, ok, want, layouts)
				}
			}
			for _, r := range " 1.," {
				if _, ok := km.keysym(r); !ok {
					t.Errorf("keysym(%q): not typeable, but every layout has it", r)
				}
			}
		})
	}
}

func TestPlan(t *testing.T) {
	km, err := Parse(testportal.Keymap(t, "de"))
	if err != nil {
		t.Fatal(err)
	}
	if ks, ok := km.Plan("Grüße!"); !ok || fmt.Sprintf("%#x", ks) != "[0x47 0x72 0xfc 0xdf 0x65 0x21]" {
		t.Errorf("plan(Grüße!) = %#x, %v", ks, ok)
	}
	if _, ok := km.Plan("Grüße 日本"); ok {
		t.Error("plan(Grüße 日本) ok on a German keymap")
	}
	if !km.Everywhere(Insert, 0) || !km.Everywhere(ShiftL, 0) {
		t.Error("Insert or Shift_L not at the first level")
	}
}

func TestParseKeymapBroken(t *testing.T) {
	for _, s := range []string{"", "xkb_keymap {", "xkb_keymap { xkb_keycodes { <A> = 9; }; };", "garbage \x00 <<<"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q): no error", s)
		}
	}
}

// TestParseKeymapCutShort: a keymap that ends inside a key's "{" is an
// error, not a panic (the slice of its body ran backwards).
func TestParseKeymapCutShort(t *testing.T) {
	full := testportal.Keymap(t, "us")
	i := strings.Index(full, "key <AE01>")
	if i < 0 {
		t.Fatal("no key <AE01> in the us keymap")
	}
	cut := full[:i] + "key <AE01> {"
	if _, err := Parse(cut); err != nil {
		t.Errorf("Parse(cut after key <AE01> {) = %v, want the keys before it", err)
	}
	if _, err := Parse("xkb_keycodes { <A> = 9; }; xkb_symbols { key <A> {"); !errors.Is(err, errKeymap) {
		t.Errorf("Parse(only an unclosed key) = %v, want errKeymap", err)
	}
}

func TestKeysymOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		ks   uint32
		ok   bool
	}{
		{"a", 0x61, true}, {"Greek_alpha", 0x7e1, true}, {"U03F0", 0x10003f0, true}, {"U00E9", 0xe9, true},
		{"0x1000263", 0x1000263, true}, {"Shift_L", 0xffe1, true}, {"Escape", 0, false}, {"NoSymbol", 0, false},
		{"U0007", 0, false}, {"U110000", 0, false},
	} {
		ks, ok := keysymOf(tt.name)
		if ks != tt.ks || ok != tt.ok {
			t.Errorf("keysymOf(%q) = %#x, %v; want %#x, %v", tt.name, ks, ok, tt.ks, tt.ok)
		}
	}
}
