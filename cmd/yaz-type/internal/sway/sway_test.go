package sway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
)

func TestSwayTree(t *testing.T) {
	dir := t.TempDir()
	tree := `{"type":"root","focused":false,"nodes":[{"type":"output","nodes":[{"type":"workspace","focused":%s,"nodes":[
	  {"type":"con","focused":%s,"app_id":"foot","nodes":[]}],"floating_nodes":[
	  {"type":"floating_con","focused":%s,"app_id":null,"window_properties":{"class":"Firefox"},"nodes":[]}]}]}]}`
	tests := []struct {
		ws, con, float string
		want           backend.Focus
		app            string
	}{
		{"true", "false", "false", backend.FocusNone, ""},
		{"false", "true", "false", backend.FocusWindow, "foot"},
		{"false", "false", "true", backend.FocusWindow, "Firefox"},
	}
	for _, tt := range tests {
		body := tree
		for _, v := range []string{tt.ws, tt.con, tt.float} {
			body = strings.Replace(body, "%s", v, 1)
		}
		script := "#!/bin/sh\ncat <<'JSON'\n" + body + "\nJSON\n"
		if err := os.WriteFile(filepath.Join(dir, "swaymsg"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + dir + ":/usr/bin:/bin", "WAYLAND_DISPLAY=w", "SWAYSOCK=/nonexistent"}
		got, err := Focus(context.Background(), tool.Call{Env: env})
		if err != nil || got.Focus != tt.want || got.AppID != tt.app {
			t.Errorf("Focus = %+v, %v; want %v %q", got, err, tt.want, tt.app)
		}
	}
}
