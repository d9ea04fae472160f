package keyname

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		want uint16
	}{
		{"KEY_RIGHTCTRL", 97}, {"key_rightctrl", 97}, {"RIGHTCTRL", 97}, {" KEY_RIGHTCTRL ", 97},
		{"KEY_RIGHTALT", 100}, {"KEY_F13", 183}, {"KEY_PAUSE", 119},
		{"KEY_CAPSLOCK", 58}, {"KEY_SCROLLLOCK", 70}, {"BTN_LEFT", 0x110},
		{"BTN_EXTRA", 0x114}, {"BTN_SOUTH", 0x130}, {"BTN_A", 0x130},
	}
	for _, tt := range tests {
		got, err := Code(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("Code(%q) = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "KEY_", "KEY_RIGHTCONTROL", "RCTRL", "97", "KEY_MAX"} {
		if _, err := Code(bad); !errors.Is(err, ErrUnknown) {
			t.Errorf("Code(%q) = %v, want ErrUnknown", bad, err)
		}
	}
}

// The generated table agrees with the kernel header it came from.
func TestTableMatchesHeader(t *testing.T) {
	const header = "/usr/include/linux/input-event-codes.h"
	data, err := os.ReadFile(header)
	if err != nil {
		t.Fatalf("%v (package linux-libc-dev)", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "#define" || !strings.HasPrefix(f[1], "KEY_") || !strings.HasPrefix(f[2], "0x") && (f[2][0] < '0' || f[2][0] > '9') {
			continue
		}
		if strings.HasSuffix(f[1], "_MAX") || strings.HasSuffix(f[1], "_CNT") {
			continue
		}
		got, err := Code(f[1])
		if err != nil {
			t.Errorf("%s missing from the table", f[1])
			continue
		}
		want, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil || uint64(got) != want {
			t.Errorf("Code(%s) = %d, header says %s", f[1], got, f[2])
		}
		n++
	}
	if n < 400 {
		t.Fatalf("checked only %d names", n)
	}
}
