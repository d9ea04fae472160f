package xdp

import (
	"context"
	"errors"
	"fmt"

	"github.com/godbus/dbus/v5"
)

// AppID is YazSes's application id: the name of the .desktop file that
// `make install` puts in share/applications
// (packaging/desktop/io.github.yazses.YazSes.desktop), and of the
// systemd user unit (app-io.github.yazses.YazSes.service), from which a
// portal without the host registry derives it. The desktop shows and
// keeps what YazSes asks for (the push-to-talk shortcut, the consent to
// type) under this id.
const AppID = "io.github.yazses.YazSes"

// RegistryIface is the portal's host registry (xdg-desktop-portal 1.19
// and later), on the portal's object.
const RegistryIface = "org.freedesktop.host.portal.Registry"

// ErrNoRegistry: the portal has no host registry (xdg-desktop-portal
// before 1.19). It then knows a program outside a sandbox by the name of
// the systemd unit that started it (app-<id>.service), or not at all.
var ErrNoRegistry = errors.New("the desktop portal has no host registry")

// registration is what Register told one portal.
type registration struct {
	owner string // the portal's unique name when it was told
	appID string
	err   error
}

// Register tells the portal that this connection is the application
// appID (org.freedesktop.host.portal.Registry.Register), so that its
// sessions belong to that id: the portal needs an id to show what a
// program asks for, and refuses GlobalShortcuts without one
// (xdg-desktop-portal 1.21 and later; GNOME's shortcut provider discards
// such a bind). appID must be the name of an installed .desktop file
// (without ".desktop"), or the portal refuses it.
//
// The portal takes it only before any other call of this connection to
// it: call Register first, and again after the portal came back (a new
// owner of its name knows nothing of the last one); for the same portal
// it does nothing and returns the first answer. The error is
// ErrNoRegistry (wrapped) when the portal is older than the registry,
// ErrNoPortal when no portal is on the bus, else the portal's refusal as
// it words it (no such .desktop file, say); the caller goes on either
// way, without an id.
func (c *Conn) Register(ctx context.Context, appID string) error {
	owner, _ := c.Owner()
	c.mu.Lock()
	last := c.reg
	c.mu.Unlock()
	if last != nil && owner != "" && last.owner == owner && last.appID == appID {
		return last.err
	}
	err := c.bus.Object(Dest, Path).CallWithContext(ctx, RegistryIface+".Register", 0, appID, map[string]any{}).Err
	if err != nil {
		err = registryErr(appID, err)
	}
	if ctx.Err() != nil {
		return err // not known whether the portal took it
	}
	c.noteOwner(ctx) // the call may have started it
	owner, _ = c.Owner()
	c.mu.Lock()
	c.reg = &registration{owner: owner, appID: appID, err: err}
	c.mu.Unlock()
	if err == nil {
		c.log.Debug("registered with the desktop portal", "app_id", appID)
	}
	return err
}

// registryErr maps an error of Register: a portal that does not know
// the interface is one without the registry; one that refuses says why.
func registryErr(appID string, err error) error {
	op := "register " + appID + " with the desktop portal"
	var de dbus.Error
	if !errors.As(err, &de) {
		return portalErr(op, err)
	}
	switch de.Name {
	case "org.freedesktop.DBus.Error.UnknownMethod", errUnknownIf, "org.freedesktop.DBus.Error.UnknownObject":
		return fmt.Errorf("%s: %w", op, ErrNoRegistry)
	case errNoService, errNoName, errNoReply:
		return portalErr(op, err)
	}
	// The portal's own words: "Could not register app ID: …" (no
	// .desktop file of that name, the connection already known).
	msg := de.Name
	if len(de.Body) > 0 {
		if s, ok := de.Body[0].(string); ok && s != "" {
			msg = s
		}
	}
	return fmt.Errorf("%s: %s", op, msg)
}
