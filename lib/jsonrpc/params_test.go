package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

type askLike struct {
	Question string `json:"question"`
	TimeoutS int    `json:"timeout_s,omitempty"`
}

type nestedLike struct {
	Name  string   `json:"name"`
	Inner *askLike `json:"inner"`
	List  []askLike
	Skip  string `json:"-"`
	//lint:ignore SA5008 "-," names the field "-" (encoding/json's rule), which the strict decoder must follow too
	Dash int `json:"-,"`
	embedded
}

type embedded struct {
	Extra bool `json:"extra"`
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   askLike
		ok     bool
	}{
		{"exact", `{"question":"Is it on?","timeout_s":5}`, askLike{"Is it on?", 5}, true},
		{"absent", ``, askLike{}, true},
		{"null", `null`, askLike{}, true},
		{"empty object", `{}`, askLike{}, true},
		{"spaces", " {\n\"question\" : \"a\" } ", askLike{Question: "a"}, true},
		{"escaped key", `{"quest\u0069on":"a"}`, askLike{Question: "a"}, true},
		{"surrogate pair", `{"question":"\ud83d\ude00"}`, askLike{Question: "😀"}, true},
		{"valid U+FFFD", `{"question":"\ufffd"}`, askLike{Question: "\ufffd"}, true},

		{"upper case key", `{"QUESTION":"a"}`, askLike{}, false},
		{"title case key", `{"Question":"a"}`, askLike{}, false},
		{"field name as key", `{"TimeoutS":3}`, askLike{}, false},
		{"two cases", `{"question":"a","Question":"b"}`, askLike{}, false},
		{"duplicate", `{"question":"a","question":"b"}`, askLike{}, false},
		{"escaped duplicate", `{"question":"a","\u0071uestion":"b"}`, askLike{}, false},
		{"unknown", `{"question":"a","voice":"x"}`, askLike{}, false},
		{"array", `["a"]`, askLike{}, false},
		{"wrong type", `{"question":1}`, askLike{}, false},
		{"invalid utf8", "{\"question\":\"a\xffb\"}", askLike{}, false},
		{"invalid utf8 key", "{\"question\xff\":\"a\"}", askLike{}, false},
		{"lone high surrogate", `{"question":"\ud800"}`, askLike{}, false},
		{"lone low surrogate", `{"question":"a\udc00b"}`, askLike{}, false},
		{"reversed pair", `{"question":"\ude00\ud83d"}`, askLike{}, false},
		{"trailing data", `{"question":"a"} {}`, askLike{}, false},
		{"not json", `{"question":`, askLike{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got askLike
			err := DecodeParams(json.RawMessage(tt.params), &got)
			if tt.ok {
				if err != nil {
					t.Fatalf("DecodeParams(%q) = %v, want nil", tt.params, err)
				}
				if got != tt.want {
					t.Errorf("DecodeParams(%q) gave %+v, want %+v", tt.params, got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeParams(%q) = nil (%+v), want an error", tt.params, got)
			}
			var rpcErr *Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != InvalidParams {
				t.Errorf("DecodeParams(%q) = %v, want an *Error with code %d", tt.params, err, InvalidParams)
			}
		})
	}
}

func TestDecodeParamsNested(t *testing.T) {
	good := `{"name":"n","inner":{"question":"q"},"List":[{"question":"a"},{"timeout_s":1}],"-":2,"extra":true}`
	var v nestedLike
	if err := DecodeParams(json.RawMessage(good), &v); err != nil {
		t.Fatalf("DecodeParams(%s) = %v", good, err)
	}
	want := nestedLike{Name: "n", Inner: &askLike{Question: "q"}, List: []askLike{{Question: "a"}, {TimeoutS: 1}}, Dash: 2, embedded: embedded{Extra: true}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("DecodeParams(%s) gave %+v, want %+v", good, v, want)
	}
	for _, bad := range []string{
		`{"name":"n","inner":{"QUESTION":"q"}}`,
		`{"list":[]}`,
		`{"List":[{"question":"a","question":"b"}]}`,
		`{"Skip":"x"}`,
		`{"Extra":true}`,
		`{"embedded":{"extra":true}}`,
	} {
		var v nestedLike
		if err := DecodeParams(json.RawMessage(bad), &v); err == nil {
			t.Errorf("DecodeParams(%s) = nil, want an error", bad)
		}
	}
	// A map or an interface value still refuses duplicate keys.
	var m map[string]any
	if err := DecodeParams(json.RawMessage(`{"a":1,"a":2}`), &m); err == nil {
		t.Errorf("DecodeParams into a map accepted a duplicate key")
	}
	var a any
	if err := DecodeParams(json.RawMessage(`{"a":{"b":1,"b":2}}`), &a); err == nil {
		t.Errorf("DecodeParams into any accepted a nested duplicate key")
	}
}

// FuzzDecodeParams: strict decoding never panics, and whatever it accepts
// is valid UTF-8 without duplicate names, whose every member name is
// exactly one of the struct's, and decodes the same with encoding/json.
func FuzzDecodeParams(f *testing.F) {
	for _, seed := range []string{
		`{"question":"Is it on?","timeout_s":5}`,
		`{"QUESTION":"a"}`,
		`{"question":"a","Question":"b"}`,
		`{"question":"\ud83d\ude00\u200b"}`,
		`{"question":"\ud800"}`,
		"{\"question\":\"\xff\"}",
		`null`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		var got askLike
		err := DecodeParams(params, &got)
		if err != nil {
			var rpcErr *Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != InvalidParams {
				t.Fatalf("DecodeParams(%q) = %v, want InvalidParams", params, err)
			}
			return
		}
		if !utf8.Valid(params) {
			t.Fatalf("DecodeParams accepted invalid UTF-8 %q", params)
		}
		if !utf8.ValidString(got.Question) || strings.ContainsRune(got.Question, utf8.RuneError) && !strings.Contains(string(params), `\ufffd`) && !strings.ContainsRune(string(params), utf8.RuneError) {
			t.Fatalf("DecodeParams(%q) made up a replacement character: %q", params, got.Question)
		}
		if trimmed := strings.TrimSpace(string(params)); trimmed == "" || trimmed == "null" {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(params))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("DecodeParams accepted %q, which is not an object", params)
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, _ := dec.Token()
			k, _ := tok.(string)
			if k != "question" && k != "timeout_s" || seen[k] {
				t.Fatalf("DecodeParams(%q) accepted the member %q (seen before: %v)", params, k, seen[k])
			}
			seen[k] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("DecodeParams accepted %q: %v", params, err)
			}
		}
		var plain askLike
		if err := json.Unmarshal(params, &plain); err != nil || plain != got {
			t.Fatalf("DecodeParams(%q) gave %+v; encoding/json gives %+v, %v", params, got, plain, err)
		}
	})
}
