package wayland_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
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

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkInjectWayland types the same texts under a headless sway into
// foot: in-process (the wayland backend, its connection and virtual
// keyboard kept between runs, as in the daemon), with wtype, and pasted
// (in-process: sway offers data control; wl-paste and wl-copy save and
// restore the clipboard); and the focus check alone (sway's tree, through
// swaymsg). us/char is ns/op per character; wtype-us/char
// leaves out the fixed part: the start delay (-s) and the focus check,
// measured alone.
//
//	go test ./cmd/yaz-type/internal/wayland -run '^$' -bench InjectWayland -benchtime 5x
func BenchmarkInjectWayland(b *testing.B) {
	env := startSway(b)
	rec := startFoot(b, env)
	g := watchGrowth(b, rec.File)
	var focusCost time.Duration
	b.Run("focus", func(b *testing.B) {
		var ts []time.Duration
		for range b.N {
			t0 := time.Now()
			tg, err := wayland.SwayFocus(context.Background(), env)
			ts = append(ts, time.Since(t0))
			if err != nil || tg.Focus != FocusWindow {
				b.Fatalf("focus = %+v, %v", tg, err)
			}
		}
		focusCost = median(ts)
		b.ReportMetric(float64(focusCost.Nanoseconds()), "ns/op")
	})
	for _, text := range []string{benchText58, mixedText()} {
		n := len([]rune(text))
		for _, name := range []string{Wayland, Wtype, Clipboard} {
			b.Run(fmt.Sprintf("chars=%d/%s", n, name), func(b *testing.B) {
				own, err := New(name, Options{Environ: env})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(own.Close)
				var inj Injector = own
				if name == Wayland {
					// The daemon dials when it opens its Typer.
					r := wayland.NewRoute(Options{Environ: env})
					b.Cleanup(r.Close)
					if offers, _ := r.Offers(context.Background()); !offers {
						b.Fatal("sway offers no virtual keyboard")
					}
					inj = r.Wayland()
				}
				var arrivals []time.Duration
				for range b.N {
					before := g.size()
					arrived := make(chan time.Time, 1)
					t0 := time.Now()
					go func() { arrived <- g.wait(before+int64(len(text)), 60*time.Second) }()
					err := inj.Type(context.Background(), untrusted.Typed(text))
					at := <-arrived
					if err != nil {
						b.Fatalf("Type: %v", err)
					}
					if at.IsZero() {
						b.Fatal("the text never arrived")
					}
					if got := rec.Contents(b)[before:]; got != text {
						b.Fatalf("window received %q", got)
					}
					arrivals = append(arrivals, at.Sub(t0))
				}
				med := median(arrivals)
				b.ReportMetric(float64(med.Nanoseconds()), "ns/op")
				b.ReportMetric(float64(med.Microseconds())/float64(n), "us/char")
				if name == Wtype {
					fixed := inject.DefaultWtypeDelay + focusCost
					b.ReportMetric(float64((med-fixed).Microseconds())/float64(n), "wtype-us/char")
				}
			})
		}
	}
}

// mixedText is 500 characters of ASCII, accented Latin, Greek, CJK, an
// emoji and a right-to-left word: more distinct characters than the spare
// keycodes of a usual keyboard map hold, so it is typed in two chunks.
func mixedText() string {
	parts := []string{
		"Dictation at the speed of speech: naïve café, Grüße aus Köln, señor, façade, smørbrød, Ærø, déjà vu. ",
		"Greek: Καλημέρα κόσμε, ψυχή και λόγος. ",
		"CJK: 日本語のテキスト, 中文输入法. ",
		"Emoji 😀 and a right-to-left word: שלום. ",
	}
	s := strings.Join(parts, "")
	filler := "The quick brown fox jumps over the lazy dog; (1+2)*3 = 9, {ok} [yes] <no> @home #tag $5 %50 ^_^ ~/path|pipe\\back `tick` 'q' \"dq\"! ? "
	for utf8.RuneCountInString(s) < 500 {
		s += filler
	}
	r := []rune(s)
	return string(r[:500])
}
