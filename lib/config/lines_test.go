package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanKeyLines(t *testing.T) {
	src := strings.Join([]string{
		"\ufeff# comment with key = 1",        // 1
		`top = "a # not a comment"`,           // 2
		"[ decode ]",                          // 3
		`prompt = """`,                        // 4
		`fake = 1`,                            // 5 (inside the string)
		`[fake]`,                              // 6 (inside the string)
		`"""`,                                 // 7
		`model = '''x`,                        // 8
		`y = ''' # c`,                         // 9
		"threads = 2\r",                       // 10
		`[children]`,                          // 11
		`decode = [`,                          // 12
		`  "a", # inner comment with ] and "`, // 13
		`  "b = c",`,                          // 14
		`]`,                                   // 15
		`gate = ["x"]`,                        // 16
		`[[dictation.replace]]`,               // 17
		`from = "\"quoted\""`,                 // 18
		`[[ dictation . replace ]]`,           // 19
		`to = 'x'`,                            // 20
		`[dictation.replace.sub]`,             // 21
		`k = 1`,                               // 22
		`"quoted key".'lit key' = { a = 1 }`,  // 23
		`esc = "tab\tquote\" ok"`,             // 24
		`after.dotted = true`,                 // 25
		`ml = """a""""`,                       // 26
		`last = 1`,                            // 27
	}, "\n")
	kl := scanKeyLines(src)
	want := map[string]int{
		"top":                                   2,
		"decode":                                3,
		"decode.prompt":                         4,
		"decode.model":                          8,
		"decode.threads":                        10,
		"children":                              11,
		"children.decode":                       12,
		"children.gate":                         16,
		"dictation.replace":                     17,
		"dictation.replace[0]":                  17,
		"dictation.replace[0].from":             18,
		"dictation.replace[1]":                  19,
		"dictation.replace[1].to":               20,
		"dictation.replace[1].sub":              21,
		"dictation.replace[1].sub.k":            22,
		`dictation.replace[1].sub."quoted key"`: 23,
		`dictation.replace[1].sub."quoted key"."lit key"`: 23,
		"dictation.replace[1].sub.esc":                    24,
		"dictation.replace[1].sub.after":                  25,
		"dictation.replace[1].sub.after.dotted":           26 - 1,
		"dictation.replace[1].sub.ml":                     26,
		"dictation.replace[1].sub.last":                   27,
	}
	if diff := cmp.Diff(want, kl.line); diff != "" {
		t.Errorf("scanKeyLines (-want +got):\n%s", diff)
	}

	lookups := []struct {
		path string
		line int
	}{
		{"decode.prompt", 4},
		{"decode.unknown", 3},
		{"dictation.replace[1].sub.\"quoted key\".\"lit key\".a", 23},
		{"dictation.replace[5].from", 17},
		{"nothing.here", 0},
	}
	for _, tc := range lookups {
		if got := kl.lookup(tc.path); got != tc.line {
			t.Errorf("lookup(%q) = %d, want %d", tc.path, got, tc.line)
		}
	}
}

// The line of every key of the default file is the line that names it.
func TestScanKeyLinesDefaultTOML(t *testing.T) {
	lines := strings.Split(DefaultTOML(), "\n")
	kl := scanKeyLines(DefaultTOML())
	if len(kl.order) < len(Keys()) {
		t.Fatalf("scanKeyLines found %d keys in DefaultTOML, want at least %d", len(kl.order), len(Keys()))
	}
	for _, k := range kl.order {
		last := k[strings.LastIndexByte(k, '.')+1:]
		text := lines[kl.line[k]-1]
		if !strings.HasPrefix(text, last+" = ") && text != "["+k+"]" {
			t.Errorf("key %s recorded at line %d: %q", k, kl.line[k], text)
		}
	}
}

// FuzzParse: no input makes Parse (and its line scanner) panic or hang, and
// an accepted input passes every check.
func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add("[[dictation.replace]]\nfrom = \"a\"\n[dictation.replace.x]\n")
	f.Add("a = \"\"\"\n\\\"\"\"\"\n[b]\nc = [\n1,\n]\n")
	f.Add("x = '''\n'''''\n\"k\\u00e9\".y = {z = [1, {w = 2}]}\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := Parse([]byte(src), "fuzz.toml")
		if err != nil {
			return
		}
		if ps := validate(c); len(ps) > 0 {
			t.Errorf("Parse accepted a Config that fails validate: %v", ps)
		}
	})
}
