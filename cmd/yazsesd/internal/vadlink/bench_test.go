package vadlink

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
)

// BenchmarkThroughput: jfk.wav (11 s) through a child per op, in 20 ms
// blocks as a microphone delivers them, to the Ended event. Reports the
// child's CPU per second of audio (user+system, from its rusage) next to
// the wall time.
func BenchmarkThroughput(b *testing.B) {
	speech := jfk(b)
	cmd := exec.Command(yazDecode, "--vad-stream", "--vad-model", sileroModel(b))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	l := New(context.Background(), in, out)
	block := pcm.Samples(20 * time.Millisecond)
	b.ResetTimer()
	for range b.N {
		u, err := l.Start(vadspan.DefaultParams())
		if err != nil {
			b.Fatal(err)
		}
		for s := speech; len(s) > 0; s = s[min(block, len(s)):] {
			if err := u.Feed(s[:min(block, len(s))]); err != nil {
				b.Fatal(err)
			}
		}
		u.End()
		for range u.Events() {
		}
	}
	b.StopTimer()
	l.Close()
	cmd.Wait()
	audio := float64(b.N) * pcm.Duration(len(speech)).Seconds()
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b.ReportMetric(float64(cpu.Milliseconds())/audio, "child-cpu-ms/audio-s")
}

// BenchmarkAnswer: the time from feeding one 32 ms window to its
// probability being in State (Wait), the delay a decision at a moment
// (the tail at release) waits for.
func BenchmarkAnswer(b *testing.B) {
	speech := jfk(b)
	cmd := exec.Command(yazDecode, "--vad-stream", "--vad-model", sileroModel(b))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	l := New(context.Background(), in, out)
	defer l.Close()
	u, err := l.Start(vadspan.Params{})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range u.Events() {
		}
	}()
	ctx := context.Background()
	pos := int64(0)
	b.ResetTimer()
	for i := range b.N {
		off := (i * vadspan.Window) % (len(speech) - vadspan.Window)
		u.Feed(speech[off : off+vadspan.Window])
		pos += vadspan.Window
		if _, err := u.Wait(ctx, pos); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnergy: jfk.wav (11 s) through a use of a new energy Link
// per op, in 20 ms blocks as a microphone delivers them, to the Ended
// event.
func BenchmarkEnergy(b *testing.B) {
	speech := jfk(b)
	block := pcm.Samples(20 * time.Millisecond)
	b.ReportAllocs()
	for range b.N {
		l := NewEnergy(context.Background())
		u, err := l.Start(vadspan.DefaultParams())
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for s := speech; len(s) > 0; s = s[min(block, len(s)):] {
				u.Feed(s[:min(block, len(s))])
			}
			u.End()
		}()
		for range u.Events() {
		}
		l.Close()
	}
}
