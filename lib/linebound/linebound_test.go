package linebound

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// res is one ReadLine result, as text.
type res struct {
	Line  string
	Nil   bool // the slice was nil (an empty line is not)
	Err   string
	NoEnd bool // Unterminated() after it
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readAll calls ReadLine until io.EOF (or ErrTooLong under Fail), at
// most limit times.
func readAll(t *testing.T, r *Reader, o Options, limit int) []res {
	t.Helper()
	var got []res
	for range limit {
		b, err := r.ReadLine()
		got = append(got, res{string(b), b == nil, errText(err), r.Unterminated()})
		if err == io.EOF || o.Long == Fail && err == ErrTooLong {
			// Either is final.
			if b, again := r.ReadLine(); b != nil || again != err {
				t.Fatalf("ReadLine after %v = %q, %v; want nil, the same", err, b, again)
			}
			return got
		}
	}
	t.Fatalf("no io.EOF after %d calls: %v", limit, got)
	return nil
}

// model is the contract, written the plain way: split the whole input at
// each "\n" and judge each piece by itself.
func model(in string, o Options) []res {
	var out []res
	tooLong := errText(ErrTooLong)
	pieces := strings.Split(in, "\n")
	last := pieces[len(pieces)-1]
	for _, p := range pieces[:len(pieces)-1] {
		if o.CRLF {
			p = strings.TrimSuffix(p, "\r")
		}
		switch {
		case len(p) <= o.Max:
			out = append(out, res{Line: p})
		case o.Long == Fail:
			return append(out, res{Nil: true, Err: tooLong})
		case o.Long == Skip:
			out = append(out, res{Nil: true, Err: tooLong})
		case o.Long == Truncate:
			out = append(out, res{Line: p[:o.Max], Err: tooLong})
		}
	}
	eof := res{Nil: true, Err: io.EOF.Error()}
	if last == "" {
		return append(out, eof)
	}
	if o.CRLF {
		last = strings.TrimSuffix(last, "\r")
	}
	switch {
	case len(last) > o.Max && o.Long == Fail:
		return append(out, res{Nil: true, Err: tooLong})
	case len(last) > o.Max && o.Long == Truncate:
		return append(out, res{Line: last[:o.Max], Err: tooLong}, eof)
	case o.Last == DropLast:
		return append(out, res{Nil: true, Err: errText(ErrUnterminated)}, eof)
	case len(last) > o.Max:
		return append(out, res{Nil: true, Err: tooLong}, eof)
	default:
		return append(out, res{Line: last, NoEnd: true}, eof)
	}
}

// readers wrap the input the ways a pipe or socket delivers it.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"EOF with data", iotest.DataErrReader},
}

// TestSweep: lines of every length around the bound (Max-1, Max, Max+1,
// much longer) and around the underlying buffer's size, each followed by
// a short line (the reader goes on, or not), terminated or last, with LF
// or CRLF, under every choice of Long, Last and CRLF, through readers
// that deliver a byte at a time, half, or the end with the data, agree
// with the model. A byte at a time is swept on the bounds up to 100,
// whose lines cross the edges of the smallest buffer (16 bytes) at every
// offset; the bounds around 64 KiB cross the largest in halves.
func TestSweep(t *testing.T) {
	for _, m := range []int{0, 1, 5, 14, 15, 16, 17, 100, maxBuffer - 2, maxBuffer + 3} {
		size := min(max(m+2, 16), maxBuffer) // NewReader's buffer
		lengths := map[int]bool{}
		for _, n := range []int{0, 1, m - 1, m, m + 1, m + 2, min(3*m+7, 2*size+3), size - 1, size, size + 1, 2*size + 1} {
			if n >= 0 {
				lengths[n] = true
			}
		}
		for n := range lengths {
			body := strings.Repeat("x", n)
			inputs := []string{
				body + "\n" + "ok\n",
				body + "\r\n" + "ok\r\n",
				"ok\n" + body,
				"ok\n" + body + "\r",
				body + "\r" + body + "\n",
				"\n\n" + body + "\n\n",
			}
			for _, in := range inputs {
				for _, long := range []Long{Fail, Skip, Truncate} {
					for _, last := range []Last{DropLast, KeepLast} {
						for _, crlf := range []bool{false, true} {
							o := Options{Max: m, Long: long, Last: last, CRLF: crlf}
							want := model(in, o)
							for _, rd := range readers {
								if m > 100 && rd.name == "one byte" {
									continue // the small bounds sweep the buffer's edges a byte at a time
								}
								r := NewReader(rd.wrap(strings.NewReader(in)), o)
								got := readAll(t, r, o, len(in)+5)
								if diff := cmp.Diff(want, got); diff != "" {
									t.Fatalf("max %d, line of %d, %.30q, %+v, %s reader (-want +got):\n%s",
										m, n, in, o, rd.name, diff)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestTable: the cases a reader of this package thinks of first, spelled
// out.
func TestTable(t *testing.T) {
	skip := Options{Max: 3, Long: Skip, Last: KeepLast, CRLF: true}
	tooLong := errText(ErrTooLong)
	eof := res{Nil: true, Err: "EOF"}
	for _, tc := range []struct {
		name string
		in   string
		o    Options
		want []res
	}{
		{"empty input", "", skip, []res{eof}},
		{"empty lines are lines", "\n\r\n", skip, []res{{}, {}, eof}},
		{"max-1, max, max+1", "ab\nabc\nabcd\nz\n", skip, []res{{Line: "ab"}, {Line: "abc"}, {Nil: true, Err: tooLong}, {Line: "z"}, eof}},
		{"CRLF: the \\r is not counted", "abc\r\n", skip, []res{{Line: "abc"}, eof}},
		{"CRLF: a \\r elsewhere is data", "a\rb\r\n", skip, []res{{Line: "a\rb"}, eof}},
		{"without CRLF the \\r is data", "abc\r\n", Options{Max: 3, Long: Skip}, []res{{Nil: true, Err: tooLong}, eof}},
		{"last line kept", "a\nbc", skip, []res{{Line: "a"}, {Line: "bc", NoEnd: true}, eof}},
		{"last line too long", "a\nbcde", skip, []res{{Line: "a"}, {Nil: true, Err: tooLong}, eof}},
		{"last line dropped", "a\nbc", Options{Max: 3}, []res{{Line: "a"}, {Nil: true, Err: errText(ErrUnterminated)}, eof}},
		{"fail stops", "abcd\nz\n", Options{Max: 3}, []res{{Nil: true, Err: tooLong}}},
		{"truncate", "abcdef\nz\n", Options{Max: 3, Long: Truncate}, []res{{Line: "abc", Err: tooLong}, {Line: "z"}, eof}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in), tc.o)
			var got []res
			for range len(tc.want) {
				b, err := r.ReadLine()
				got = append(got, res{string(b), b == nil, errText(err), r.Unterminated()})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadLine of %q with %+v (-want +got):\n%s", tc.in, tc.o, diff)
			}
		})
	}
}

func TestErrUnterminated(t *testing.T) {
	for _, target := range []error{io.EOF, io.ErrUnexpectedEOF} {
		if !errors.Is(ErrUnterminated, target) {
			t.Errorf("errors.Is(ErrUnterminated, %v) = false", target)
		}
		if wrapped := fmt.Errorf("read: %w", ErrUnterminated); !errors.Is(wrapped, target) {
			t.Errorf("errors.Is(wrapped ErrUnterminated, %v) = false", target)
		}
	}
	if errors.Is(ErrUnterminated, ErrTooLong) {
		t.Error("ErrUnterminated is ErrTooLong")
	}
}

// script is a reader that plays its parts, one per Read: a string is
// data, an error is returned as is. Reading past the end fails the test:
// the end is read once (a terminal's ^D is not repeated).
type script struct {
	t     *testing.T
	parts []any
	read  int // bytes handed out
}

func (s *script) Read(p []byte) (int, error) {
	if len(s.parts) == 0 {
		s.t.Error("Read after the end")
		return 0, io.EOF
	}
	part := s.parts[0]
	s.parts = s.parts[1:]
	switch part := part.(type) {
	case string:
		if len(part) > len(p) {
			s.parts = append([]any{part[len(p):]}, s.parts...)
			part = part[:len(p)]
		}
		s.read += len(part)
		return copy(p, part), nil
	case error:
		return 0, part
	}
	panic("bad part")
}

var errDeadline = errors.New("deadline")

// TestReadErrorKeepsLine: a read error in the middle of a line (a
// deadline) is returned and the line goes on in the next call, whole,
// never from its middle; one in the middle of a long line being skipped
// keeps skipping it.
func TestReadErrorKeepsLine(t *testing.T) {
	for _, o := range []Options{
		{Max: 20, Long: Skip, Last: KeepLast},
		{Max: 20},
		{Max: 20, Long: Truncate, Last: KeepLast},
	} {
		long := strings.Repeat("L", 50)
		s := &script{t: t, parts: []any{`{"ok":tr`, errDeadline, "ue}\n" + long[:30], errDeadline, long[30:] + "\nnext\n", io.EOF}}
		r := NewReader(s, o)
		steps := []res{
			{Nil: true, Err: errDeadline.Error()},
			{Line: `{"ok":true}`},
		}
		switch o.Long {
		case Skip:
			steps = append(steps, res{Nil: true, Err: errDeadline.Error()}, res{Nil: true, Err: errText(ErrTooLong)}, res{Line: "next"})
		case Fail:
			steps = append(steps, res{Nil: true, Err: errText(ErrTooLong)}, res{Nil: true, Err: errText(ErrTooLong)})
		case Truncate:
			steps = append(steps, res{Line: long[:20], Err: errText(ErrTooLong)}, res{Nil: true, Err: errDeadline.Error()}, res{Line: "next"})
		}
		var got []res
		for range steps {
			b, err := r.ReadLine()
			got = append(got, res{string(b), b == nil, errText(err), r.Unterminated()})
		}
		if diff := cmp.Diff(steps, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", o, diff)
		}
	}
}

// TestFailReadsNoFurther: under Fail the rest of a long line is never
// read, and the reader stays failed.
func TestFailReadsNoFurther(t *testing.T) {
	const max = 1000
	huge := strings.Repeat("h", 100*max)
	s := &script{t: t, parts: []any{"short\n" + huge + "\n"}}
	r := NewReader(s, Options{Max: max})
	if b, err := r.ReadLine(); err != nil || string(b) != "short" {
		t.Fatalf("ReadLine() = %q, %v; want short", b, err)
	}
	for range 3 {
		if b, err := r.ReadLine(); b != nil || !errors.Is(err, ErrTooLong) {
			t.Fatalf("ReadLine() = %.20q, %v; want ErrTooLong", b, err)
		}
	}
	// What was read: the short line, the buffer that found the long one
	// too long, nothing after.
	if limit := len("short\n") + max + 2; s.read > limit {
		t.Errorf("read %d bytes of the input, want at most %d", s.read, limit)
	}
}

// TestEndReadOnce: the end of the input is read once, in every way a
// line can meet it; the reader keeps answering io.EOF by itself.
func TestEndReadOnce(t *testing.T) {
	for _, in := range []string{"", "a\n", "abc", strings.Repeat("z", 12), strings.Repeat("x", 40), strings.Repeat("y", 40) + "\n"} {
		for _, o := range []Options{
			{Max: 10}, {Max: 10, Last: KeepLast},
			{Max: 10, Long: Skip}, {Max: 10, Long: Skip, Last: KeepLast},
			{Max: 10, Long: Truncate}, {Max: 10, Long: Truncate, Last: KeepLast},
		} {
			s := &script{t: t, parts: []any{in, io.EOF}}
			r := NewReader(s, o)
			readAll(t, r, o, 5)
		}
	}
}

// TestLongLineLetGo: the buffer a line longer than the underlying one
// grew is not kept for the lines after it.
func TestLongLineLetGo(t *testing.T) {
	big := strings.Repeat("b", 4*maxBuffer)
	r := NewReader(strings.NewReader(big+"\nsmall\n"), Options{Max: 8 * maxBuffer})
	if b, err := r.ReadLine(); err != nil || len(b) != len(big) {
		t.Fatalf("ReadLine() = %d bytes, %v; want %d", len(b), err, len(big))
	}
	if b, err := r.ReadLine(); err != nil || string(b) != "small" {
		t.Fatalf("ReadLine() = %q, %v; want small", b, err)
	}
	if cap(r.buf) > maxBuffer {
		t.Errorf("line buffer of %d bytes kept after the long line", cap(r.buf))
	}
}

// TestHasLine: true exactly when a newline is buffered.
func TestHasLine(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	r := NewReader(pr, Options{Max: 10})
	go func() {
		pw.Write([]byte("a\nb\nc"))
		pw.Close()
	}()
	if b, err := r.ReadLine(); err != nil || string(b) != "a" {
		t.Fatalf("ReadLine() = %q, %v", b, err)
	}
	if !r.HasLine() {
		t.Error(`HasLine() = false with "b\n" buffered`)
	}
	if b, err := r.ReadLine(); err != nil || string(b) != "b" {
		t.Fatalf("ReadLine() = %q, %v", b, err)
	}
	if r.HasLine() {
		t.Error(`HasLine() = true with only "c" buffered`)
	}
}

func TestNegativeMax(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewReader with Max -1 did not panic")
		}
	}()
	NewReader(strings.NewReader(""), Options{Max: -1})
}
