package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
)

// The GPU goals (docs/gpu.md) on a real GPU, with the large-v3-turbo-sized model.
const (
	goalResident3s = 100 * time.Millisecond // a 3 s utterance, resident decoder
	goalCold60s    = 2 * time.Second        // 60 s of audio from a cold start
)

type namedFile struct{ name, path string }

// gpuTable is the GPU table (-gpu): on the same files and the same
// generated model (-gpu-size, large-v3-turbo's dimensions by default),
// yaz-decode on the GPU next to whisper-cli built with the same backend
// (whisper-cli takes the first GPU by default), in turns; the GPU against
// the CPU of the same machine (--device cpu, whisper-cli -ng) on the
// shortest file; the resident decoder's time for a 3 s utterance on each.
// Absolute times are printed for the GPU alone, the CPU only as ratios.
// Whole runs include loading the model (cold: a fresh process; the file
// itself in the page cache after the first run).
func gpuTable(runs, cpuRuns int, bin, cli, work, threads string, size testmodel.Size, files []namedFile, s3 []int16) error {
	model := filepath.Join(work, "ggml-"+size.String()+"-random.bin")
	if _, err := os.Stat(model); err != nil {
		fmt.Fprintf(os.Stderr, "bench: writing the %s-sized model (once)\n", size)
		start := time.Now()
		if err := testmodel.WriteFile(model, size, 1); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: written in %v\n", time.Since(start).Round(time.Second))
	}
	yaz := filepath.Join(bin, "yaz-decode")
	list, err := exec.Command(yaz, "devices", "-f", "json", "--device", "gpu").Output()
	var devs struct {
		Chosen  *struct{ Name, Kind, Description string }
		Error   string
		Warning string
	}
	if jerr := json.Unmarshal(list, &devs); jerr != nil || devs.Chosen == nil {
		return fmt.Errorf("yaz-decode devices --device gpu: %v, %s", err, list)
	}
	if devs.Chosen.Kind == "cpu" { // gpu found no hardware GPU and would decode on the CPU
		return fmt.Errorf("yaz-decode devices --device gpu: %s", devs.Warning)
	}
	gpuName := devs.Chosen.Name + " (" + devs.Chosen.Description + ", " + devs.Chosen.Kind + ")"
	yazArgs := func(dev, f string, extra ...string) []string {
		return append([]string{yaz, "-m", model, "-t", threads, "--beam-size", "1", "--no-vad-gate", "--log-level", "error", "--device", dev, f}, extra...)
	}
	cliArgs := func(f string, extra ...string) []string {
		return append([]string{cli, "-m", model, "-f", f, "-t", threads, "-bs", "1", "-sns", "-np"}, extra...)
	}
	fmt.Fprintf(os.Stderr, "bench: GPU table: %s-sized random model on %s, %d interleaved runs per row (CPU rows %d), %s threads\n",
		size, gpuName, runs, cpuRuns, threads)
	fmt.Printf("\nGPU: %s; model: %s-sized, f16, random weights; %s threads; medians of %d runs (CPU: %d), in turns.\n\n", gpuName, size, threads, runs, cpuRuns)
	fmt.Printf("| audio, cold start | whisper-cli, GPU | yaz-decode, GPU | ratio | yaz-decode, GPU, full ctx | ratio |\n|---|---|---|---|---|---|\n")
	gpu := map[string]times{}
	var cold60 time.Duration
	for _, f := range files {
		med, err := interleaved(runs, [][]string{cliArgs(f.path), yazArgs("gpu", f.path), yazArgs("gpu", f.path, "--audio-ctx", "full")})
		if err != nil {
			return err
		}
		gpu[f.name] = med[1]
		if strings.HasPrefix(f.name, "60 s") {
			cold60 = med[1].wall
		}
		fmt.Printf("| %s | %s | %s | %.2f× | %s | %.2f× |\n", f.name, ms(med[0].wall), ms(med[1].wall), ratio(med[1].wall, med[0].wall),
			ms(med[2].wall), ratio(med[2].wall, med[0].wall))
	}
	// The CPU of the same machine, on the shortest file: a large model on
	// the CPU takes long, and only the ratio is reported.
	f := files[0]
	cpu, err := interleaved(cpuRuns, [][]string{yazArgs("cpu", f.path), cliArgs(f.path, "-ng"), cliArgs(f.path)})
	if err != nil {
		return err
	}
	fmt.Printf("\n| %s, cold start | yaz-decode GPU ÷ CPU | whisper-cli GPU ÷ CPU |\n|---|---|---|\n", f.name)
	fmt.Printf("| wall time | %.3f | %.3f |\n", ratio(gpu[f.name].wall, cpu[0].wall), ratio(cpu[2].wall, cpu[1].wall))

	sg, err := serveRuns(runs+2, yaz, []string{"serve", "-m", model, "-t", threads, "--beam-size", "1", "--no-vad-gate", "--log-level", "error", "--device", "gpu"}, s3)
	if err != nil {
		return err
	}
	sc, err := serveRuns(cpuRuns, yaz, []string{"serve", "-m", model, "-t", threads, "--beam-size", "1", "--no-vad-gate", "--log-level", "error", "--device", "cpu"}, s3)
	if err != nil {
		return err
	}
	fmt.Printf("\n| 3 s utterance, resident decoder (serve) | GPU (median of %d) | GPU ÷ CPU |\n|---|---|---|\n", runs+2)
	fmt.Printf("| end of utterance to its result | %s | %.3f |\n", ms(sg), ratio(sg, sc))

	fmt.Printf("\nGoals: a resident 3 s utterance in ≤ %v: %s (%s); 60 s of audio from a cold start in ≤ %v: %s (%s).\n",
		goalResident3s, met(sg <= goalResident3s), ms(sg), goalCold60s, met(cold60 > 0 && cold60 <= goalCold60s), ms(cold60))
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
