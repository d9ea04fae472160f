package daemonapi

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// privateDir is a fresh folder of ours with mode 0700.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "1000")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestResolveBaseFallback: with XDG_RUNTIME_DIR unset, the per-user folder
// is used only when it is a real directory of ours with mode 0700; every
// other shape is refused with a reason that names it.
func TestResolveBaseFallback(t *testing.T) {
	uid := os.Geteuid()
	chmod := func(mode fs.FileMode) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) // dir starts as ours, 0700
		uid     int                            // who we are; 0 means uid
		want    string                         // "" means accepted
	}{
		{"0700 ours", func(*testing.T, string) {}, 0, ""},
		{"0755", chmod(0o755), 0, "has mode 0755, want 0700"},
		{"0750", chmod(0o750), 0, "has mode 0750, want 0700"},
		{"0711", chmod(0o711), 0, "has mode 0711, want 0700"},
		{"0701", chmod(0o701), 0, "has mode 0701, want 0700"},
		{"0770", chmod(0o770), 0, "has mode 0770, want 0700"},
		{"0777", chmod(0o777), 0, "has mode 0777, want 0700"},
		{"1777 like /tmp", chmod(fs.ModeSticky | 0o777), 0, "has mode 1777, want 0700"},
		{"0500", chmod(0o500), 0, "has mode 0500, want 0700"},
		{"another uid's", func(*testing.T, string) {}, uid + 1, "is owned by uid"},
		{"symlink to a good folder", func(t *testing.T, dir string) {
			target := filepath.Join(filepath.Dir(dir), "real")
			if err := os.Rename(dir, target); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, 0, "is a symlink"},
		{"missing", func(t *testing.T, dir string) {
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
		}, 0, "does not exist"},
		{"a file", func(t *testing.T, dir string) {
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dir, nil, 0o700); err != nil {
				t.Fatal(err)
			}
		}, 0, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := privateDir(t)
			tt.prepare(t, dir)
			who := uid
			if tt.uid != 0 {
				who = tt.uid
			}
			got, err := resolveBase("", dir, who)
			if tt.want == "" {
				if err != nil || got != dir {
					t.Fatalf("resolveBase(\"\", %s) = %q, %v; want %s", dir, got, err, dir)
				}
				return
			}
			if err == nil {
				t.Fatalf("resolveBase(\"\", %s) = %q, want refused (%s)", dir, got, tt.want)
			}
			if !errors.Is(err, ErrNoRuntimeDir) {
				t.Errorf("error %v does not match ErrNoRuntimeDir", err)
			}
			msg := err.Error()
			for _, part := range []string{"XDG_RUNTIME_DIR is not set", dir, tt.want} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not say %q", msg, part)
				}
			}
		})
	}
}

// TestResolveBaseOtherOwner: a folder really owned by another uid (root can
// chown) is refused.
func TestResolveBaseOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root; TestResolveBaseFallback covers the check with another uid")
	}
	dir := privateDir(t)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := resolveBase("", dir, 0)
	if err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, not by us (uid 0)") {
		t.Errorf("resolveBase with a folder of uid 65534 = %v, want an owner refusal", err)
	}
}

// TestResolveBaseNeverTmp: /tmp is never a runtime folder, whoever owns it.
func TestResolveBaseNeverTmp(t *testing.T) {
	st, err := os.Stat("/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o022 == 0 {
		t.Fatalf("/tmp has mode %v: this test wants the usual shared temp folder", st.Mode())
	}
	for _, uid := range []int{0, os.Geteuid()} {
		if got, err := resolveBase("", "/tmp", uid); err == nil {
			t.Errorf("resolveBase(\"\", /tmp, %d) = %q, want refused", uid, got)
		}
	}
}

// TestResolveBaseXDG: XDG_RUNTIME_DIR, when set, wins over the per-user
// folder (a good or a missing one); a relative one is refused, never
// replaced by the fallback.
func TestResolveBaseXDG(t *testing.T) {
	uid := os.Geteuid()
	xdg := privateDir(t)
	good := privateDir(t)
	for _, fallback := range []string{good, filepath.Join(t.TempDir(), "missing")} {
		if got, err := resolveBase(xdg, fallback, uid); err != nil || got != xdg {
			t.Errorf("resolveBase(%s, %s) = %q, %v; want %s", xdg, fallback, got, err, xdg)
		}
	}
	if got, err := resolveBase(xdg+"/", good, uid); err != nil || got != xdg {
		t.Errorf("resolveBase(%s/) = %q, %v; want %s", xdg, got, err, xdg)
	}
	_, err := resolveBase("run/user/1000", good, uid)
	if !errors.Is(err, ErrNoRuntimeDir) || !strings.Contains(err.Error(), `XDG_RUNTIME_DIR "run/user/1000" is not an absolute path`) {
		t.Errorf("relative XDG_RUNTIME_DIR: %v, want refused", err)
	}
}

// TestRuntimeBaseReadsXDG: RuntimeBase takes XDG_RUNTIME_DIR from the
// environment. (Its fallback, /run/user/$UID, is tested end to end in
// test/e2e, serialised there, in the stand-in folder that internal/testbin
// links into the programs it builds.)
func TestRuntimeBaseReadsXDG(t *testing.T) {
	xdg := privateDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if got, err := RuntimeBase(); err != nil || got != xdg {
		t.Errorf("RuntimeBase() = %q, %v; want %s", got, err, xdg)
	}
	dir, err := SocketDir()
	if err != nil || dir != filepath.Join(xdg, "yazses") {
		t.Fatalf("SocketDir() = %q, %v; want %s/yazses", dir, err, xdg)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("socket folder %v, %v; want drwx------", fi.Mode(), err)
	}
}

// TestDialNotRunning: every way of finding no daemon matches ErrNotRunning;
// a runtime folder that is refused says so.
func TestDialNotRunning(t *testing.T) {
	ctx := context.Background()
	t.Run("no socket folder", func(t *testing.T) {
		t.Setenv("XDG_RUNTIME_DIR", privateDir(t))
		if _, err := Dial(ctx); !errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNoRuntimeDir) {
			t.Errorf("Dial = %v, want ErrNotRunning only", err)
		}
	})
	t.Run("no socket", func(t *testing.T) {
		t.Setenv("XDG_RUNTIME_DIR", privateDir(t))
		if _, err := SocketDir(); err != nil {
			t.Fatal(err)
		}
		if _, err := Dial(ctx); !errors.Is(err, ErrNotRunning) {
			t.Errorf("Dial = %v, want ErrNotRunning", err)
		}
	})
	t.Run("relative XDG_RUNTIME_DIR", func(t *testing.T) {
		t.Setenv("XDG_RUNTIME_DIR", "run")
		_, err := Dial(ctx)
		if !errors.Is(err, ErrNotRunning) || !errors.Is(err, ErrNoRuntimeDir) {
			t.Errorf("Dial = %v, want ErrNotRunning and ErrNoRuntimeDir", err)
		}
	})
}
