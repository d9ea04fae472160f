package xkb

// keysymEntry is one keysym of the table: its name, its value and the
// character it stands for.
type keysymEntry struct {
	name string
	ks   uint32
	r    rune
}
