package portal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// TokenFile is where, in the daemon's state folder, the desktop's restore
// token is kept (0600): the RemoteDesktop portal (version 2 and later)
// hands one back after the person allowed a session with persist_mode,
// and takes it at the next start instead of asking again. It is good for
// one restore: each start gets a new one.
const TokenFile = "portal-remote-desktop.token"

// maxToken bounds what is read back (a token is a UUID).
const maxToken = 4096

// stateDir is o.StateDir, or $XDG_STATE_HOME/yazses (an absolute one),
// or ~/.local/state/yazses.
func stateDir(o backend.Options) string {
	if o.StateDir != "" {
		return o.StateDir
	}
	base := backend.Getenv(o.Environ, "XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home := backend.Getenv(o.Environ, "HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "yazses")
}

func tokenPath(o backend.Options) string {
	d := stateDir(o)
	if d == "" {
		return ""
	}
	return filepath.Join(d, TokenFile)
}

// readToken returns the kept token ("" when there is none, or the file
// is not the user's own 0600 file).
func readToken(o backend.Options) string {
	p := tokenPath(o)
	if p == "" {
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() > maxToken {
		return ""
	}
	b := make([]byte, fi.Size())
	n, _ := f.Read(b)
	return strings.TrimSpace(string(b[:n]))
}

// writeToken keeps token in a 0600 file of a 0700 folder, replaced in one
// rename.
func writeToken(o backend.Options, token string) error {
	p := tokenPath(o)
	if p == "" {
		return fmt.Errorf("no state folder: neither XDG_STATE_HOME nor HOME is set")
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("keep the restore token: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), TokenFile+".*")
	if err != nil {
		return fmt.Errorf("keep the restore token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("keep the restore token: %w", err)
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("keep the restore token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keep the restore token: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("keep the restore token: %w", err)
	}
	return nil
}

func removeToken(o backend.Options) {
	if p := tokenPath(o); p != "" {
		_ = os.Remove(p)
	}
}
