package config

import (
	"reflect"
	"strings"
)

// restartOnly are the keys (or whole tables) a running daemon reads only
// when it starts: they shape its children or its input devices. Everything
// else is applied by a reload (SIGHUP). docs/config.md lists the same.
var restartOnly = []string{
	"decode",
	"vad", // goes to the decoder at its start
	"speak",
	"capture",
	"hotkey",
	"children",
	"dictation.prompt", // goes to the decoder at its start
}

// NeedsRestart returns the dotted keys whose value differs between old and
// new and that take effect only when the daemon restarts, in the order of
// Config's fields. A daemon reloading its file applies the rest and names
// these in its log.
func NeedsRestart(old, new Config) []string {
	var keys []string
	for _, k := range leafKeys(reflect.TypeOf(Config{}), "") {
		if !RestartOnly(k.name) {
			continue
		}
		a := reflect.ValueOf(old).FieldByIndex(k.index).Interface()
		b := reflect.ValueOf(new).FieldByIndex(k.index).Interface()
		if !reflect.DeepEqual(a, b) {
			keys = append(keys, k.name)
		}
	}
	return keys
}

// RestartOnly reports whether a dotted key ("decode.model") takes effect
// only when the daemon restarts.
func RestartOnly(key string) bool {
	for _, p := range restartOnly {
		if key == p || strings.HasPrefix(key, p+".") || strings.HasPrefix(key, p+"[") {
			return true
		}
	}
	return false
}

// leafKey is one key of Config that holds a value (not a table).
type leafKey struct {
	name  string
	index []int
}

// leafKeys lists the value keys of a struct type, in field order. An array
// of tables is one key.
func leafKeys(t reflect.Type, prefix string) []leafKey {
	var out []leafKey
	for i := range t.NumField() {
		f := t.Field(i)
		name := joinKey(prefix, f.Tag.Get("toml"))
		if f.Type.Kind() == reflect.Struct {
			for _, k := range leafKeys(f.Type, name) {
				out = append(out, leafKey{k.name, append([]int{i}, k.index...)})
			}
			continue
		}
		out = append(out, leafKey{name, []int{i}})
	}
	return out
}

// Keys lists every key of the configuration in dotted form
// ("budget.ask_human_per_hour"), in the order of DefaultTOML.
func Keys() []string {
	ks := leafKeys(reflect.TypeOf(Config{}), "")
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.name
	}
	return out
}
