package app

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/daemonapi"
)

// completions runs yazsesd as bash runs it to complete line.
func completions(t *testing.T, line string) []string {
	t.Helper()
	t.Setenv("COMP_LINE", line)
	t.Setenv("COMP_POINT", strconv.Itoa(len(line)))
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"yazsesd"}, strings.NewReader(""), &out, &errb, "test"); code != 0 || errb.Len() > 0 {
		t.Fatalf("completing %q: exit %d, stderr %q", line, code, errb.String())
	}
	got := strings.Fields(out.String())
	slices.Sort(got)
	return got
}

// TestCompleteCtl: bash completes the socket methods after "yazsesd ctl"
// (every method of daemonapi, hold.* as "hold start" and so on), and the
// formats of --format.
func TestCompleteCtl(t *testing.T) {
	var first, hold []string
	for _, m := range daemonapi.Methods {
		if verb, ok := strings.CutPrefix(m, "hold."); ok {
			hold = append(hold, verb)
			m = "hold"
		}
		if !slices.Contains(first, m) {
			first = append(first, m)
		}
	}
	slices.Sort(first)
	slices.Sort(hold)
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"yazsesd ctl ", first},
		{"yazsesd ctl hold ", hold},
		{"yazsesd ctl b", []string{"budget.status"}},
		{"yazsesd ctl --format ", []string{"json", "polybar", "waybar"}},
		{"yazsesd ctl watch --format p", []string{"polybar"}},
	} {
		if got := completions(t, tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("completions of %q = %q, want %q", tc.line, got, tc.want)
		}
	}
}
