package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/pcm"
)

// vadModelPath is the Silero VAD model the file rows use: the one given,
// else the user's (yaz-fetch-model silero-v5.1.2), else the test model in
// ../shared/models next to the source tree; "" when none is there.
func vadModelPath(given string) string {
	for _, p := range []string{given, modelfile.DefaultVADPath(), filepath.Join("..", "shared", "models", "ggml-silero-v6.2.0.bin")} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// timing is one run of a command: wall time, and the CPU time (user and
// system) of the process and its threads.
type timing struct{ wall, cpu time.Duration }

// runOnce runs a command and times it.
func runOnce(name string, args ...string) (timing, error) {
	cmd := exec.Command(name, args...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return timing{}, fmt.Errorf("%s %v: %v\n%s", name, args, err, errb.String())
	}
	return timing{time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// contender is one command of a side-by-side row.
type contender struct {
	name string
	cmd  string
	args []string
}

// sideBySide runs each contender n times, taking turns (so that a change
// in the machine's load hits all of them alike), and returns the median
// wall and CPU time of each.
func sideBySide(n int, cs []contender) ([]timing, error) {
	walls := make([][]time.Duration, len(cs))
	cpus := make([][]time.Duration, len(cs))
	for range n {
		for i, c := range cs {
			t, err := runOnce(c.cmd, c.args...)
			if err != nil {
				return nil, err
			}
			walls[i] = append(walls[i], t.wall)
			cpus[i] = append(cpus[i], t.cpu)
		}
	}
	out := make([]timing, len(cs))
	for i := range cs {
		out[i] = timing{median(walls[i]), median(cpus[i])}
	}
	return out, nil
}

// vadFiles is the file section: a two-minute recording that is about half
// quiet, and a minute of speech without gaps, on the base.en-sized model.
// yaz-decode with Silero decodes the speech spans only; whisper-cli without
// VAD decodes everything, and whisper-cli --vad runs the same model file's
// detector (on its default 4 threads) and decodes the speech it keeps.
func vadFiles(work, yaz, cli, vadModel string, speech []int16, runs, threads int) error {
	model := filepath.Join(work, "ggml-base.en-random.bin")
	if _, err := os.Stat(model); err != nil {
		if err := testmodel.WriteFile(model, testmodel.BaseEn, 1); err != nil {
			return err
		}
	}
	// jfk.wav (11 s) and 11 s of a quiet room's noise floor (−70 dBFS),
	// again and again, for two minutes.
	rng := rand.New(rand.NewPCG(7, 7))
	var half []int16
	for len(half) < 120*pcm.SampleRate {
		half = append(half, speech...)
		for range len(speech) {
			half = append(half, int16(rng.NormFloat64()*10.4)) // −70 dBFS RMS
		}
	}
	half = half[:120*pcm.SampleRate]
	var cont []int16
	for len(cont) < 60*pcm.SampleRate {
		cont = append(cont, speech...)
	}
	cont = cont[:60*pcm.SampleRate]
	halfPath, contPath := filepath.Join(work, "speech-and-quiet-120s.wav"), filepath.Join(work, "jfk-60s.wav")
	if err := writeWAV(halfPath, half); err != nil {
		return err
	}
	if err := writeWAV(contPath, cont); err != nil {
		return err
	}
	t := strconv.Itoa(threads)
	cliArgs := func(f string, extra ...string) []string {
		return append([]string{"-m", model, "-f", f, "-t", t, "-bs", "1", "-sns", "-np"}, extra...)
	}
	yazArgs := func(f string, extra ...string) []string {
		return append(append([]string{"-m", model, "-t", t, "--beam-size", "1", "--log-level", "error"}, extra...), f)
	}
	fmt.Fprintf(os.Stderr, "bench: files with the base.en-sized model, VAD model %s, %d runs each, in turns\n", vadModel, runs)
	fmt.Printf("\n| audio (base.en-sized, %d threads; wall / CPU) | whisper-cli | whisper-cli --vad | yaz-decode, Silero spans | ratio to whisper-cli | ratio to whisper-cli --vad | yaz-decode, energy (whole file) |\n|---|---|---|---|---|---|---|\n", threads)
	for _, f := range []struct{ name, path string }{
		{"2 min, half quiet", halfPath},
		{"60 s of speech without gaps", contPath},
	} {
		ts, err := sideBySide(runs, []contender{
			{"whisper-cli", cli, cliArgs(f.path)},
			{"whisper-cli --vad", cli, cliArgs(f.path, "--vad", "-vm", vadModel)},
			{"yaz-decode silero", yaz, yazArgs(f.path, "--vad", "silero", "--vad-model", vadModel)},
			{"yaz-decode energy", yaz, yazArgs(f.path, "--vad", "energy")},
		})
		if err != nil {
			return err
		}
		wc := func(x timing) string { return fmt.Sprintf("%s / %s", ms(x.wall), ms(x.cpu)) }
		fmt.Printf("| %s | %s | %s | %s | %.2f× / %.2f× | %.2f× / %.2f× | %s |\n", f.name, wc(ts[0]), wc(ts[1]), wc(ts[2]),
			ratio(ts[2].wall, ts[0].wall), ratio(ts[2].cpu, ts[0].cpu), ratio(ts[2].wall, ts[1].wall), ratio(ts[2].cpu, ts[1].cpu), wc(ts[3]))
	}
	return nil
}
