package x11_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/untrusted"
)

// benchText58 is the 58 characters BenchmarkDictationLatency types for a
// short utterance of jfk.wav: its first words.
const benchText58 = "And so, my fellow Americans, ask not what your country can"

// growth reports, without polling, when a file reaches a size.
type growth struct {
	f    *os.File // inotify
	path string
}

func watchGrowth(tb testing.TB, path string) *growth {
	tb.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		tb.Fatal(err)
	}
	g := &growth{f: os.NewFile(uintptr(fd), "inotify"), path: path}
	tb.Cleanup(func() { g.f.Close() })
	return g
}

func (g *growth) size() int64 {
	fi, err := os.Stat(g.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// wait returns when the file has reached size bytes (the time it did, as
// seen by an inotify event), or the zero time after limit.
func (g *growth) wait(size int64, limit time.Duration) time.Time {
	buf := make([]byte, 4096)
	_ = g.f.SetReadDeadline(time.Now().Add(limit))
	for {
		if g.size() >= size {
			return time.Now()
		}
		if _, err := g.f.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return time.Time{}
			}
		}
	}
}

// BenchmarkInject types the 58 characters of BenchmarkDictationLatency,
// the 500 of the mixed text (paste only: more characters than the spare
// keycodes hold) and 2360 of plain text (x11 and paste only) into an xterm under Xvfb, side by side: the
// in-process client, the xdotool chain and the clipboard's paste (xclip
// and xdotool's key chord, the clipboard restored after). ns/op is from
// the call to the last byte in the terminal's file; call-ms is the whole
// call (the paste's includes the wait before the clipboard is restored);
// us/char is ns/op per character. The in-process client's keyboard map is
// restored (Close) after each run; that is not timed.
//
//	go test ./cmd/yaz-type/internal/x11 -run '^$' -bench Inject -benchtime 10x
func BenchmarkInject(b *testing.B) {
	env := startX(b)
	rec := startRecorder(b, env)
	rec.Focus(b)
	g := watchGrowth(b, rec.File)
	texts := []string{benchText58, mixedText(), strings.Repeat(benchText58+" ", 40)}
	for _, text := range texts {
		n := len([]rune(text))
		for _, name := range []string{X11, Xdotool, Clipboard} {
			if name == Xdotool && n > 500 {
				continue // half a minute a run
			}
			if name != Clipboard && text == texts[1] {
				continue // more characters than the spare keycodes hold: pasted
			}
			b.Run(fmt.Sprintf("chars=%d/%s", n, name), func(b *testing.B) {
				inj, err := New(name, Options{Environ: env})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(inj.Close)
				var calls, arrivals []time.Duration
				b.ResetTimer()
				b.StopTimer()
				for range b.N {
					before := g.size()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					arrived := make(chan time.Time, 1)
					b.StartTimer()
					t0 := time.Now()
					// The text can arrive before the call returns (the paste
					// waits before it restores the clipboard).
					go func() { arrived <- g.wait(before+int64(len(text)), 30*time.Second) }()
					err := inj.Type(ctx, untrusted.Typed(text))
					call := time.Since(t0)
					at := <-arrived
					b.StopTimer()
					cancel()
					if err != nil {
						b.Fatalf("Type: %v", err)
					}
					if at.IsZero() {
						b.Fatal("the text never arrived")
					}
					inj.Close()
					got := rec.Contents(b)
					if got[before:] != text {
						b.Fatalf("window received %q", got[before:])
					}
					calls = append(calls, call)
					arrivals = append(arrivals, at.Sub(t0))
				}
				med := median(arrivals)
				b.ReportMetric(float64(med.Nanoseconds()), "ns/op")
				b.ReportMetric(float64(median(calls).Microseconds())/1000, "call-ms")
				b.ReportMetric(float64(med.Microseconds())/float64(n), "us/char")
			})
		}
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
