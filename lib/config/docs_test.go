package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

const docsPath = "../../docs/config.md"

func readDocs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("read the reference: %v", err)
	}
	return string(b)
}

var keyCellRE = regexp.MustCompile("^`[a-z_]+\\.[a-z_.\\[\\]N]+`$")

// docRows maps the key of each reference table row to its cells.
func docRows(doc string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !keyCellRE.MatchString(cells[0]) {
			continue
		}
		rows[strings.Trim(cells[0], "`")] = cells
	}
	return rows
}

// defaultValues maps each key of DefaultTOML to the value text written for
// it.
func defaultValues() map[string]string {
	lines := strings.Split(DefaultTOML(), "\n")
	kl := scanKeyLines(DefaultTOML())
	vals := map[string]string{}
	for _, k := range kl.order {
		text := lines[kl.line[k]-1]
		if _, v, ok := strings.Cut(text, " = "); ok {
			vals[k] = v
		}
	}
	return vals
}

// Every key has a row in docs/config.md whose type and default agree with
// the code and with DefaultTOML.
func TestDocsListEveryKey(t *testing.T) {
	rows := docRows(readDocs(t))
	vals := defaultValues()
	for _, k := range Keys() {
		row, ok := rows[k]
		if !ok {
			t.Errorf("docs/config.md has no row for %s", k)
			continue
		}
		if len(row) != 5 {
			t.Errorf("docs/config.md row for %s has %d cells, want 5 (key, type, default, allowed, meaning)", k, len(row))
			continue
		}
		if k == "dictation.replace" {
			if row[2] != "none" {
				t.Errorf("docs default of %s = %q, want none", k, row[2])
			}
			continue
		}
		if want := "`" + vals[k] + "`"; row[2] != want {
			t.Errorf("docs default of %s = %s, DefaultTOML has %s", k, row[2], want)
		}
	}
	for _, k := range []string{"dictation.replace[N].from", "dictation.replace[N].to"} {
		if _, ok := rows[k]; !ok {
			t.Errorf("docs/config.md has no row for %s", k)
		}
	}
	// And no row for a key that does not exist.
	known := map[string]bool{"dictation.replace[N].from": true, "dictation.replace[N].to": true}
	for _, k := range Keys() {
		known[k] = true
	}
	for k := range rows {
		if !known[k] {
			t.Errorf("docs/config.md has a row for %s, which is not a key", k)
		}
	}
}

var tomlBlockRE = regexp.MustCompile("(?s)```toml\n(.*?)```")

// Every TOML example in the reference is a valid file, and the last one,
// "a full example", sets every key.
func TestDocsExamplesParse(t *testing.T) {
	fixedEnv(t)
	blocks := tomlBlockRE.FindAllStringSubmatch(readDocs(t), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/config.md has %d TOML examples, want at least 2", len(blocks))
	}
	for i, b := range blocks {
		if _, err := Parse([]byte(b[1]), "example"); err != nil {
			t.Errorf("docs/config.md TOML example %d: %v", i+1, err)
		}
	}
	full := scanKeyLines(blocks[len(blocks)-1][1])
	for _, k := range Keys() {
		if full.lookup(k) == 0 || full.line[k] == 0 && k != "dictation.replace" {
			t.Errorf("the full example in docs/config.md does not set %s", k)
		}
	}
}

// The reload table names exactly the restart-only settings of NeedsRestart.
func TestDocsReloadTable(t *testing.T) {
	doc := readDocs(t)
	i := strings.Index(doc, "| takes effect on reload | needs a restart of the daemon |")
	if i < 0 {
		t.Fatal("docs/config.md has no reload table")
	}
	row := strings.Split(doc[i:], "\n")[2]
	cells := strings.Split(strings.Trim(row, "|"), "|")
	if len(cells) != 2 {
		t.Fatalf("reload table row %q: want 2 cells", row)
	}
	reload, restart := cells[0], cells[1]
	for _, p := range restartOnly {
		name := "`[" + p + "]`"
		if strings.Contains(p, ".") {
			name = "`" + p + "`"
		}
		if !strings.Contains(restart, name) {
			t.Errorf("reload table: %s missing from the restart column", name)
		}
	}
	for _, k := range Keys() {
		table := "`[" + k[:strings.IndexByte(k, '.')] + "]`"
		if !RestartOnly(k) && !strings.Contains(reload, table) {
			t.Errorf("reload table: %s (for %s) missing from the reload column", table, k)
		}
		if RestartOnly(k) && strings.Contains(reload, table) && !strings.Contains(reload, "except `"+k[strings.IndexByte(k, '.')+1:]+"`") {
			t.Errorf("reload table: %s is in the reload column but %s needs a restart", table, k)
		}
	}
}
