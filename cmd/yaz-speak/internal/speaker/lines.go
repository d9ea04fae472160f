package speaker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			l, err := readLine(br, max)
			if l != nil {
				select {
				case ch <- *l:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = fmt.Errorf("read stdin: %w", err)
				}
				return
			}
		}
	}()
	return ch, func() error {
		<-done
		return readErr
	}
}

// readLine returns the next line, or nil with io.EOF at the end.
func readLine(br *bufio.Reader, max int) (*Line, error) {
	var buf []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+2 { // room for "\r\n"
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (len(buf) > 0 || tooLong) {
			err = nil // give the last line first; EOF comes on the next call
		}
		if err != nil {
			return nil, err
		}
		if tooLong {
			return &Line{TooLong: true}, nil
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if len(buf) > max {
			return &Line{TooLong: true}, nil
		}
		return &Line{Data: buf}, nil
	}
}
