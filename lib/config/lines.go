package config

import (
	"regexp"
	"strconv"
	"strings"
)

// The TOML library reports a line for syntax errors only, so the line of
// each key is found here by a small scanner over a document the library has
// already accepted. It knows table headers, arrays of tables, dotted and
// quoted keys, and skips over values (strings of every kind, multi-line
// arrays, inline tables, comments); keys inside inline tables are not
// recorded, and lookups fall back to the nearest enclosing key that is.

// keyLines records where each key of a document is defined.
type keyLines struct {
	line  map[string]int // key path (as formatPath writes it) → 1-based line
	order []string       // every recorded path, in document order
}

var bareKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// formatKey writes one key part as TOML would: bare when it can be, quoted
// otherwise.
func formatKey(k string) string {
	if bareKeyRE.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

// joinKey appends a key part to a dotted path.
func joinKey(path, k string) string {
	if path == "" {
		return formatKey(k)
	}
	return path + "." + formatKey(k)
}

// indexKey names element i of the array at path.
func indexKey(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// lookup returns the line of path, or of its nearest recorded ancestor; 0
// if none is recorded.
func (kl keyLines) lookup(path string) int {
	for path != "" {
		if n, ok := kl.line[path]; ok {
			return n
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if cut < 0 {
			return 0
		}
		path = path[:cut]
	}
	return 0
}

type lineScanner struct {
	src  string
	i    int
	line int
	kl   keyLines
	aot  map[string]int // plain header path of each array of tables → elements seen
}

func scanKeyLines(src string) keyLines {
	s := &lineScanner{
		src:  strings.TrimPrefix(src, "\ufeff"),
		line: 1,
		kl:   keyLines{line: map[string]int{}},
		aot:  map[string]int{},
	}
	s.document()
	return s.kl
}

func (s *lineScanner) record(path string, line int) {
	if _, ok := s.kl.line[path]; !ok {
		s.kl.line[path] = line
		s.kl.order = append(s.kl.order, path)
	}
}

func (s *lineScanner) peek(off int) byte {
	if s.i+off < len(s.src) {
		return s.src[s.i+off]
	}
	return 0
}

func (s *lineScanner) advance() {
	if s.src[s.i] == '\n' {
		s.line++
	}
	s.i++
}

func (s *lineScanner) skipSpace() {
	for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
}

func (s *lineScanner) skipComment() {
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
}

func (s *lineScanner) document() {
	table := "" // indexed path of the current table
	for s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			s.advance()
		case c == '#':
			s.skipComment()
		case c == '[':
			line := s.line
			aot := s.peek(1) == '['
			if aot {
				s.i += 2
			} else {
				s.i++
			}
			parts := s.keyParts()
			for s.i < len(s.src) && s.src[s.i] != '\n' && s.src[s.i] != '#' {
				s.i++ // the closing brackets
			}
			table = s.header(parts, aot, line)
		default:
			line := s.line
			path := table
			for _, p := range s.keyParts() {
				path = joinKey(path, p)
				s.record(path, line)
			}
			s.skipSpace()
			if s.peek(0) == '=' {
				s.i++
			}
			s.value()
		}
	}
}

// header records a table or array-of-tables header and returns the indexed
// path of the table it opens.
func (s *lineScanner) header(parts []string, aot bool, line int) string {
	plain, indexed := "", ""
	for n, p := range parts {
		plain = joinKey(plain, p)
		indexed = joinKey(indexed, p)
		last := n == len(parts)-1
		if last && aot {
			s.aot[plain]++
		}
		if c, ok := s.aot[plain]; ok && (!last || aot) {
			indexed = indexKey(indexed, c-1)
		}
		if !last {
			continue
		}
		if aot {
			s.record(strings.TrimSuffix(indexed, "["+strconv.Itoa(s.aot[plain]-1)+"]"), line)
		}
		s.record(indexed, line)
	}
	return indexed
}

// keyParts reads a possibly dotted, possibly quoted key.
func (s *lineScanner) keyParts() []string {
	var parts []string
	for {
		s.skipSpace()
		if s.i >= len(s.src) {
			return parts
		}
		switch s.src[s.i] {
		case '"':
			start := s.i
			s.i++
			for s.i < len(s.src) && s.src[s.i] != '"' && s.src[s.i] != '\n' {
				if s.src[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			s.i = min(s.i+1, len(s.src))
			raw := s.src[start:s.i]
			if k, err := strconv.Unquote(strings.ReplaceAll(raw, `\e`, `\x1b`)); err == nil {
				parts = append(parts, k)
			} else {
				parts = append(parts, strings.Trim(raw, `"`))
			}
		case '\'':
			s.i++
			end := strings.IndexAny(s.src[s.i:], "'\n")
			if end < 0 {
				end = len(s.src) - s.i
			}
			parts = append(parts, s.src[s.i:s.i+end])
			s.i = min(s.i+end+1, len(s.src))
		default:
			start := s.i
			for s.i < len(s.src) && !strings.ContainsRune(" \t.=]#\"'\r\n", rune(s.src[s.i])) {
				s.i++
			}
			if s.i == start {
				return parts
			}
			parts = append(parts, s.src[start:s.i])
		}
		s.skipSpace()
		if s.peek(0) != '.' {
			return parts
		}
		s.i++
	}
}

// value skips one value: up to the end of its line, or further while a
// multi-line string, an array or an inline table is open.
func (s *lineScanner) value() {
	depth := 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n' && depth == 0:
			return
		case c == '#':
			s.skipComment()
		case c == '[' || c == '{':
			depth++
			s.i++
		case c == ']' || c == '}':
			depth--
			s.i++
		case c == '"' || c == '\'':
			s.str(c)
		default:
			s.advance()
		}
	}
}

// str skips a string of any of the four kinds, starting at its quote.
func (s *lineScanner) str(q byte) {
	multi := s.peek(1) == q && s.peek(2) == q
	if multi {
		s.i += 3
	} else {
		s.i++
	}
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\' && q == '"':
			s.advance()
			if s.i < len(s.src) {
				s.advance()
			}
		case c == q && !multi:
			s.i++
			return
		case c == q && s.peek(1) == q && s.peek(2) == q:
			s.i += 3
			for k := 0; k < 2 && s.peek(0) == q; k++ { // """a"""" ends with a quote inside
				s.i++
			}
			return
		case c == '\n' && !multi:
			return
		default:
			s.advance()
		}
	}
}
