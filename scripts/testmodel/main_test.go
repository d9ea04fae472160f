package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMissingParentFolders: -o dir/x.bin with a dir/ that does not exist yet
// writes the model there, as the README's example does on a fresh machine.
func TestMissingParentFolders(t *testing.T) {
	out := filepath.Join(t.TempDir(), "models", "nested", "x.bin")
	var stderr bytes.Buffer
	if code := run([]string{"-size", "mini", "-o", out}, &stderr); code != 0 {
		t.Fatalf("run(-o %s) = %d, want 0; stderr:\n%s", out, code, stderr.String())
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Errorf("%s is empty", out)
	}
}

// TestUnwritable: a parent that is a file is an error with exit status 1.
func TestUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-size", "mini", "-o", filepath.Join(file, "x.bin")}, &stderr); code != 1 {
		t.Fatalf("run = %d, want 1; stderr:\n%s", code, stderr.String())
	}
	if !bytes.HasPrefix(stderr.Bytes(), []byte("testmodel: error: ")) {
		t.Errorf("stderr = %q, want a testmodel: error: line", stderr.String())
	}
}
