package wayland_test

import (
	"context"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/untrusted"
)

func withoutLocale(env []string, extra ...string) []string {
	return append(withoutEnv(env, "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES"), extra...)
}

// The typing tools read the text in the locale's encoding: without a
// UTF-8 locale wtype loses every character that is not ASCII and exits 0.
// It gets one whatever the daemon's own locale.
func TestToolsTypeUTF8WithoutLocale(t *testing.T) {
	const text = "Grüße 日本語"
	t.Run("wayland", func(t *testing.T) {
		env := startSway(t)
		rec := startFoot(t, env)
		inj, _ := New(Wtype, Options{Environ: withoutLocale(env, "LC_ALL=C")})
		t.Cleanup(inj.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := inj.Type(ctx, untrusted.Typed(text)); err != nil {
			t.Fatalf("Type: %v", err)
		}
		rec.WaitFor(t, text)
	})
}
