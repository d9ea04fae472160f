package sdnotify

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/xdp"
)

// TestUnitNameGivesAppID: a desktop portal without the host registry
// knows a program outside a sandbox by the name of the systemd user unit
// that runs it (app-<id>.service, systemd's convention for
// applications). The shipped unit's name must give YazSes's application
// id, the name of its .desktop file, under the rules of both the portal
// the Debian 12 machines have (xdg-desktop-portal 1.16,
// src/xdp-utils.c) and of the later ones (src/xdp-app-info-host.c): the
// patterns are theirs, in RE2 syntax. The broken names below show each
// pattern can fail.
func TestUnitNameGivesAppID(t *testing.T) {
	rules := map[string]*regexp.Regexp{
		"1.16":  regexp.MustCompile(`^app-(?:[[:alnum:]]+\-)?(.+?\..+?\..+?)(?:[@\-][[:alnum:]]*)?(?:-autostart)?(?:\.scope|\.service|\.slice)$`),
		"1.20+": regexp.MustCompile(`^app-(?:[[:alnum:]]+\-)?(.+?)(?:@[[:alnum:]]*|\-autostart)?\.service$`),
	}
	appID := func(rule *regexp.Regexp, unit string) string {
		if m := rule.FindStringSubmatch(unit); m != nil {
			return m[1]
		}
		return ""
	}
	units, err := filepath.Glob(filepath.Join(filepath.Dir(unitPath(t)), "*.service"))
	if err != nil || len(units) != 1 {
		t.Fatalf("packaging/systemd has %q (%v), want one unit", units, err)
	}
	unit := filepath.Base(units[0])
	for v, rule := range rules {
		if got := appID(rule, unit); got != xdp.AppID {
			t.Errorf("xdg-desktop-portal %s reads the app id %q from %s, want %q", v, got, unit, xdp.AppID)
		}
		for _, bad := range []string{"yazsesd.service", "app-yazsesd.service"} {
			if got := appID(rule, bad); got == xdp.AppID {
				t.Errorf("xdg-desktop-portal %s reads %q from %s", v, got, bad)
			}
		}
	}
	desktop := filepath.Join(filepath.Dir(unitPath(t)), "..", "desktop", xdp.AppID+".desktop")
	data, err := os.ReadFile(desktop)
	if err != nil {
		t.Fatalf("the .desktop file of the app id: %v", err)
	}
	if !strings.Contains(string(data), "\nExec=@BINDIR@/yazsesd run\n") || !strings.Contains(string(data), "[Desktop Entry]\nType=Application\n") {
		t.Errorf("%s: want an application entry that runs @BINDIR@/yazsesd run:\n%s", desktop, data)
	}
}
