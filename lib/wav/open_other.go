//go:build !unix

package wav

import "os"

// openNoBlock opens path for reading; this platform has no O_NONBLOCK, and
// the type checks before and after opening are the only guard.
func openNoBlock(path string) (*os.File, error) {
	return os.Open(path)
}
