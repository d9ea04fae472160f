package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
)

const marker = "MARKER the user said hello"

func openT(t *testing.T, path string, maxBytes int64, keep int) *Log {
	t.Helper()
	l, err := Open(path, maxBytes, keep)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestPath(t *testing.T) {
	tests := []struct {
		name, state, home, want string
	}{
		{"xdg", "/st", "/home/u", "/st/yazses/audit.jsonl"},
		{"unset", "", "/home/u", "/home/u/.local/state/yazses/audit.jsonl"},
		{"relative ignored", "rel/state", "/home/u", "/home/u/.local/state/yazses/audit.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.state)
			t.Setenv("HOME", tt.home)
			if got := Path(); got != tt.want {
				t.Errorf("Path() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "yazses")
	path := filepath.Join(dir, FileName)
	l := openT(t, path, 1<<20, 2)
	if err := l.Write(Event{Kind: "ask.spoken"}); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("folder mode %o, want 700", m)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode %o, want 600", m)
	}
}

func TestOpenTightensWiderModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "yazses")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // beat the umask
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	openT(t, path, 1<<20, 2)
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("folder mode %o, want 700", m)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode %o, want 600", m)
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, 1<<20, 2)
	if !errors.Is(err, ErrSymlink) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("Open on symlink: err = %v, want ErrSymlink", err)
	}
	// A dangling symlink must not be followed to create a file either.
	dangling := filepath.Join(dir, "gone")
	path2 := filepath.Join(dir, "audit2.jsonl")
	os.Symlink(dangling, path2)
	if _, err := Open(path2, 1<<20, 2); !errors.Is(err, ErrSymlink) {
		t.Fatalf("Open on dangling symlink: err = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(dangling); err == nil {
		t.Error("dangling symlink target was created")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("symlink target changed: %q", b)
	}
	// Read refuses it too.
	if _, err := Read(path, 10); !errors.Is(err, ErrSymlink) {
		t.Errorf("Read on symlink: err = %v, want ErrSymlink", err)
	}
}

func TestOpenInvalidArgs(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	for _, c := range []struct {
		max  int64
		keep int
	}{{0, 1}, {-1, 1}, {100, -1}} {
		if l, err := Open(p, c.max, c.keep); err == nil {
			l.Close()
			t.Errorf("Open(max=%d, keep=%d) succeeded", c.max, c.keep)
		}
	}
}

func TestWriteRefusesBadWords(t *testing.T) {
	ok := Event{Kind: "ask.refused", Reason: "budget_spent", Child: "yaz_gate", Backend: "espeak"}
	tests := []struct {
		name string
		mod  func(*Event)
	}{
		{"empty kind", func(e *Event) { e.Kind = "" }},
		{"kind space", func(e *Event) { e.Kind = "ask spoken" }},
		{"kind upper", func(e *Event) { e.Kind = "Ask.spoken" }},
		{"kind marker", func(e *Event) { e.Kind = marker }},
		{"kind leading digit", func(e *Event) { e.Kind = "1ask" }},
		{"kind too long", func(e *Event) { e.Kind = "a" + strings.Repeat("b", 64) }},
		{"kind newline", func(e *Event) { e.Kind = "ask\n" }},
		{"kind quote", func(e *Event) { e.Kind = `ask"x` }},
		{"reason marker", func(e *Event) { e.Reason = marker }},
		{"reason upper", func(e *Event) { e.Reason = "Timeout" }},
		{"reason space", func(e *Event) { e.Reason = "time out" }},
		{"reason unicode", func(e *Event) { e.Reason = "zaman_aşımı" }},
		{"child marker", func(e *Event) { e.Child = marker }},
		{"child hyphen", func(e *Event) { e.Child = "yaz-gate" }},
		{"backend marker", func(e *Event) { e.Backend = marker }},
		{"backend slash", func(e *Event) { e.Backend = "/usr/bin/espeak" }},
	}
	path := filepath.Join(t.TempDir(), FileName)
	l := openT(t, path, 1<<20, 2)
	if err := l.Write(ok); err != nil {
		t.Fatalf("valid event refused: %v", err)
	}
	before, _ := os.ReadFile(path)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.mod(&e)
			err := l.Write(e)
			if !errors.Is(err, ErrBadWord) {
				t.Fatalf("Write: err = %v, want ErrBadWord", err)
			}
			if strings.Contains(err.Error(), "MARKER") || strings.Contains(err.Error(), "hello") {
				t.Errorf("error leaks the refused value: %q", err)
			}
		})
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Errorf("refused events changed the file:\n%s", after)
	}
	if bytes.Contains(after, []byte("MARKER")) {
		t.Error("marker reached the file")
	}
}

func TestWriteLineFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l := openT(t, path, 1<<20, 2)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := l.Write(Event{Time: at, Kind: "ask.answered", Count: 7, Duration: 1500 * time.Millisecond, PeerPID: 42, PeerUID: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(Event{Kind: "dictation.typed"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), b)
	}
	want := `{"time":"2026-03-01T12:00:00Z","kind":"ask.answered","count":7,"duration_ms":1500,"peer_pid":42,"peer_uid":1000}`
	if lines[0] != want {
		t.Errorf("line 0\n got %s\nwant %s", lines[0], want)
	}
	var e Event
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	if time.Since(e.Time) > time.Minute || e.Time.IsZero() {
		t.Errorf("default time = %v, want about now", e.Time)
	}
}

func TestWriteAfterClose(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), FileName), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(Event{Kind: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// testEvent is a fixed-width event: every one encodes to lineLen bytes.
func testEvent(i int) Event {
	return Event{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Kind: "ask.spoken", Count: 100000 + i}
}

func lineLen(t *testing.T) int64 {
	b, err := json.Marshal(testEvent(0))
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b) + 1)
}

func TestRotation(t *testing.T) {
	tests := []struct {
		name     string
		maxLines int64 // maxBytes as a multiple of a line, plus slack
		slack    int64
		keep     int
		writes   int
	}{
		{"keep 3 exact", 4, 0, 3, 40},
		{"keep 3 slack", 4, 10, 3, 40},
		{"keep 1", 3, 5, 1, 20},
		{"keep 0", 3, 0, 0, 20},
		{"tiny max", 0, 1, 2, 10}, // every line is longer than maxBytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ll := lineLen(t)
			maxBytes := tt.maxLines*ll + tt.slack
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			l := openT(t, path, maxBytes, tt.keep)
			for i := range tt.writes {
				if err := l.Write(testEvent(i)); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != tt.keep+1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("files %v, want %d", names, tt.keep+1)
			}
			perFile := max(tt.maxLines, 1)
			for i := 0; i <= tt.keep; i++ {
				p := path
				if i > 0 {
					p = fmt.Sprintf("%s.%d", path, i)
				}
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("stat %s: %v", p, err)
				}
				if fi.Size() > max(maxBytes, ll) {
					t.Errorf("%s: %d bytes, cap %d (+ one line %d)", p, fi.Size(), maxBytes, ll)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %o", p, fi.Mode().Perm())
				}
				if i > 0 && fi.Size() != perFile*ll {
					t.Errorf("%s: %d bytes, want full file of %d lines", p, fi.Size(), perFile)
				}
			}
			// What remains is exactly the newest events, in order.
			got, err := Read(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(tt.writes)
			kept := min(n, perFile*int64(tt.keep)+(n-1)%perFile+1)
			if int64(len(got)) != kept {
				t.Fatalf("Read got %d events, want %d", len(got), kept)
			}
			for i, e := range got {
				if want := 100000 + tt.writes - int(kept) + i; e.Count != want {
					t.Errorf("event %d count %d, want %d", i, e.Count, want)
				}
			}
		})
	}
}

func TestConcurrentWritesWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	const goroutines, each = 8, 200
	// Big enough that nothing rotates away: every line must be found.
	l := openT(t, path, 1<<20, 2)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := l.Write(Event{Kind: "dictation.typed", PeerPID: g + 1, Count: i + 1, Duration: time.Duration(i) * time.Millisecond}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	testwait.Group(t, &wg, "the concurrent audit writers")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[[2]int]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Event
		d := json.NewDecoder(strings.NewReader(sc.Text()))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil || d.More() {
			t.Fatalf("not a whole line: %q (%v)", sc.Text(), err)
		}
		k := [2]int{e.PeerPID, e.Count}
		if seen[k] {
			t.Errorf("duplicate %v", k)
		}
		seen[k] = true
	}
	if len(seen) != goroutines*each {
		t.Errorf("got %d distinct lines, want %d", len(seen), goroutines*each)
	}
}

func TestConcurrentWritesWithRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	ll := lineLen(t)
	l := openT(t, path, 5*ll, 3)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 100 {
				if err := l.Write(testEvent(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	testwait.Group(t, &wg, "the concurrent audit writers")
	l.Close()
	for _, p := range []string{path, path + ".1", path + ".2", path + ".3"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) > 5*ll {
			t.Errorf("%s: %d bytes over cap %d", p, len(b), 5*ll)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if _, ok := parse([]byte(line)); !ok {
				t.Errorf("%s: torn line %q", p, line)
			}
		}
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Error("more than keep rotated files")
	}
}

func TestReadAcrossRotatedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	ll := lineLen(t)
	l := openT(t, path, 3*ll, 4)
	for i := range 10 { // files: .3 = 0-2, .2 = 3-5, .1 = 6-8, current = 9
		if err := l.Write(testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	counts := func(es []Event) []int {
		var c []int
		for _, e := range es {
			c = append(c, e.Count-100000)
		}
		return c
	}
	tests := []struct {
		max  int
		want []int
	}{
		{0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{-1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{100, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{10, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{4, []int{6, 7, 8, 9}},
		{1, []int{9}},
		{5, []int{5, 6, 7, 8, 9}},
	}
	for _, tt := range tests {
		got, err := Read(path, tt.max)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, counts(got)); diff != "" {
			t.Errorf("Read(max=%d) (-want +got):\n%s", tt.max, diff)
		}
	}
	got, _ := Read(path, 1)
	want := testEvent(9)
	if !got[0].Time.Equal(want.Time) || got[0].Kind != want.Kind {
		t.Errorf("round trip: got %+v, want %+v", got[0], want)
	}
}

func TestReadReportsMalformedAndText(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	lines := []string{
		`{"time":"2026-01-01T00:00:00Z","kind":"ask.spoken","duration_ms":250}`,
		`not json`,
		`{"time":"2026-01-01T00:00:01Z","kind":"` + marker + `"}`,
		`{"time":"2026-01-01T00:00:02Z","kind":"ask.answered","text":"` + marker + `"}`,
		`{"time":"2026-01-01T00:00:03Z","kind":"ask.answered","reason":"Hello World"}`,
		`{"time":"2026-01-01T00:00:04Z","kind":"ask.spoken"}{"kind":"x"}`,
		`{"time":"2026-01-01T00:00:05Z","kind":"ask.spoken","count":` + strings.Repeat("1", maxLine) + `}`,
		``,
		`{"time":"2026-01-01T00:00:06Z","kind":"ask.refused","reason":"budget_spent"}`,
		`{"time":"2026-01-01T00:00:07Z","kind":"ask.half`, // half-written last line
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each damaged line is reported where it was, as an audit.damaged
	// event that carries none of its content; blank lines are nothing.
	damaged := Event{Kind: KindDamaged, Count: 1}
	want := []Event{
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Kind: "ask.spoken", DurationMs: 250, Duration: 250 * time.Millisecond},
		damaged, damaged, damaged, damaged, damaged, damaged,
		{Time: time.Date(2026, 1, 1, 0, 0, 6, 0, time.UTC), Kind: "ask.refused", Reason: "budget_spent"},
		damaged,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
}

func TestReadMissing(t *testing.T) {
	got, err := Read(filepath.Join(t.TempDir(), "none", FileName), 10)
	if err != nil || len(got) != 0 {
		t.Errorf("Read missing = %v, %v; want empty, nil", got, err)
	}
}

// TestEventHasNoFreeText fails when a field that could carry text is added
// to Event. Strings are allowed only for the closed-vocabulary fields, and
// each of those must be checked by the word guard.
func TestEventHasNoFreeText(t *testing.T) {
	words := map[string]bool{"Kind": true, "Reason": true, "Child": true, "Backend": true}
	timeType := reflect.TypeFor[time.Time]()
	durType := reflect.TypeFor[time.Duration]()
	typ := reflect.TypeFor[Event]()
	var found []string
	for f := range typ.Fields() {
		switch k := f.Type.Kind(); {
		case f.Type == timeType, f.Type == durType:
		case k == reflect.String:
			if !words[f.Name] {
				t.Errorf("Event.%s is a free string field: audit events may not carry text (docs/design.md, invariant 10)", f.Name)
			}
			found = append(found, f.Name)
		case k >= reflect.Int && k <= reflect.Int64, k >= reflect.Uint && k <= reflect.Uint64, k == reflect.Bool:
		default:
			t.Errorf("Event.%s has type %s, which could carry text", f.Name, f.Type)
		}
	}
	if len(found) != len(words) {
		t.Errorf("string fields %v, want exactly %v", found, words)
	}
	// Each word field is guarded: setting it to text is refused.
	l := openT(t, filepath.Join(t.TempDir(), FileName), 1<<20, 1)
	for _, name := range found {
		e := Event{Kind: "ask.spoken"}
		reflect.ValueOf(&e).Elem().FieldByName(name).SetString(marker)
		if err := l.Write(e); !errors.Is(err, ErrBadWord) {
			t.Errorf("Event.%s = marker: Write err = %v, want ErrBadWord", name, err)
		}
		if _, ok := parse(mustJSON(t, e)); ok {
			t.Errorf("Event.%s = marker: Read would accept it", name)
		}
	}
}

func mustJSON(t *testing.T, e Event) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
