// Package keyname is the table of Linux input key names: the KEY_* and
// BTN_* names of linux/input-event-codes.h and their codes ("KEY_RIGHTCTRL"
// is 97). The configuration checks hotkey.key with it, and the daemon's
// evdev listener turns the name into the code it reads; the table is
// apart from the listener so that a program that only loads the
// configuration (yaz-mcp) does not link the listener.
//
// keys.go is generated from the header by gen_keys.go (go generate); a test
// checks the table against the header installed on the machine.
package keyname

//go:generate go run gen_keys.go

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown is a name that is not in the table.
var ErrUnknown = errors.New("unknown key name")

// Code returns the code of a key name such as "KEY_RIGHTCTRL" (case does
// not matter; the KEY_ prefix may be left out).
func Code(name string) (uint16, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if c, ok := keyCodes[n]; ok {
		return c, nil
	}
	if c, ok := keyCodes["KEY_"+n]; ok && n != "" {
		return c, nil
	}
	return 0, fmt.Errorf("key %q: %w", name, ErrUnknown)
}
