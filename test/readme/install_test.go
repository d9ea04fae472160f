package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// helpFlags are the long flags a program's --help lists.
func helpFlags(t *testing.T, prog string, args ...string) []string {
	t.Helper()
	out, err := bounded(testwait.Context(t), prog, append(args, "--help")...).Output()
	if err != nil {
		t.Fatalf("%s --help: %v", prog, err)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help lists no flag:\n%s", prog, out)
	}
	return flags
}

// TestManPages: make install wrote a man page for every program, man (or
// groff) renders it without a warning, and it documents every flag that
// --help lists.
func TestManPages(t *testing.T) {
	inst := install(t)
	mandir := filepath.Join(inst.prefix, "share", "man", "man1")
	_, haveMan := exec.LookPath("man")
	_, haveGroff := exec.LookPath("groff")
	if haveMan != nil && haveGroff != nil {
		t.Fatal("neither man nor groff is installed (make setup installs man-db and groff-base)")
	}
	for _, name := range inst.programs {
		t.Run(name, func(t *testing.T) {
			page := filepath.Join(mandir, name+".1")
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			var text string
			if haveMan == nil {
				cmd := bounded(testwait.Context(t), "man", "-l", "-Tutf8", page)
				cmd.Env = append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=0", "MANPAGER=cat", "PAGER=cat", "LANG=C.UTF-8")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("man -l %s: %v\n%s", page, err, out)
				}
				text = string(out)
			}
			if haveGroff == nil {
				cmd := bounded(testwait.Context(t), "groff", "-man", "-Tutf8", "-ww", "-z", page)
				if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
					t.Errorf("groff -ww %s: %v\n%s", page, err, out)
				}
				if text == "" {
					out, err := bounded(testwait.Context(t), "groff", "-man", "-Tutf8", "-P-c", page).Output()
					if err != nil {
						t.Fatal(err)
					}
					text = string(out)
				}
			}
			text = regexp.MustCompile(`.\x08`).ReplaceAllString(text, "") // overstrike, if any
			text = strings.ReplaceAll(text, "\u2010", "-")                // groff's hyphen
			for _, want := range []string{"NAME", "OPTIONS", "EXIT STATUS", "VERSION", "SEE ALSO"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s.1 lacks %q", name, want)
				}
			}
			if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `\s+-\s+\S`).MatchString(text) {
				t.Errorf("%s.1 has no \"%s - description\" line:\n%s", name, name, text)
			}
			for _, f := range helpFlags(t, filepath.Join(inst.bin, name)) {
				// The page writes a flag in bold with its hyphens as roff's
				// \- (so it copies out as ASCII): \fB\-\-flag\fR.
				roff := strings.ReplaceAll(f, "-", `\-`)
				if !strings.Contains(string(src), `\fB`+roff) && !strings.Contains(string(src), `\fB`+f) {
					t.Errorf("%s.1 does not document %s (listed by --help)", name, f)
				}
			}
		})
	}
}

// completeSpec sources an installed bash completion file in bash and
// returns the program bash will run to complete name (complete -C).
func completeSpec(t *testing.T, file, name string) string {
	t.Helper()
	out, err := bounded(testwait.Context(t), "bash", "--norc", "--noprofile", "-c", `source "$1" && complete -p "$2"`, "bash", file, name).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: source %s; complete -p %s: %v\n%s", file, name, err, out)
	}
	spec := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`-C '?([^' ]+)'? ` + regexp.QuoteMeta(name) + `$`).FindStringSubmatch(spec)
	if m == nil {
		t.Fatalf("complete -p %s = %q, want a -C PROGRAM completion", name, spec)
	}
	if !strings.Contains(spec, "-o default") {
		t.Errorf("complete -p %s = %q: without -o default, file names are not completed", name, spec)
	}
	return m[1]
}

// bashComplete runs prog the way bash's "complete -C prog" does for the
// command line line with the cursor at its end: arguments (command, word
// being completed, previous word), COMP_LINE, COMP_POINT, COMP_TYPE, COMP_KEY.
func bashComplete(t *testing.T, prog, line string) []string {
	t.Helper()
	words := strings.Fields(line)
	cur, prev := "", words[len(words)-1]
	if !strings.HasSuffix(line, " ") {
		cur = words[len(words)-1]
		prev = ""
		if len(words) > 1 {
			prev = words[len(words)-2]
		}
	}
	cmd := bounded(testwait.Context(t), prog, words[0], cur, prev)
	cmd.Env = append(os.Environ(), "COMP_LINE="+line, "COMP_POINT="+strconv.Itoa(len(line)), "COMP_TYPE=9", "COMP_KEY=9")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("COMP_LINE=%q %s: %v", line, prog, err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	return got
}

// TestCompletion: make install wrote a bash completion for every program;
// sourced in bash, it names the installed program, which answers a prefix
// with the flags, commands and values that match.
func TestCompletion(t *testing.T) {
	inst := install(t)
	dir := filepath.Join(inst.prefix, "share", "bash-completion", "completions")
	extra := map[string]map[string][]string{
		"yaz-capture": {"yaz-capture --backend ": {"alsa", "auto", "null", "pulseaudio"}, "yaz-capture --form": {"--format"}},
		"yaz-decode":  {"yaz-decode --output-d": {"--output-dir"}, "yaz-decode -f ": {"json", "srt", "txt", "vtt"}},
		"yaz-speak":   {"yaz-speak --ra": {"--rate"}},
		"yaz-type":    {"yaz-type --backend ib": {"ibus"}, "yaz-type --paste": {"--paste-over-chars"}},
		"yazsesd":     {"yazsesd st": {"status"}, "yazsesd config ch": {"check"}, "yazsesd status -f ": {"json", "text"}},
		"yaz-mcp":     {"yaz-mcp --log-format ": {"json", "text"}},
		"yaz-gate":    {"yaz-gate --per": {"--per-hour"}},
	}
	for _, name := range inst.programs {
		t.Run(name, func(t *testing.T) {
			prog := completeSpec(t, filepath.Join(dir, name), name)
			if prog != filepath.Join(inst.bin, name) {
				t.Errorf("completion runs %s, want the installed %s", prog, filepath.Join(inst.bin, name))
			}
			cases := map[string][]string{name + " --log-l": {"--log-level"}, name + " --vers": {"--version"}}
			for line, want := range extra[name] {
				cases[line] = want
			}
			if extra[name] == nil {
				t.Errorf("no program-specific completion case for %s", name)
			}
			for line, want := range cases {
				if got := bashComplete(t, prog, line); !slices.Equal(got, want) {
					t.Errorf("completing %q: %q, want %q", line, got, want)
				}
			}
		})
	}
	t.Run("yaz-fetch-model", func(t *testing.T) {
		out, err := bounded(testwait.Context(t), "bash", "--norc", "--noprofile", "-c",
			`source "$1" && spec=$(complete -p yaz-fetch-model) && spec=${spec#complete } && eval "compgen ${spec% yaz-fetch-model} -- tiny"`,
			"bash", filepath.Join(dir, "yaz-fetch-model")).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if want := []string{"tiny", "tiny.en"}; !slices.Equal(got, want) {
			t.Errorf("completing yaz-fetch-model tiny: %q, want %q", got, want)
		}
	})
}

// TestInstallUninstall: make install into a staging root (DESTDIR) puts
// every file where the README says (the CUDA module too, where the
// configuration has one), with paths inside them that name the final
// prefix, and make uninstall removes them all but the configuration.
func TestInstallUninstall(t *testing.T) {
	inst := install(t)
	dest := t.TempDir()
	vars := []string{"DESTDIR=" + dest, "PREFIX=/opt/yazses", "BIN=" + inst.build,
		"UNITDIR=/etc/systemd/user", "CONFDIR=/etc/yazses"}
	// An older install's unit, yazsesd.service, enabled: the name is the
	// new unit's alias now, so install takes the old file away.
	wants := filepath.Join(dest, "etc/systemd/user/graphical-session.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "etc/systemd/user/yazsesd.service"), []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/systemd/user/yazsesd.service", filepath.Join(wants, "yazsesd.service")); err != nil {
		t.Fatal(err)
	}
	out, err := run(buildContext(t), world.root, makeEnv(), "make", append([]string{"-s", "install"}, vars...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "enable --now app-io.github.yazses.YazSes.service") {
		t.Errorf("make install does not say how to enable the unit:\n%s", out)
	}
	var files []string
	filepath.WalkDir(dest, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, dest))
		}
		return nil
	})
	want := []string{"/etc/systemd/user/app-io.github.yazses.YazSes.service", "/opt/yazses/share/applications/io.github.yazses.YazSes.desktop", "/etc/yazses/config.toml", "/opt/yazses/bin/yaz-fetch-model", "/opt/yazses/share/man/man1/yaz-fetch-model.1",
		"/opt/yazses/share/bash-completion/completions/yaz-fetch-model"}
	for _, p := range inst.programs {
		want = append(want, "/opt/yazses/bin/"+p, "/opt/yazses/share/man/man1/"+p+".1",
			"/opt/yazses/share/bash-completion/completions/"+p)
	}
	// The CUDA module, where the configuration builds one (make test sets
	// YAZ_CUDA_MODULE then): in lib/yazses, where yaz-decode looks.
	if cuda := os.Getenv("YAZ_CUDA_MODULE"); cuda != "" && cuda != "none" {
		want = append(want, "/opt/yazses/lib/yazses/yaz-ggml-cuda.so")
		if !inst.module {
			t.Errorf("make build did not put the CUDA module %s beside the programs in %s", cuda, inst.build)
		}
	} else if inst.module {
		t.Errorf("make build put a CUDA module in %s, and the configuration has none", inst.build)
	}
	slices.Sort(files)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("make install wrote\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
	unit, err := os.ReadFile(filepath.Join(dest, "etc/systemd/user/app-io.github.yazses.YazSes.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/opt/yazses/bin/yazsesd") || strings.Contains(string(unit), dest) {
		t.Errorf("the unit does not start /opt/yazses/bin/yazsesd:\n%s", unit)
	}
	// The portal takes the application id only with a .desktop file
	// whose program exists.
	entry, err := os.ReadFile(filepath.Join(dest, "opt/yazses/share/applications/io.github.yazses.YazSes.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(entry), "\nExec=/opt/yazses/bin/yazsesd run\n") || strings.Contains(string(entry), "@BINDIR@") {
		t.Errorf("the .desktop file does not run /opt/yazses/bin/yazsesd:\n%s", entry)
	}
	comp, err := os.ReadFile(filepath.Join(dest, "opt/yazses/share/bash-completion/completions/yaz-decode"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(comp), "complete -o default -C '/opt/yazses/bin/yaz-decode' yaz-decode\n"; got != want {
		t.Errorf("yaz-decode's completion = %q, want %q", got, want)
	}
	for path, mode := range map[string]os.FileMode{"etc/yazses": 0o700 | os.ModeDir, "etc/yazses/config.toml": 0o600} {
		fi, err := os.Stat(filepath.Join(dest, path))
		if err != nil {
			t.Error(err)
		} else if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
		}
	}

	if _, err := run(buildContext(t), world.root, makeEnv(), "make", append([]string{"-s", "uninstall"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	files = files[:0]
	filepath.WalkDir(dest, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, dest))
		}
		return nil
	})
	if !slices.Equal(files, []string{"/etc/yazses/config.toml"}) {
		t.Errorf("after make uninstall: %q, want only the configuration", files)
	}
}

// TestUninstallStopsDaemon: make uninstall stops the user's running
// yazsesd before it removes the programs (one left on deleted binaries
// answered hold start with "holding" and had no microphone), says so, and
// prints no error make ignored.
func TestUninstallStopsDaemon(t *testing.T) {
	inst := install(t)
	prefix := t.TempDir()
	vars := []string{"PREFIX=" + prefix, "BIN=" + inst.build, "UNITDIR=" + filepath.Join(prefix, "units"), "CONFDIR=" + filepath.Join(prefix, "config")}
	if _, err := run(buildContext(t), world.root, makeEnv(), "make", append([]string{"-s", "install"}, vars...)...); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	rt := filepath.Join(home, "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(filepath.Join(prefix, "bin", "yazsesd"), "run", "-c", filepath.Join(prefix, "config", "config.toml"))
	daemon.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + rt}
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log := &testwait.Buffer{}
	daemon.Stderr = log
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited, err := testwait.Exited(daemon.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- daemon.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL)
		<-done
	})
	ctx := testwait.Context(t)
	if err := testwait.Until(ctx, func() bool { return strings.Contains(log.String(), "listening") }, log); err != nil {
		t.Fatalf("the installed daemon did not start: %v\n%s", err, log.String())
	}
	uninstall := bounded(buildContext(t), "make", append([]string{"uninstall"}, vars...)...)
	uninstall.Dir, uninstall.Env = world.root, makeEnv()
	b, err := uninstall.CombinedOutput() // make's "(ignored)" goes to stderr
	out := string(b)
	if err != nil {
		t.Fatalf("make uninstall: %v\n%s", err, out)
	}
	testwait.Closed(t, exited, "the daemon's end after make uninstall")
	if !strings.Contains(out, "uninstall: stopping yazsesd (pid ") {
		t.Errorf("make uninstall did not say it stopped the daemon:\n%s", out)
	}
	if strings.Contains(out, "Error") || strings.Contains(out, "ignored") {
		t.Errorf("make uninstall printed an error it ignored:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "yazsesd")); !os.IsNotExist(err) {
		t.Errorf("yazsesd is still installed: %v", err)
	}
}

// TestInstallSaysCompletionNeedsItsLoader: bash loads the completion make
// install writes only through the bash-completion package; where that is
// missing (Debian's minimal installs and containers lack it), make install
// says which package to install, and says nothing where it is there.
func TestInstallSaysCompletionNeedsItsLoader(t *testing.T) {
	inst := install(t)
	loader := filepath.Join(t.TempDir(), "bash_completion")
	if err := os.WriteFile(loader, []byte("# bash-completion\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		loader string
		says   bool
	}{{filepath.Join(t.TempDir(), "none"), true}, {loader, false}} {
		dest := t.TempDir()
		vars := []string{"DESTDIR=" + dest, "PREFIX=/opt/yazses", "BIN=" + inst.build,
			"UNITDIR=/etc/systemd/user", "CONFDIR=/etc/yazses", "BASHCOMP_LOADER=" + tc.loader}
		out, err := run(buildContext(t), world.root, makeEnv(), "make", append([]string{"-s", "install"}, vars...)...)
		if err != nil {
			t.Fatal(err)
		}
		if says := strings.Contains(out, "apt install bash-completion"); says != tc.says {
			t.Errorf("make install with the loader %s (there: %v) says to install bash-completion: %v, want %v\n%s", tc.loader, !tc.says, says, tc.says, out)
		}
	}
}
