package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeExe(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestResolveCommand(t *testing.T) {
	root := t.TempDir()
	self := filepath.Join(root, "self")
	pathDir := filepath.Join(root, "path")
	writeExe(t, filepath.Join(self, "yaz-gate"), 0o755)
	writeExe(t, filepath.Join(pathDir, "yaz-gate"), 0o755)
	writeExe(t, filepath.Join(pathDir, "yaz-speak"), 0o755)
	writeExe(t, filepath.Join(self, "yaz-speak"), 0o644) // not executable: skipped
	writeExe(t, filepath.Join(root, "abs", "fake"), 0o755)
	writeExe(t, filepath.Join(root, "abs", "plain"), 0o644)
	if err := os.MkdirAll(filepath.Join(self, "yaz-decode"), 0o755); err != nil { // a folder: skipped
		t.Fatal(err)
	}
	t.Setenv("PATH", pathDir)

	tests := []struct {
		name    string
		argv    []string
		selfDir string
		want    []string
		wantErr error
	}{
		{"self dir before PATH", []string{"yaz-gate"}, self, []string{filepath.Join(self, "yaz-gate")}, nil},
		{"PATH without self dir", []string{"yaz-gate"}, "", []string{filepath.Join(pathDir, "yaz-gate")}, nil},
		{"non-executable sibling skipped", []string{"yaz-speak", "--serve"}, self, []string{filepath.Join(pathDir, "yaz-speak"), "--serve"}, nil},
		{"absolute path as it is", []string{filepath.Join(root, "abs", "fake"), "-x"}, self, []string{filepath.Join(root, "abs", "fake"), "-x"}, nil},
		{"missing everywhere", []string{"yaz-decode", "--serve"}, self, nil, exec.ErrNotFound},
		{"missing path", []string{filepath.Join(root, "abs", "none")}, self, nil, os.ErrNotExist},
		{"path not executable", []string{filepath.Join(root, "abs", "plain")}, self, nil, os.ErrPermission},
		{"empty", nil, self, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]string(nil), tc.argv...)
			got, err := ResolveCommand(tc.argv, tc.selfDir)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("ResolveCommand(%q) = %q, want an error", tc.argv, got)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("ResolveCommand(%q) error %v, want errors.Is %v", tc.argv, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveCommand(%q): %v", tc.argv, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ResolveCommand(%q) (-want +got):\n%s", tc.argv, diff)
			}
			if diff := cmp.Diff(orig, tc.argv); diff != "" {
				t.Errorf("ResolveCommand changed its argument (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSelfDir(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	if got := SelfDir(); got != filepath.Dir(exe) {
		t.Errorf("SelfDir() = %q, want %q", got, filepath.Dir(exe))
	}
}
