package portal

import (
	"bytes"
	"os"
	"path/filepath"
)

// ledDir is where the kernel shows the keyboards' LEDs. The compositor
// (mutter, KWin) sets each keyboard's Caps Lock LED from its own lock
// state, and any user may read it: the one view of that state a client
// without keyboard focus has (wl_keyboard.modifiers comes only with the
// focus). A test points it at LEDs of its own.
var ledDir = "/sys/class/leds"

// capsLocked reports whether the Caps Lock LED of any keyboard under dir
// is lit. A machine whose keyboards have no such LED (some virtual
// machines, some keyboards) cannot tell, and counts as unlocked.
func capsLocked(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*::capslock", "brightness"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && len(bytes.TrimSpace(b)) > 0 && string(bytes.TrimSpace(b)) != "0" {
			return true
		}
	}
	return false
}
