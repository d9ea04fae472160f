package silero

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/vadspan"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report adds the CPU cost per second of audio: milliseconds of CPU, and
// the percentage of one core that works out to at real time.
func report(b *testing.B, cpu time.Duration, audioSamples int) {
	perSec := float64(cpu) / float64(b.N) / (float64(audioSamples) / sr)
	b.ReportMetric(perSec/1e6, "cpu-ms/audio-s")
	b.ReportMetric(100*perSec/1e9, "%core")
}

// speech60 is 60 s of jfk.wav end to end.
func speech60(b *testing.B) []float32 {
	one := jfk(b)
	var out []float32
	for len(out) < 60*sr {
		out = append(out, one...)
	}
	return out[:60*sr]
}

// halfQuiet is about two minutes of jfk.wav's 11 s with 10 s of quiet after
// each: digital silence, or a quiet room's noise floor.
func halfQuiet(b *testing.B, floorDB float64) []float32 {
	one := jfk(b)
	rng := rand.New(rand.NewPCG(1, 1))
	var out []float32
	for len(out) < 120*sr {
		out = append(out, one...)
		if floorDB == 0 {
			out = append(out, silence(10)...)
		} else {
			out = append(out, quantize(white(rng, 10, floorDB))...)
		}
	}
	return out
}

// BenchmarkDetector: the detector's CPU time per second of audio on one
// thread, in one shot and streamed in blocks of 10 ms, 32 ms (a window)
// and 1 s, and in one shot on two threads.
func BenchmarkDetector(b *testing.B) {
	audio := speech60(b)
	m := model(b)
	m2, err := Load(modelPath(b), Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer m2.Close()
	oneShot := func(m *Model) func(b *testing.B) {
		return func(b *testing.B) {
			m.Probs(context.Background(), audio[:sr]) // warm up
			b.ResetTimer()
			c := cpuTime()
			for range b.N {
				if _, err := m.Spans(context.Background(), audio, vadspan.DefaultParams()); err != nil {
					b.Fatal(err)
				}
			}
			report(b, cpuTime()-c, len(audio))
		}
	}
	b.Run("one-shot/threads=1", oneShot(m))
	b.Run("one-shot/threads=2", oneShot(m2))
	for _, block := range []int{160, 512, sr} {
		b.Run("stream/block="+strconv.Itoa(block), func(b *testing.B) {
			s, err := m.NewStream(vadspan.DefaultParams())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ResetTimer()
			c := cpuTime()
			for range b.N {
				s.Reset()
				for i := 0; i < len(audio); i += block {
					if _, err := s.Write(audio[i:min(i+block, len(audio))]); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, cpuTime()-c, len(audio))
		})
	}
}

// BenchmarkQuietSkip: what the pre-gate saves on a two-minute file that is
// about half quiet (digital silence, or a −70 dBFS noise floor), in one
// shot: CPU per second of audio without the gate and with it, and the
// share of windows it skipped.
func BenchmarkQuietSkip(b *testing.B) {
	for _, tc := range []struct {
		name    string
		floorDB float64
		gate    QuietSkip
	}{
		{"zeros/off", 0, QuietSkip{}},
		{"zeros/digital-silence", 0, DigitalSilence},
		{"floor-70dB/off", -70, QuietSkip{}},
		{"floor-70dB/level-60", -70, QuietSkip{Level: -60}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			audio := halfQuiet(b, tc.floorDB)
			m, err := Load(modelPath(b), Options{Skip: tc.gate})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s, err := m.NewStream(vadspan.DefaultParams())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ResetTimer()
			c := cpuTime()
			for range b.N {
				s.Reset()
				s.r.skipped = 0
				for i := 0; i < len(audio); i += 1600 {
					if _, err := s.Write(audio[i:min(i+1600, len(audio))]); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, cpuTime()-c, len(audio))
			b.ReportMetric(100*float64(s.Skipped())/float64((len(audio)+Window-1)/Window), "%skipped")
		})
	}
}

// BenchmarkWhisperCLIVAD: whisper-cli's own detector, side by side: the
// CPU whisper-cli --vad spends on 120 s of audio without speech (so it
// decodes nothing) less what it spends on 1 s of it, per second of audio.
// whisper-cli runs its detector on 4 threads (whisper.cpp's default
// context parameters; -t does not reach it); its logged "vad time" is
// reported too.
func BenchmarkWhisperCLIVAD(b *testing.B) {
	cli, whisperModel, vadModel := whisperCLI(b), miniWhisper(b), modelPath(b)
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(2, 2))
	long, short := filepath.Join(dir, "noise120.wav"), filepath.Join(dir, "noise1.wav")
	noise := quantize(pink(rng, 120, -50))
	writeWAV(b, long, noise)
	writeWAV(b, short, noise[:sr])
	vadTime := regexp.MustCompile(`vad time = ([0-9.]+) ms`)
	run := func(path string) (time.Duration, float64) {
		cmd := exec.Command(cli, "-m", whisperModel, "-f", path, "-t", "1", "--vad", "-vm", vadModel)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("whisper-cli: %v\n%s", err, out)
		}
		ms := 0.0
		if m := vadTime.FindSubmatch(out); m != nil {
			ms, _ = strconv.ParseFloat(string(m[1]), 64)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), ms
	}
	var cpu time.Duration
	var wall float64
	for range b.N {
		cl, wl := run(long)
		cs, ws := run(short)
		cpu += cl - cs
		wall += wl - ws
	}
	report(b, cpu, len(noise)-sr)
	b.ReportMetric(wall/float64(b.N)/119, "vad-wall-ms/audio-s")
}
