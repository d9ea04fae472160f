package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/safesocket"
)

// memoryRows measures what transcribing 10 minutes of audio costs in
// memory at 16, 48 and 192 kHz (16-bit mono): the peak resident set
// (VmHWM) of the daemon itself and of its decoder child, each file
// through `transcribe` on a fresh daemon, and of `yaz-decode FILE` on its
// own. The decoder is the real yaz-decode on a generated mini model (the
// memory of whisper's own buffers depends on the model, not on the file);
// the audio is jfk.wav looped, resampled up for the higher rates.
func memoryRows(bin, work string, speech []int16) error {
	model := filepath.Join(work, "ggml-mini-random.bin")
	if _, err := os.Stat(model); err != nil {
		if err := testmodel.WriteFile(model, testmodel.Mini, 1); err != nil {
			return err
		}
	}
	const seconds = 600
	fmt.Printf("\n| 10 min of audio, 16-bit mono | file | daemon peak RSS | its decoder's peak RSS | yaz-decode FILE peak RSS |\n|---|---|---|---|---|\n")
	for _, rate := range []int{16000, 48000, 192000} {
		path := filepath.Join(work, fmt.Sprintf("jfk-10min-%dhz.wav", rate))
		if err := writeLooped(path, speech, seconds, rate); err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		daemonKB, decoderKB, err := daemonTranscribeRSS(bin, work, model, path)
		if err != nil {
			return fmt.Errorf("%d Hz through the daemon: %w", rate, err)
		}
		localKB, err := localDecodeRSS(filepath.Join(bin, "yaz-decode"), model, path)
		if err != nil {
			return fmt.Errorf("%d Hz with yaz-decode: %w", rate, err)
		}
		fmt.Printf("| %d kHz | %d MB | %.1f MB | %.1f MB | %.1f MB |\n", rate/1000, st.Size()>>20,
			float64(daemonKB)/1024, float64(decoderKB)/1024, float64(localKB)/1024)
	}
	return nil
}

// writeLooped writes seconds of speech (16 kHz), looped, as a WAV file at
// rate, resampling block by block so that no step holds the whole file.
func writeLooped(path string, speech []int16, seconds, rate int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	frames := int64(seconds) * int64(rate)
	if _, err := w.Write(wavHeader(rate, frames*2)); err != nil {
		return err
	}
	rs := pcm.NewResampler(pcm.SampleRate, rate)
	in := pcm.ToFloat32(nil, speech)
	var out []float32
	written := int64(0)
	emit := func(block []float32) error {
		s := pcm.FromFloat32(nil, block[:min(int64(len(block)), frames-written)])
		written += int64(len(s))
		_, err := w.Write(pcm.Encode(nil, s))
		return err
	}
	for written < frames {
		out = rs.Write(out[:0], in)
		if err := emit(out); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// wavHeader is a 16-bit mono PCM WAV header at rate.
func wavHeader(rate int, dataBytes int64) []byte {
	h := pcm.WAVHeader(dataBytes) // 16 kHz; the rate fields follow
	le := func(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	le(h[24:28], uint32(rate))
	le(h[28:32], uint32(rate*2))
	return h
}

// daemonTranscribeRSS starts yazsesd with the real decoder, transcribes
// path through its socket and returns the peak resident set of the daemon
// and of its decoder child, in KiB.
func daemonTranscribeRSS(bin, work, model, path string) (daemonKB, decoderKB int64, err error) {
	dir, err := os.MkdirTemp(work, "daemon-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		return 0, 0, err
	}
	cfgDir := filepath.Join(dir, "config", "yazses")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return 0, 0, err
	}
	b := func(name string) string { return strconv.Quote(filepath.Join(bin, name)) }
	cfg := fmt.Sprintf("[decode]\nmodel = %q\nthreads = 2\n[children]\ndecode = [%s, \"serve\"]\ngate = [%s]\n"+
		"speak = [%s, \"--serve\", \"--backend\", \"null\"]\ncapture = [%s, \"--backend\", \"null\"]\n",
		model, b("yaz-decode"), b("yaz-gate"), b("yaz-speak"), b("yaz-capture"))
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(filepath.Join(bin, "yazsesd"), "--log-level", "error", "run")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_RUNTIME_DIR="+run,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, decoderPID, err := dialReady(ctx, filepath.Join(run, safesocket.DirName))
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if _, err := c.Transcribe(ctx, path); err != nil {
		return 0, 0, err
	}
	if daemonKB, err = vmHWM(cmd.Process.Pid); err != nil {
		return 0, 0, err
	}
	decoderKB, err = vmHWM(decoderPID)
	return daemonKB, decoderKB, err
}

// dialReady waits until the daemon's decoder runs and returns a client
// and the decoder's pid.
func dialReady(ctx context.Context, dir string) (*daemonapi.Client, int, error) {
	for {
		if conn, err := safesocket.Dial(ctx, dir); err == nil {
			c := daemonapi.NewClient(conn)
			st, err := c.Status(ctx)
			if err == nil {
				for _, ch := range st.Children {
					if ch.Name == "decode" && ch.State == "running" {
						return c, ch.PID, nil
					}
				}
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("the daemon's decoder did not come up: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// localDecodeRSS runs `yaz-decode FILE` and returns its peak resident set
// in KiB (from wait4).
func localDecodeRSS(yaz, model, path string) (int64, error) {
	cmd := exec.Command(yaz, "-m", model, "-t", "2", "--log-level", "error", path)
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v\n%s", err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, fmt.Errorf("no rusage")
	}
	return ru.Maxrss, nil
}

// vmHWM is a process's peak resident set in KiB.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}
