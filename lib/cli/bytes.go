package cli

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// Linux file names are bytes, not text: an argument, a flag's value or an
// environment variable reaches the program byte for byte, UTF-8 or not.
// kong's own string and path mappers decode a value through JSON, which
// turns every byte that is not UTF-8 into U+FFFD, so yaz-decode
// $'bad\xffname.wav' looked for another file. These two
// replace them.
var byteMappers = kong.OptionFunc(func(k *kong.Kong) error {
	for _, o := range []kong.Option{
		kong.KindMapper(reflect.String, kong.MapperFunc(byteString)),
		kong.NamedMapper("path", kong.MapperFunc(bytePath)),
	} {
		if err := o.Apply(k); err != nil {
			return err
		}
	}
	return nil
})

// popString pops a value token as its bytes; a value that is not a string
// (from a resolver) goes through JSON as kong does.
func popString(ctx *kong.DecodeContext, what string) (string, error) {
	t, err := ctx.Scan.PopValue(what)
	if err != nil {
		return "", err
	}
	if s, ok := t.Value.(string); ok {
		return s, nil
	}
	var s string
	b, err := json.Marshal(t.Value)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return "", fmt.Errorf("%#v -> string: %w", t.Value, err)
	}
	return s, nil
}

func byteString(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := popString(ctx, "string")
	if err != nil {
		return err
	}
	target.SetString(s)
	return nil
}

// bytePath is kong's "path" mapper byte for byte: "~" expanded and made
// absolute (kong.ExpandPath), "-" kept, an empty value with a default
// left empty.
func bytePath(ctx *kong.DecodeContext, target reflect.Value) error {
	if target.Kind() != reflect.String {
		return fmt.Errorf("\"path\" type must be applied to a string, not %s", target.Type())
	}
	path, err := popString(ctx, "file")
	if err != nil {
		return err
	}
	if ctx.Value.HasDefault && path == "" {
		return nil
	}
	if path != "-" {
		path = kong.ExpandPath(path)
	}
	target.SetString(path)
	return nil
}
