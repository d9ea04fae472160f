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
