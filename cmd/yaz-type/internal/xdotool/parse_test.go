package xdotool

import (
	"slices"
	"testing"
)

func TestParsers(t *testing.T) {
	if id, ok := propWindow("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x1200007\n"); !ok || id != 0x1200007 {
		t.Errorf("propWindow = %x, %v", id, ok)
	}
	if id, ok := propWindow("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x0\n"); !ok || id != 0 {
		t.Errorf("propWindow(0) = %x, %v", id, ok)
	}
	if _, ok := propWindow("_NET_ACTIVE_WINDOW:  not found.\n"); ok {
		t.Error("propWindow(not found) ok")
	}
	root := parseRoot("_NET_ACTIVE_WINDOW:  not found.\n_NET_SUPPORTING_WM_CHECK(WINDOW): window id # 0x20020b\n" +
		"_NET_SUPPORTED(ATOM) = _NET_SUPPORTING_WM_CHECK, _NET_ACTIVE_WINDOW, _NET_WORKAREA\n")
	if root.activeSet || !root.activeSupported || root.wmCheck != 0x20020b {
		t.Errorf("parseRoot = %+v", root)
	}
	root = parseRoot("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x40000c\n_NET_SUPPORTING_WM_CHECK:  not found.\n_NET_SUPPORTED:  not found.\n")
	if !root.activeSet || root.active != 0x40000c || root.activeSupported {
		t.Errorf("parseRoot = %+v", root)
	}
	if id, ok := rootWindow("\nxwininfo: Window id: 0x50d (the root window) (has no name)\n"); !ok || id != 0x50d {
		t.Errorf("rootWindow = %x, %v", id, ok)
	}
	if got := quoted(`WM_CLASS(STRING) = "xterm", "XTerm"`); !slices.Equal(got, []string{"xterm", "XTerm"}) {
		t.Errorf("quoted = %q", got)
	}
	pke := []byte("keycode   8 =\nkeycode   9 = Escape NoSymbol Escape\nkeycode  93 =\nkeycode 255 =\n")
	if got := spareKeycodes(pke); !slices.Equal(got, []int{93, 255}) {
		t.Errorf("spareKeycodes = %v", got)
	}
}
