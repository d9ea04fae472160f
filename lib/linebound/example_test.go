package linebound_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/yazses/yazses/lib/linebound"
)

// A protocol that answers a long request and goes on, and ignores a last
// request cut short by the peer's close.
func Example() {
	in := "status\r\n" + strings.Repeat("x", 20) + "\nreserve\nrel"
	lines := linebound.NewReader(strings.NewReader(in), linebound.Options{Max: 10, Long: linebound.Skip, CRLF: true})
	for {
		line, err := lines.ReadLine()
		switch {
		case errors.Is(err, linebound.ErrTooLong):
			fmt.Println("bad request")
		case errors.Is(err, io.EOF):
			fmt.Printf("end (%v)\n", err)
			return
		case err != nil:
			fmt.Println("read:", err)
			return
		default:
			fmt.Printf("request %q\n", line)
		}
	}
	// Output:
	// request "status"
	// bad request
	// request "reserve"
	// end (unexpected EOF: last line without a newline)
}

// A log that keeps the start of a long line, flagged, and the last line
// of a child that died mid-line.
func Example_truncate() {
	in := "short\n" + strings.Repeat("y", 20) + "\nthe end"
	lines := linebound.NewReader(strings.NewReader(in), linebound.Options{Max: 8, Long: linebound.Truncate, Last: linebound.KeepLast})
	for {
		line, err := lines.ReadLine()
		cut := errors.Is(err, linebound.ErrTooLong)
		if err != nil && !cut {
			return
		}
		fmt.Printf("%q cut=%v unterminated=%v\n", line, cut, lines.Unterminated())
	}
	// Output:
	// "short" cut=false unterminated=false
	// "yyyyyyyy" cut=true unterminated=false
	// "the end" cut=false unterminated=true
}
