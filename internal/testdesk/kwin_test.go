package testdesk

import (
	"os"
	"testing"
)

// TestKWinDesk: a real KWin comes up, shows its Wayland socket to the
// host, and a GTK 4 and a GTK 3 field each take the focus (active, the
// entry focused) and report their text.
func TestKWinDesk(t *testing.T) {
	d := StartKDE(t)
	if fi, err := os.Stat(d.WaylandSocket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the Wayland socket %s on the host: %v", d.WaylandSocket, err)
	}
	for _, gtk := range []int{4, 3} {
		f := d.Field(t, FieldOptions{GTK: gtk})
		if f.Text() != "" {
			t.Fatalf("GTK %d: a new field holds %q", gtk, f.Text())
		}
	}
}
