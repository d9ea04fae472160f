package portal

import "context"

// clipboard is the desktop's clipboard, for the paste: wayland.Selections
// (the clipboard and the primary selection), which tests replace.
type clipboard interface {
	// Put sets the clipboard and the primary selection to text and
	// returns a function that puts back what they held.
	Put(ctx context.Context, text string) (restore func(context.Context) error, err error)
}
