package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/yazses/yazses/lib/modelfile"
)

// Parse parses a configuration file's contents; name is what errors call
// the file. Keys the file does not set keep their defaults; an array given
// in the file replaces the default array. The result holds expanded paths
// and has passed every check; on error the Config is the zero value.
func Parse(data []byte, name string) (Config, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Config{}, &Error{File: name, Line: syntaxLine(data, pe.Position), Msg: "toml: " + pe.Message}
		}
		return Config{}, &Error{File: name, Msg: "toml: " + err.Error()}
	}
	d := &decoder{file: name, lines: scanKeyLines(string(data))}
	c := rawDefault()
	d.table("", raw, reflect.ValueOf(&c).Elem())
	d.expand(&c)
	// A value that could not be decoded kept its default: checking it, or
	// what is below or above it, would only repeat the problem.
	failed := slices.Clone(d.errs)
	for _, p := range validate(c) {
		if !slices.ContainsFunc(failed, func(e *Error) bool { return related(e.Key, p.key) }) {
			d.fail(p.key, "%s", p.msg)
		}
	}
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *Error) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Key, b.Key))
		})
		errs := make([]error, len(d.errs))
		for i, e := range d.errs {
			errs[i] = e
		}
		if len(errs) == 1 {
			return Config{}, errs[0]
		}
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// syntaxLine is the line of a syntax error: the one its first byte is on.
// The library's own line is one too far for an error at a line's end (a
// table header without its ']'), as it has counted the newline it read.
func syntaxLine(data []byte, p toml.Position) int {
	if p.Start <= 0 || p.Start > len(data) {
		return p.Line
	}
	return 1 + bytes.Count(data[:p.Start], []byte("\n"))
}

// related reports whether two dotted keys are the same or one is inside
// the other.
func related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}

// decoder moves the library's generic map into a Config, collecting every
// problem with its line.
type decoder struct {
	file  string
	lines keyLines
	errs  []*Error
}

func (d *decoder) fail(key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: d.lines.lookup(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// fields maps each TOML key of a struct type to its field index.
func fields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("toml"); tag != "" {
			m[tag] = i
		}
	}
	return m
}

// table decodes the TOML table m into the struct rv.
func (d *decoder) table(path string, m map[string]any, rv reflect.Value) {
	fs := fields(rv.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key := joinKey(path, k)
		i, ok := fs[k]
		if !ok {
			msg := "unknown key"
			if s := suggest(k, fs); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", joinKey(path, s))
			}
			d.fail(key, "%s", msg)
			continue
		}
		d.value(key, m[k], rv.Field(i))
	}
}

// value decodes one TOML value v into rv.
func (d *decoder) value(key string, v any, rv reflect.Value) {
	switch rv.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(key, "must be a table, got %s", typeName(v))
			return
		}
		d.table(key, m, rv)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail(key, "must be true or false, got %s", typeName(v))
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			d.fail(key, "must be an integer, got %s", typeName(v))
			return
		}
		rv.SetInt(n)
	case reflect.Float64:
		switch f := v.(type) {
		case float64:
			rv.SetFloat(f)
		case int64:
			rv.SetFloat(float64(f))
		default:
			d.fail(key, "must be a number, got %s", typeName(v))
		}
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail(key, "must be a string, got %s", typeName(v))
			return
		}
		rv.SetString(s)
	case reflect.Slice:
		d.slice(key, v, rv)
	default:
		panic("config: unsupported field kind " + rv.Kind().String())
	}
}

func (d *decoder) slice(key string, v any, rv reflect.Value) {
	var elems []any
	switch a := v.(type) {
	case []any:
		elems = a
	case []map[string]any:
		for _, m := range a {
			elems = append(elems, m)
		}
	default:
		if rv.Type().Elem().Kind() == reflect.Struct {
			d.fail(key, "must be an array of tables ([[%s]]), got %s", key, typeName(v))
		} else {
			d.fail(key, "must be an array of strings, got %s", typeName(v))
		}
		return
	}
	out := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
	for i, e := range elems {
		d.value(indexKey(key, i), e, out.Index(i))
	}
	rv.Set(out)
}

// typeName names the TOML type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a date-time"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// suggest returns the known key closest to an unknown one, if it is close.
func suggest(k string, known map[string]int) string {
	best, bestD := "", 0
	for cand := range known {
		dist := editDistance(k, cand)
		switch {
		case strings.Contains(cand, k) || strings.Contains(k, cand):
			dist = 0
		case dist > len(cand)/3+1:
			continue
		}
		if best == "" || dist < bestD || dist == bestD && cand < best {
			best, bestD = cand, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// expand expands the paths of c in place.
func (d *decoder) expand(c *Config) {
	one := func(key string, p *string) {
		if *p == "" {
			return
		}
		e, err := ExpandPath(*p)
		if err != nil {
			d.fail(key, "%v", err)
			return
		}
		*p = e
	}
	one("decode.model", &c.Decode.Model)
	untouched := c.VAD.Model == defaultVADModel
	one("vad.model", &c.VAD.Model)
	if untouched {
		// The default names the user's folder; where nothing was
		// fetched there, a packaged model serves.
		c.VAD.Model = modelfile.DefaultVADPath()
	}
	one("hotkey.device", &c.Hotkey.Device)
	if pp := c.Dictation.PostProcess; len(pp) > 0 {
		one(indexKey("dictation.post_process", 0), &pp[0])
	}
	for _, ch := range c.Children.list() {
		if len(*ch.argv) > 0 {
			one(indexKey(ch.key, 0), &(*ch.argv)[0])
		}
	}
}

// child is one children command with its key.
type child struct {
	key  string
	argv *[]string
}

func (c *Children) list() []child {
	return []child{
		{"children.capture", &c.Capture},
		{"children.decode", &c.Decode},
		{"children.speak", &c.Speak},
		{"children.gate", &c.Gate},
		{"children.vad", &c.VAD},
		{"children.type", &c.Type},
	}
}
