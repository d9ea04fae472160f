package decode

import (
	"bytes"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/lib/cli"
)

// TestFlagSpellings: the scheme's spellings (-f/--format for what is
// written) and the old ones that scripts use (-o/--output for the format,
// --json in stream mode) give the same settings.
func TestFlagSpellings(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		format     string
		streamJSON bool
	}{
		{[]string{"-f", "srt", "a.wav"}, "srt", false},
		{[]string{"--format", "vtt", "a.wav"}, "vtt", false},
		{[]string{"--format=json"}, "json", true},
		{[]string{"-o", "srt", "a.wav"}, "srt", false},       // old
		{[]string{"--output", "vtt", "a.wav"}, "vtt", false}, // old
		{[]string{"--output=json", "a.wav"}, "json", true},   // old
		{[]string{"--json"}, "json", true},                   // old
		{nil, "txt", false},
	} {
		var c CLI
		var out, errb bytes.Buffer
		if _, code, done := cli.Parse(name, "", &c, tc.args, &out, &errb, kong.Vars{"model": "", "vad_model": "", "version": "test"}); done {
			t.Errorf("parse %q: exit %d: %s", tc.args, code, errb.String())
			continue
		}
		if c.Output != tc.format || c.JSON != tc.streamJSON {
			t.Errorf("%q: format %q, stream JSON %v; want %q, %v", tc.args, c.Output, c.JSON, tc.format, tc.streamJSON)
		}
	}
	var c CLI
	var out, errb bytes.Buffer
	if _, code, _ := cli.Parse(name, "", &c, []string{"-o", "mp3", "a.wav"}, &out, &errb, kong.Vars{"model": "", "vad_model": "", "version": "test"}); code != cli.ExitUsage {
		t.Errorf("-o mp3: exit %d, want %d (a usage error)", code, cli.ExitUsage)
	}
}
