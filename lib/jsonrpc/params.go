package jsonrpc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"unicode/utf8"
)

// DecodeParams decodes a request's params into v (a non-nil pointer)
// strictly, closing the leniencies of encoding/json:
//
//   - absent or null params decode as {};
//   - the text must be valid UTF-8, and no string may hold an escaped lone
//     surrogate such as "\ud800" (encoding/json would quietly make either
//     one U+FFFD);
//   - every member name of an object decoded into a struct must be exactly
//     the JSON name of one of its fields, letter case included
//     (encoding/json also takes "QUESTION" for "question"); unknown names
//     are refused;
//   - no object, at any depth, may name a member twice, whatever the target
//     (encoding/json keeps the last);
//   - nothing may follow the value.
//
// Any fault is an *Error with code InvalidParams whose fixed message never
// repeats the params.
func DecodeParams(params json.RawMessage, v any) error {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	switch {
	case !utf8.Valid(p):
		return paramsError("params must be valid UTF-8")
	case !json.Valid(p):
		return paramsError("params must be one JSON value")
	case hasLoneSurrogate(p):
		return paramsError("params must not hold lone surrogate escapes")
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return paramsError("params target must be a non-nil pointer")
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := checkNames(dec, rv.Type().Elem()); err != nil {
		return err
	}
	dec = json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return paramsError("params do not have the method's members and types")
	}
	return nil
}

func paramsError(msg string) *Error { return &Error{Code: InvalidParams, Message: msg} }

var (
	errDuplicateName = paramsError("params must not name a member twice")
	errUnknownName   = paramsError("params have a member this method does not take (names are case-sensitive)")
	errMalformed     = paramsError("params must be one JSON value")
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkNames walks the next JSON value. t is the Go type it decodes into,
// or nil where any names are allowed (an interface, or a type that decodes
// itself); duplicate names are refused everywhere.
func checkNames(dec *json.Decoder, t reflect.Type) error {
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		t = nil
	}
	switch delim {
	case '{':
		var fields map[string]reflect.Type // nil: any name
		var elem reflect.Type
		if t != nil {
			switch t.Kind() {
			case reflect.Struct:
				fields = map[string]reflect.Type{}
				jsonFields(t, fields, 0)
			case reflect.Map:
				elem = t.Elem()
			}
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return errMalformed
			}
			name, _ := tok.(string)
			if seen[name] {
				return errDuplicateName
			}
			seen[name] = true
			vt := elem
			if fields != nil {
				ft, ok := fields[name]
				if !ok {
					return errUnknownName
				}
				vt = ft
			}
			if err := checkNames(dec, vt); err != nil {
				return err
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkNames(dec, elem); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errMalformed
	}
	return nil
}

// jsonFields adds the JSON names of struct type t's fields, as
// encoding/json names them: the tag's name, else the Go name; "-" skips a
// field; the fields of an untagged embedded struct are promoted, and a
// field nearer the top wins over a promoted one of the same name.
func jsonFields(t reflect.Type, fields map[string]reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := bytes.Cut([]byte(tag), []byte(","))
		ft := f.Type
		if f.Anonymous && len(name) == 0 {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		n := string(name)
		if n == "" {
			n = f.Name
		}
		fields[n] = f.Type
	}
	for _, et := range embedded {
		promoted := map[string]reflect.Type{}
		jsonFields(et, promoted, depth+1)
		for n, ft := range promoted {
			if _, ok := fields[n]; !ok {
				fields[n] = ft
			}
		}
	}
}

// hasLoneSurrogate reports a \u escape of a UTF-16 surrogate that is not
// a high surrogate directly followed by an escaped low one. p is valid
// JSON.
func hasLoneSurrogate(p []byte) bool {
	inString := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			i++
			if p[i] != 'u' {
				continue
			}
			u, ok := hex4(p[i+1:])
			if !ok {
				return true // cannot happen in valid JSON
			}
			i += 4
			switch {
			case u >= 0xdc00 && u <= 0xdfff:
				return true
			case u >= 0xd800 && u <= 0xdbff:
				if i+2 >= len(p) || p[i+1] != '\\' || p[i+2] != 'u' {
					return true
				}
				lo, ok := hex4(p[i+3:])
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
