package speaker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/yazses/yazses/lib/linebound"
)

// Line is one line of input, without its line ending.
type Line struct {
	Data []byte
	// TooLong is set, with Data empty, for a line longer than the reader's
	// limit; the line was read to its end and dropped.
	TooLong bool
}

// Lines reads r line by line in a goroutine of its own and sends each line on
// the returned channel, so that a blocked read never delays a cancel. Lines end
// at "\n"; a trailing "\r" is removed; a last line without "\n" counts. The
// channel is closed at EOF or on a read error, which is then returned by the
// error function (nil at EOF). When ctx is cancelled the goroutine stops at
// its next line; a read that blocks forever keeps it until r is closed.
func Lines(ctx context.Context, r io.Reader, max int) (<-chan Line, func() error) {
	ch := make(chan Line)
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		lines := linebound.NewReader(r, linebound.Options{Max: max, Long: linebound.Skip, Last: linebound.KeepLast, CRLF: true})
		for {
			b, err := lines.ReadLine()
			var l Line
			switch {
			case errors.Is(err, linebound.ErrTooLong):
				l.TooLong = true
			case errors.Is(err, io.EOF):
				return
			case err != nil:
				readErr = fmt.Errorf("read stdin: %w", err)
				return
			default:
				l.Data = bytes.Clone(b)
			}
			select {
			case ch <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, func() error {
		<-done
		return readErr
	}
}
