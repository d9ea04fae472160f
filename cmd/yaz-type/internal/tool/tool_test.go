package tool

import (
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

func TestRedact(t *testing.T) {
	tests := []struct{ msg, secret, want string }{
		{"Error: Can't open display: :9", "hello there", "Error: Can't open display: :9"},
		{"cannot type 'hello there'", "hello there", ""},
		{"bad keysym for Grüße", "Grüße, Ünïcödé", ""},
		{"first\nsecond", "", "first"},
		{"", "x", ""},
		{"it failed", "it is", "it failed"}, // two-letter words do not count
	}
	for _, tt := range tests {
		if got := Redact(tt.msg, tt.secret); got != tt.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", tt.msg, tt.secret, got, tt.want)
		}
	}
	if got := Redact(strings.Repeat("é", 300), ""); len(got) > 200 || !strings.HasPrefix(got, "é") || strings.ContainsRune(got, 0xfffd) {
		t.Errorf("redact cut badly: %d bytes", len(got))
	}
}

func TestUTF8Locale(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string // the LC_CTYPE the tools see ("" : env as it was)
	}{
		{[]string{"PATH=/bin", "LANG=de_DE.UTF-8"}, ""},
		{[]string{"LC_ALL=en_US.utf8"}, ""},
		{[]string{"LANG=C.UTF-8", "LC_CTYPE=C"}, "C.UTF-8"},
		{[]string{"PATH=/bin"}, "C.UTF-8"},
		{[]string{"LC_ALL=C", "LANG=de_DE.UTF-8"}, "C.UTF-8"},
	} {
		got := utf8Locale(tt.env)
		if tt.want == "" {
			if strings.Join(got, " ") != strings.Join(tt.env, " ") {
				t.Errorf("utf8Locale(%q) = %q, want it unchanged", tt.env, got)
			}
			continue
		}
		if backend.Getenv(got, "LC_ALL") != "" || backend.Getenv(got, "LC_CTYPE") != tt.want || backend.Getenv(got, "PATH") != backend.Getenv(tt.env, "PATH") {
			t.Errorf("utf8Locale(%q) = %q, want LC_CTYPE=%s, no LC_ALL, the rest kept", tt.env, got, tt.want)
		}
	}
}
