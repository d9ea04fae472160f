package xconn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testx"
)

func TestParseDisplay(t *testing.T) {
	tests := []struct {
		in                     string
		network, addr, host, n string
		screen                 int
	}{
		{":0", "unix", "/tmp/.X11-unix/X0", "", "0", 0},
		{":12.1", "unix", "/tmp/.X11-unix/X12", "", "12", 1},
		{"unix:3", "unix", "/tmp/.X11-unix/X3", "", "3", 0},
		{"localhost:10.0", "tcp", "localhost:6010", "localhost", "10", 0},
		{"tcp/example.org:1", "tcp", "example.org:6001", "example.org", "1", 0},
		{"/private/tmp/launch-x/org.xquartz:0", "unix", "/private/tmp/launch-x/org.xquartz:0", "", "0", 0},
	}
	for _, tt := range tests {
		d, err := parseDisplay(tt.in)
		if err != nil || d.network != tt.network || d.addr != tt.addr || d.host != tt.host || d.number != tt.n || d.screen != tt.screen {
			t.Errorf("parseDisplay(%q) = %+v, %v", tt.in, d, err)
		}
	}
	for _, bad := range []string{"", "0", ":", ":x", ":1.y", ":-1"} {
		if _, err := parseDisplay(bad); err == nil {
			t.Errorf("parseDisplay(%q) succeeded", bad)
		}
	}
}

// xauthEntry is one record of an authority file.
func xauthEntry(family uint16, addr, disp string, cookie []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, family)
	for _, f := range [][]byte{[]byte(addr), []byte(disp), []byte("MIT-MAGIC-COOKIE-1"), cookie} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

// A server that wants a cookie: the in-process backend finds it in the
// file that the environment's XAUTHORITY names (for this display, among
// others), and is refused without it.
func TestX11Authority(t *testing.T) {
	dir := t.TempDir()
	cookie := []byte("0123456789abcdef")
	server := filepath.Join(dir, "server")
	if err := os.WriteFile(server, xauthEntry(familyWild, "", "", cookie), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testx.Start(t, "-auth", server).Env
	d, _ := parseDisplay(backend.Getenv(env, "DISPLAY"))
	host, _ := os.Hostname()
	wrong := []byte("fedcba9876543210")
	client := filepath.Join(dir, "client")
	file := append(xauthEntry(familyLocal, host, d.number+"9", wrong), xauthEntry(familyLocal, host, d.number, cookie)...)
	if err := os.WriteFile(client, file, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x, err := Dial(ctx, append(testx.WithoutEnv(env, "XAUTHORITY"), "XAUTHORITY="+client))
	if err != nil {
		t.Fatalf("Dial with the cookie: %v", err)
	}
	if _, err := x.Sync(); err != nil {
		t.Errorf("round trip: %v", err)
	}
	x.Close()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, xauthEntry(familyLocal, host, d.number, wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, append(testx.WithoutEnv(env, "XAUTHORITY"), "XAUTHORITY="+bad)); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Dial with a wrong cookie = %v, want ErrUnavailable", err)
	}
}
