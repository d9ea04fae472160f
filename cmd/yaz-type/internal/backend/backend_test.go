package backend

import "testing"

func TestIsTerminal(t *testing.T) {
	for _, c := range []string{"xterm", "XTerm", "URxvt", "kitty", "Alacritty", "gnome-terminal-server", "Gnome-terminal", "konsole", "foot", "org.wezfurlong.wezterm", "Xfce4-terminal"} {
		if !IsTerminal(c) {
			t.Errorf("IsTerminal(%q) = false", c)
		}
	}
	for _, c := range []string{"", "firefox", "Navigator", "code", "org.gnome.TextEditor", "emacs"} {
		if IsTerminal(c) {
			t.Errorf("IsTerminal(%q) = true", c)
		}
	}
}

// The keysym rule that X11 and xkbcommon share: Latin-1 its own, others
// Unicode keysyms, control characters none.
func TestKeysym(t *testing.T) {
	for _, tt := range []struct {
		r    rune
		want uint32
		ok   bool
	}{
		{'a', 0x61, true}, {'\u00a0', 0xa0, true}, {'ÿ', 0xff, true}, {'Ā', 0x1000100, true},
		{'😀', 0x101f600, true}, {'\n', 0, false}, {'\u007f', 0, false}, {'\u0085', 0, false},
	} {
		if got, ok := Keysym(tt.r); got != tt.want || ok != tt.ok {
			t.Errorf("Keysym(%U) = %#x, %v; want %#x, %v", tt.r, got, ok, tt.want, tt.ok)
		}
	}
}
