package readme

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// designDoc is the design document, relative to the repository.
const designDoc = "docs/design.md"

var (
	// outsideDesign is a design file the repository does not hold.
	outsideDesign = regexp.MustCompile(`\bDESIGN\.md\b`)
	// issueNumber is an issue tracker's number, in the usual spellings:
	// the word issue (or issues) and a number, with or without a hash
	// sign, or a hash sign and a number in parentheses.
	issueNumber = regexp.MustCompile(`(?i)\bissues?\s+#?\d|\(#\d+\)`)
	// numbered is a cited contract or invariant: "contract 2", "contract-2
	// causes", "Invariant 10".
	numbered = regexp.MustCompile(`(?i)\b(contract|invariant)s?[ -](\d+)`)
	// sectionRef is a cited section of the design document, as comments
	// and docs cite it: `docs/design.md, "PCM"`, `docs/design.md ("PCM")`,
	// or a Markdown link to one of its anchors.
	sectionRef = regexp.MustCompile(`design\.md(?:,\s*|\s+\()"([^"\n]{1,80})"`)
	anchorRef  = regexp.MustCompile(`design\.md#([a-z0-9-]+)`)
	// joinComment joins a line to the next across a comment marker, so
	// that a citation wrapped over two comment lines reads as one.
	joinComment = regexp.MustCompile(`\n[ \t]*(?://+|#+)?[ \t]*`)
)

// citedExt are the kinds of file a citation can be in: source, scripts,
// docs, test scripts, build and packaging files.
var citedExt = []string{".go", ".md", ".sh", ".txtar", ".c", ".h", ".hpp", ".service", ".toml", ".txt", ".yml", ".yaml"}

// TestDesignCitations: the tree cites nothing a reader of the repository
// cannot open. No file cites the old design file that was never in the
// repository or an issue tracker's number (say the behaviour instead);
// every section of docs/design.md cited by name or anchor is a heading
// there, and every "contract N" and "invariant N" cited anywhere is one
// that docs/design.md defines.
func TestDesignCitations(t *testing.T) {
	design, err := os.ReadFile(filepath.Join(world.root, designDoc))
	if err != nil {
		t.Fatalf("read the design document: %v", err)
	}
	sections, anchors, contracts, invariants := designIndex(string(design))
	if len(invariants) != 10 {
		t.Errorf("%s defines invariants %v; want 1 to 10", designDoc, invariants)
	}
	if len(contracts) < 2 {
		t.Errorf("%s defines contracts %v; want at least 1 and 2", designDoc, contracts)
	}

	scanned := 0
	err = filepath.WalkDir(world.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(world.root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") && name != ".ci" || name == "node_modules" ||
				rel == "bin" || rel == "testdata-gen") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !(slices.Contains(citedExt, filepath.Ext(path)) ||
			d.Name() == "Makefile" || filepath.Dir(rel) == ".ci") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return nil // not text
		}
		scanned++
		for i, line := range strings.Split(string(data), "\n") {
			at := rel + ":" + strconv.Itoa(i+1)
			if outsideDesign.MatchString(line) {
				t.Errorf("%s cites a design file the repository does not hold: cite %s and its section or number\n\t%s", at, designDoc, strings.TrimSpace(line))
			}
			if issueNumber.MatchString(line) {
				t.Errorf("%s cites an issue number: say the behaviour instead\n\t%s", at, strings.TrimSpace(line))
			}
			for _, m := range numbered.FindAllStringSubmatch(line, -1) {
				n, _ := strconv.Atoi(m[2])
				defined := contracts
				if strings.EqualFold(m[1], "invariant") {
					defined = invariants
				}
				if !slices.Contains(defined, n) {
					t.Errorf("%s cites %s, which %s does not define", at, m[0], designDoc)
				}
			}
		}
		joined := joinComment.ReplaceAllString(string(data), " ")
		for _, m := range sectionRef.FindAllStringSubmatch(joined, -1) {
			if !sections[m[1]] {
				t.Errorf("%s cites section %q of %s, which has no such heading", rel, m[1], designDoc)
			}
		}
		for _, m := range anchorRef.FindAllStringSubmatch(joined, -1) {
			if !anchors[m[1]] {
				t.Errorf("%s links to %s#%s, which has no such heading", rel, designDoc, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the repository: %v", err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files under %s; the walk missed the tree", scanned, world.root)
	}
}

// designIndex reads what the design document defines: its headings (as
// written, without the leading #s), their Markdown anchors, the numbers
// of its "### Contract N: …" headings, and the numbers of the list items
// in its section "The interruption budget".
func designIndex(doc string) (sections, anchors map[string]bool, contracts, invariants []int) {
	sections, anchors = map[string]bool{}, map[string]bool{}
	contractHead := regexp.MustCompile(`^### Contract (\d+): `)
	item := regexp.MustCompile(`^(\d+)\. `)
	inBudget, inFence := false, false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "#") {
			title := strings.TrimSpace(strings.TrimLeft(line, "#"))
			sections[title] = true
			anchors[anchor(title)] = true
			if strings.HasPrefix(line, "## ") {
				inBudget = title == "The interruption budget"
			}
			if m := contractHead.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				contracts = append(contracts, n)
			}
			continue
		}
		if m := item.FindStringSubmatch(line); inBudget && m != nil {
			n, _ := strconv.Atoi(m[1])
			invariants = append(invariants, n)
		}
	}
	return sections, anchors, contracts, invariants
}

// anchor is the anchor GitHub gives a Markdown heading: lower case,
// spaces as hyphens, other punctuation dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ' || r == '-':
			b.WriteByte('-')
		case r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDesignIndex: the reader of the design document finds headings,
// anchors, contract headings and the budget's list, and nothing in a code
// block or another section.
func TestDesignIndex(t *testing.T) {
	doc := "# Design\n\n## Wire contracts\n\n### Supervised decode\n\n1. not an invariant\n\n" +
		"### Contract 1: abandon\n\n## The interruption budget\n\n1. **Off.**\n2. **One.**\n```\n3. in a block\n```\n\n" +
		"## Desktop dictation\n\n4. not one either\n"
	sections, anchors, contracts, invariants := designIndex(doc)
	for _, s := range []string{"Design", "Wire contracts", "Supervised decode", "Contract 1: abandon", "The interruption budget"} {
		if !sections[s] {
			t.Errorf("section %q not found: %v", s, sections)
		}
	}
	for _, a := range []string{"supervised-decode", "contract-1-abandon", "the-interruption-budget"} {
		if !anchors[a] {
			t.Errorf("anchor %q not found: %v", a, anchors)
		}
	}
	if !slices.Equal(contracts, []int{1}) || !slices.Equal(invariants, []int{1, 2}) {
		t.Errorf("contracts %v, invariants %v; want [1], [1 2]", contracts, invariants)
	}
}
