// Command bench runs yaz-decode and whisper-cli side by side on the same
// audio, the same generated tiny.en-sized model, threads and decoding
// parameters, several runs each, and prints the medians and their ratios as
// a Markdown table (make bench).
//
// Rows: jfk.wav (11 s) and a 60 s file made from it, cold runs of each tool;
// yaz-decode with its default trimmed audio context and with the full one
// (what whisper-cli uses); and serve mode, a resident model decoding
// repeated 3 s utterances, next to a cold whisper-cli run on the same 3 s.
// Then memory (memory.go): the peak resident set of the daemon, of its
// decoder and of yaz-decode on its own while they transcribe 10 minutes of
// audio at 16, 48 and 192 kHz (-memory=false skips it, -only-memory runs
// only it).
//
// With a Silero VAD model (vad.go): files on the base.en-sized model, a
// two-minute recording that is half quiet and a minute of speech without
// gaps, yaz-decode decoding the speech spans against whisper-cli with and
// without its own --vad, in turns.
//
// With -parakeet-cli, a second table puts the two engines side by side on
// the same files and threads: yaz-decode with a generated model of NVIDIA
// Parakeet TDT 0.6B's dimensions (1.26 GB, written once into -work) against
// whisper.cpp's parakeet-cli on that model, next to yaz-decode with
// generated whisper models of base.en's and small.en's dimensions; then the
// resident Parakeet model's decode time for a 3 s utterance in serve mode.
// Times are whole runs (model load included) except serve's.
//
// With -gpu, only the GPU table (gpu.go), for a machine with a GPU and a
// whisper.cpp built for it (scripts/gpu/h200.sh runs it): a generated
// model of large-v3-turbo's dimensions (1.6 GB, written once into -work).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "bin", "folder of the built binaries")
	cli := flag.String("whisper-cli", os.Getenv("YAZ_WHISPER_CLI"), "whisper-cli binary")
	jfk := flag.String("jfk", "", "jfk.wav (16 kHz mono)")
	work := flag.String("work", ".cache/bench", "work folder for the model and audio")
	runs := flag.Int("runs", 5, "runs per row")
	threads := flag.Int("threads", 2, "threads for both tools")
	size := flag.String("size", "tiny.en", "generated model size")
	memory := flag.Bool("memory", true, "also measure the memory of transcribing 10 minutes at 16, 48 and 192 kHz")
	onlyMemory := flag.Bool("only-memory", false, "measure only the memory rows")
	vadModel := flag.String("vad-model", "", "Silero VAD model for the file rows (default: the user's, else ../shared/models)")
	onlyVAD := flag.Bool("only-vad", false, "run only the file rows with a voice detector")
	pcli := flag.String("parakeet-cli", os.Getenv("YAZ_PARAKEET_CLI"), "parakeet-cli binary; empty: no Parakeet table")
	pruns := flag.Int("parakeet-runs", 5, "runs per row of the Parakeet table")
	ponly := flag.Bool("parakeet-only", false, "only the Parakeet table")
	gpuOnly := flag.Bool("gpu", false, "only the GPU table (gpu.go): yaz-decode on the GPU next to -whisper-cli built with the same backend, the GPU against the CPU, the resident 3 s utterance")
	gpuSize := flag.String("gpu-size", "large-v3-turbo", "generated model size of the GPU table")
	cpuRuns := flag.Int("cpu-runs", 2, "runs per CPU row of the GPU table")
	flag.Parse()
	if *jfk == "" || (*cli == "" && !*onlyMemory) {
		return fmt.Errorf("-jfk and -whisper-cli are required")
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	if *onlyMemory {
		speech, err := readWAV16(*jfk)
		if err != nil {
			return err
		}
		return memoryRows(*bin, *work, speech)
	}
	model := ""
	if !*gpuOnly {
		sz, err := testmodel.ParseSize(*size)
		if err != nil {
			return err
		}
		model = filepath.Join(*work, "ggml-"+*size+"-random.bin")
		if _, err := os.Stat(model); err != nil {
			if err := testmodel.WriteFile(model, sz, 1); err != nil {
				return err
			}
		}
	}
	speech, err := readWAV16(*jfk)
	if err != nil {
		return err
	}
	long := filepath.Join(*work, "jfk-60s.wav")
	short := filepath.Join(*work, "jfk-3s.wav")
	var s60 []int16
	for len(s60) < 60*pcm.SampleRate {
		s60 = append(s60, speech...)
	}
	if err := writeWAV(long, s60[:60*pcm.SampleRate]); err != nil {
		return err
	}
	s3 := speech[pcm.SampleRate/2 : pcm.SampleRate/2+3*pcm.SampleRate]
	if err := writeWAV(short, s3); err != nil {
		return err
	}
	t := strconv.Itoa(*threads)
	if *gpuOnly {
		gsz, err := testmodel.ParseSize(*gpuSize)
		if err != nil {
			return err
		}
		return gpuTable(*runs, *cpuRuns, *bin, *cli, *work, t, gsz, []namedFile{{"jfk.wav 11 s", *jfk}, {"60 s", long}}, s3)
	}
	if *ponly {
		return parakeetTable(*pruns, *bin, *pcli, *work, t, []struct{ name, path string }{{"jfk.wav 11 s", *jfk}, {"60 s", long}}, s3)
	}
	yaz := filepath.Join(*bin, "yaz-decode")
	vm := vadModelPath(*vadModel)
	if vm == "" {
		fmt.Fprintln(os.Stderr, "bench: no Silero VAD model (yaz-fetch-model silero-v5.1.2): the rows with a detector are left out")
	}
	if *onlyVAD {
		if vm == "" {
			return fmt.Errorf("-only-vad needs a Silero VAD model")
		}
		return vadFiles(*work, yaz, *cli, vm, speech, *runs, *threads)
	}
	cliArgs := func(f string) []string { return []string{"-m", model, "-f", f, "-t", t, "-bs", "1", "-sns", "-np"} }
	yazArgs := func(f string, extra ...string) []string {
		return append([]string{"-m", model, "-t", t, "--beam-size", "1", "--no-vad-gate", "--log-level", "error", f}, extra...)
	}
	fmt.Fprintf(os.Stderr, "bench: %d runs per row, %s-sized random model, %d threads\n", *runs, *size, *threads)
	fmt.Printf("| audio | whisper-cli (median) | yaz-decode (median) | ratio | yaz-decode full ctx | ratio |\n|---|---|---|---|---|---|\n")
	for _, f := range []struct{ name, path string }{{"jfk.wav 11 s", *jfk}, {"60 s", long}} {
		c, err := timeRuns(*runs, *cli, cliArgs(f.path)...)
		if err != nil {
			return err
		}
		y, err := timeRuns(*runs, yaz, yazArgs(f.path)...)
		if err != nil {
			return err
		}
		yf, err := timeRuns(*runs, yaz, yazArgs(f.path, "--audio-ctx", "full")...)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %s | %.2f× | %s | %.2f× |\n", f.name, ms(c), ms(y), ratio(y, c), ms(yf), ratio(yf, c))
	}
	c3, err := timeRuns(*runs, *cli, cliArgs(short)...)
	if err != nil {
		return err
	}
	sv, err := serveRuns(*runs, yaz, []string{"serve", "-m", model, "-t", t, "--beam-size", "1", "--no-vad-gate", "--log-level", "error"}, s3)
	if err != nil {
		return err
	}
	fmt.Printf("\n| 3 s utterance | cold whisper-cli | yaz-decode serve (resident) | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| repeated %d× | %s | %s | %.2f× |\n", *runs, ms(c3), ms(sv), ratio(sv, c3))
	if vm != "" {
		if err := vadFiles(*work, yaz, *cli, vm, speech, *runs, *threads); err != nil {
			return err
		}
	}
	if *memory {
		if err := memoryRows(*bin, *work, speech); err != nil {
			return err
		}
	}
	if *pcli == "" {
		return nil
	}
	return parakeetTable(*pruns, *bin, *pcli, *work, t, []struct{ name, path string }{{"jfk.wav 11 s", *jfk}, {"60 s", long}}, s3)
}

// parakeetTable prints the engines side by side (see the package comment).
func parakeetTable(runs int, bin, pcli, work, threads string, files []struct{ name, path string }, s3 []int16) error {
	models := map[testmodel.Size]string{}
	for _, sz := range []testmodel.Size{testmodel.ParakeetTDT06B, testmodel.BaseEn, testmodel.SmallEn} {
		models[sz] = filepath.Join(work, "ggml-"+sz.String()+"-random.bin")
		if _, err := os.Stat(models[sz]); err != nil {
			fmt.Fprintf(os.Stderr, "bench: writing the %s-sized model (once)\n", sz)
			if err := testmodel.WriteFile(models[sz], sz, 1); err != nil {
				return err
			}
		}
	}
	pk := models[testmodel.ParakeetTDT06B]
	yaz := filepath.Join(bin, "yaz-decode")
	yazArgs := func(model, f string) []string {
		return []string{"-m", model, "-t", threads, "--no-vad-gate", "--log-level", "error", f}
	}
	fmt.Fprintf(os.Stderr, "bench: %d interleaved runs per row, Parakeet TDT 0.6B-sized random model, %s threads\n", runs, threads)
	fmt.Printf("\n| audio | parakeet-cli 0.6B (median) | yaz-decode Parakeet 0.6B (median) | ratio | CPU ratio | yaz-decode whisper base.en | yaz-decode whisper small.en |\n|---|---|---|---|---|---|---|\n")
	for _, f := range files {
		// The tools take turns, run by run, so that a burst of load on a
		// shared machine falls on all of them alike.
		med, err := interleaved(runs, [][]string{
			append([]string{pcli}, "-m", pk, "-t", threads, "-np", f.path),
			append([]string{yaz}, yazArgs(pk, f.path)...),
			append([]string{yaz}, yazArgs(models[testmodel.BaseEn], f.path)...),
			append([]string{yaz}, yazArgs(models[testmodel.SmallEn], f.path)...),
		})
		if err != nil {
			return err
		}
		c, y := med[0], med[1]
		fmt.Printf("| %s | %s | %s | %.2f× | %.2f× | %s | %s |\n", f.name, ms(c.wall), ms(y.wall), ratio(y.wall, c.wall),
			ratio(y.cpu, c.cpu), ms(med[2].wall), ms(med[3].wall))
	}
	sv, err := serveRuns(runs+2, yaz, []string{"serve", "-m", pk, "-t", threads, "--no-vad-gate", "--log-level", "error"}, s3)
	if err != nil {
		return err
	}
	fmt.Printf("\n| 3 s utterance | yaz-decode serve, resident Parakeet 0.6B (median of %d) |\n|---|---|\n", runs+2)
	fmt.Printf("| decode time | %s |\n", ms(sv))
	return nil
}

// times are the medians of a command's runs: wall clock, and the CPU time
// (user and system) of the process.
type times struct{ wall, cpu time.Duration }

// interleaved runs each command n times, taking turns, and returns the
// medians of each.
func interleaved(n int, cmds [][]string) ([]times, error) {
	walls := make([][]time.Duration, len(cmds))
	cpus := make([][]time.Duration, len(cmds))
	for range n {
		for i, c := range cmds {
			cmd := exec.Command(c[0], c[1:]...)
			var errb strings.Builder
			cmd.Stdout, cmd.Stderr = io.Discard, &errb
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("%s: %v\n%s", c[0], err, errb.String())
			}
			walls[i] = append(walls[i], time.Since(start))
			cpus[i] = append(cpus[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	out := make([]times, len(cmds))
	for i := range cmds {
		out[i] = times{median(walls[i]), median(cpus[i])}
	}
	return out, nil
}

func timeRuns(n int, name string, args ...string) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		cmd := exec.Command(name, args...)
		var errb strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %v\n%s", name, err, errb.String())
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds), nil
}

// serveRuns starts one resident decoder, sends the same utterance n times,
// and times each from the end-of-utterance frame to its result line.
func serveRuns(n int, name string, args []string, samples []int16) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Wait()
	defer in.Close()
	w := frame.NewWriter(in)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	var ds []time.Duration
	for i := 0; i <= n; i++ { // the first run warms up and is not counted
		if err := w.Audio(samples); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := w.End(); err != nil {
			return 0, err
		}
		if !sc.Scan() {
			return 0, fmt.Errorf("serve: no result: %v", sc.Err())
		}
		if i > 0 {
			ds = append(ds, time.Since(start))
		}
	}
	return median(ds), nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func readWAV16(path string) ([]int16, error) {
	f, _, err := wav.ReadFile16k(path, 10*60*pcm.SampleRate)
	if err != nil {
		return nil, err
	}
	return pcm.FromFloat32(nil, f), nil
}

func writeWAV(path string, s []int16) error {
	return os.WriteFile(path, append(pcm.WAVHeader(int64(len(s)*2)), pcm.Encode(nil, s)...), 0o644)
}
