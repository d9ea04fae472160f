# YazSes: make setup | build | test | bench | demo | install
SHELL := bash
.DEFAULT_GOAL := build

PREFIX ?= $(HOME)/.local
GO ?= go
# One version for every program (lib/version, yaz-fetch-model): git describe
# --tags when a tag exists, else 0.0.0-dev+<short commit>; see scripts/version.sh.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell scripts/version.sh)
endif
# Where build puts the binaries (install copies them from there).
BIN ?= bin

# whisper.cpp is built once into this cache and reused (scripts/setup-whisper.sh).
WHISPER_VERSION := 1.9.1
WHISPER_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/yazses/whisper.cpp-$(WHISPER_VERSION)
# The GPU backends (scripts/setup-whisper.sh): auto (the default) builds
# the CPU and Vulkan backends into one set of binaries where glslc,
# libvulkan-dev and spirv-headers are installed (make setup installs them
# on Debian), the CPU alone where they are not; none builds the CPU alone;
# vulkan / cuda / cuda,vulkan by name. CUDA is a module the binaries open
# at run time (yaz-ggml-cuda.so: build puts it next to them, install in
# $(PREFIX)/lib/yazses), built under auto where nvcc is found and nvidia-smi
# lists a GPU. Each configuration has a build folder of its own in the
# cache. The Vulkan build takes about 10 minutes from a clean folder on a
# 2-core machine shared with other builds (the CPU alone: about 3 idle).
YAZ_GPU ?= auto
export YAZ_GPU
# YAZ_CUDA_ARCH=90 builds ggml-cuda for that one architecture (an H100 or
# H200) in a folder of its own, in minutes instead of the hour every
# architecture takes (without it: this machine's GPUs).
export YAZ_CUDA_ARCH
# make test runs the lavapipe tests (Mesa's Vulkan driver on the CPU) in
# every configuration that asks for Vulkan: a build without it fails
# asr's TestVulkanBuilt in one line instead of leaving them out unseen.
export YAZ_TEST_VULKAN := $(if $(or $(filter auto,$(YAZ_GPU)),$(findstring vulkan,$(YAZ_GPU))),1,0)
WHISPER_BUILD := $(shell WHISPER_CACHE='$(WHISPER_CACHE)' YAZ_GPU='$(YAZ_GPU)' YAZ_CUDA_ARCH='$(YAZ_CUDA_ARCH)' scripts/setup-whisper.sh --build-dir 2>/dev/null || echo '$(WHISPER_CACHE)/build')
WHISPER_FEATURES := $(shell WHISPER_CACHE='$(WHISPER_CACHE)' YAZ_GPU='$(YAZ_GPU)' YAZ_CUDA_ARCH='$(YAZ_CUDA_ARCH)' scripts/setup-whisper.sh --features 2>/dev/null || echo cpu)
# The CUDA module of this configuration ("" when it has none). The tests'
# binaries are not next to it: YAZ_CUDA_MODULE names it for them, and
# YAZ_TEST_CUDA makes asr's TestCUDAModuleBuilt fail in one line if it is
# missing.
CUDA_MODULE := $(shell WHISPER_CACHE='$(WHISPER_CACHE)' YAZ_GPU='$(YAZ_GPU)' YAZ_CUDA_ARCH='$(YAZ_CUDA_ARCH)' scripts/setup-whisper.sh --cuda-module 2>/dev/null)
export YAZ_CUDA_MODULE := $(CUDA_MODULE)
export YAZ_TEST_CUDA := $(if $(CUDA_MODULE),1,0)
WHISPER_LIB := $(WHISPER_BUILD)/src/libwhisper.a
WHISPER_CLI := $(WHISPER_BUILD)/bin/whisper-cli
# Parakeet TDT, the second engine in the same source: its library and CLI
# (the reference of the oracle test and the benchmark).
PARAKEET_LIB := $(WHISPER_BUILD)/src/libparakeet.a
PARAKEET_CLI := $(WHISPER_BUILD)/bin/parakeet-cli
export WHISPER_CACHE
export C_INCLUDE_PATH := $(WHISPER_CACHE)/src/include:$(WHISPER_CACHE)/src/ggml/include
export LIBRARY_PATH := $(WHISPER_BUILD)/src:$(WHISPER_BUILD)/ggml/src:$(WHISPER_BUILD)/ggml/src/ggml-vulkan
# internal/ggmlgpu links the Vulkan backend when the build has it
# (vulkan.go; CUDA is the module, in every build).
comma := ,
empty :=
space := $(empty) $(empty)
# Tags from an earlier configuration (make env, the make that runs make
# test-programs-run) are replaced, never added to.
GO_TAGS := $(strip $(if $(findstring vulkan,$(WHISPER_FEATURES)),yaz_vulkan))
export GOFLAGS := $(strip $(filter-out -tags=yaz_%,$(GOFLAGS)) $(if $(GO_TAGS),-tags=$(subst $(space),$(comma),$(GO_TAGS))))
export YAZ_WHISPER_CLI := $(WHISPER_CLI)
export YAZ_PARAKEET_CLI := $(PARAKEET_CLI)
# The real Silero VAD model the tests use (ggml-silero-v6.2.0.bin): make setup
# puts it here, from ../shared/models or the model hub; internal/testvad
# reads it from here (scripts/test-models.sh). Never in the repository.
export YAZ_TEST_MODELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/yazses/test-models

BINS := $(notdir $(wildcard cmd/*))
LDFLAGS := -s -w -X github.com/yazses/yazses/lib/version.Version=$(VERSION)

# Generated random-weight models for tests, benchmarks and the demo.
GEN := .cache
JFK := $(shell $(GO) env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav

# The MCP Inspector CLI, an independent MCP client for the yaz-mcp tests (npm).
INSPECTOR_VERSION := 2.12.0
INSPECTOR := $(GEN)/inspector
export YAZ_MCP_INSPECTOR := $(abspath $(INSPECTOR))

.PHONY: setup deps whisper test-models inspector desk deb dist test-package build test test-short test-lint test-programs test-programs-run test-desktop test-desktop-run test-load test-stranger bench demo install uninstall lint fmt clean env

setup: deps whisper test-models ## install missing Debian packages, build whisper.cpp once, the tests' Silero VAD model
	$(GO) mod download

test-models: ## the real Silero VAD model the tests use, into $$YAZ_TEST_MODELS (checked; once)
	@scripts/test-models.sh

deps:
	@scripts/install-deps.sh

# Always the script, which builds whatever of the libraries and CLIs is
# missing, once, under the cache's lock: a make that finds them while another
# checkout's build is writing them waits for that build (a complete cache
# costs a few milliseconds).
whisper:
	@scripts/setup-whisper.sh >/dev/null

inspector: $(INSPECTOR)/.installed-$(INSPECTOR_VERSION) ## the MCP Inspector CLI into .cache/inspector (npm, once)

$(INSPECTOR)/.installed-$(INSPECTOR_VERSION):
	@mkdir -p $(INSPECTOR)
	cd $(INSPECTOR) && npm install --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
	@touch $@

build: whisper ## all binaries into bin/ (BIN=dir for elsewhere)
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...
	@# The CUDA module beside the binaries, where yaz-decode looks for it.
	@# -C: 200 MB are not copied again when they have not changed.
	$(if $(CUDA_MODULE),install -C -m 0644 $(CUDA_MODULE) $(BIN)/,@rm -f $(BIN)/yaz-ggml-cuda.so)

# The tests in three tiers, named for what they need (scripts/test-tier.sh
# lists each tier's packages; docs/development.md): test-short needs Go
# alone; test-programs adds whisper.cpp, the real programs, the Silero
# model and espeak-ng; test-desktop adds Xvfb, sway, PulseAudio, D-Bus and
# the portal. make test runs all three, the short tier first. No test reads
# the caller's desktop session: TEST_ENV leaves it out, so a run from a
# desktop terminal neither types into it nor reads it.
TEST_ENV := env -u DISPLAY -u XAUTHORITY -u WAYLAND_DISPLAY -u WAYLAND_SOCKET -u SWAYSOCK -u I3SOCK \
	-u DBUS_SESSION_BUS_ADDRESS -u XDG_CURRENT_DESKTOP -u XDG_SESSION_DESKTOP -u XDG_SESSION_TYPE \
	-u XDG_DESKTOP_PORTAL_DIR -u IBUS_ADDRESS -u HYPRLAND_INSTANCE_SIGNATURE

test: setup inspector ## every test: the three tiers below, the short one first (installs what is missing first, and says what)
	@# A make of its own: the build folder and tags it links (WHISPER_BUILD,
	@# GOFLAGS) are read after setup, which may have just installed the
	@# Vulkan build's tools.
	@$(MAKE) --no-print-directory desk test-short test-lint test-programs-run test-desktop-run

test-short: ## the tests that need Go alone (no server, no C library, no program built, no model): under a minute
	@echo "make test-short: $$(scripts/test-tier.sh short | wc -l) packages"
	$(TEST_ENV) CGO_ENABLED=0 $(GO) test -count=1 -timeout 5m $$(scripts/test-tier.sh short)

test-lint: # go vet and the gofmt check, over every package
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

test-programs: setup inspector ## the tests of whisper.cpp, the real programs and their command lines (no desktop)
	@$(MAKE) --no-print-directory test-programs-run

test-desktop: setup inspector desk ## the tests that need Xvfb, sway, PulseAudio, D-Bus, the portal and the real GNOME desk: typing, notifications, end to end
	@$(MAKE) --no-print-directory test-desktop-run

# The real GNOME Shell 48 and KWin 6.3 the desktop tests run
# (internal/testdesk): two Debian 13 roots built once into the cache
# (scripts/desk-root.sh: GNOME about 1.3 GB and 4 to 10 minutes the first
# time, KWin about 1 GB and 1 to 4 more, mmdebstrap from the Debian
# mirror). It needs root; without root the desks' tests say why and skip.
desk: ## the Debian 13 roots with GNOME Shell or KWin, IBus and the portals for the desktop tests (once; needs root)
	@if [ "$$(id -u)" -eq 0 ]; then scripts/desk-root.sh gnome >/dev/null && scripts/desk-root.sh kde >/dev/null; \
	else echo "desk: not root: the real GNOME and KDE desks' tests will be skipped (scripts/desk-root.sh needs root)"; fi

# -timeout is a last guard against a test that never ends (each wait in a
# test has its own bound, testwait.Hang); test/e2e alone takes about 8 min
# on an idle 2-core machine and past 15 on a loaded one. The short tier
# runs again here under -race.
test-programs-run:
	@echo "make test-programs: whisper.cpp $(WHISPER_FEATURES) ($(WHISPER_BUILD))"
	$(TEST_ENV) $(GO) test -count=1 -race -timeout 30m $$(scripts/test-tier.sh short; scripts/test-tier.sh programs | grep -v /internal/testmodel)
	$(TEST_ENV) $(GO) test -count=1 -timeout 10m ./internal/testmodel  # pure number crunching: -race only slows it

test-desktop-run:
	@echo "make test-desktop: $$(scripts/test-tier.sh desktop | wc -l) packages"
	$(TEST_ENV) $(GO) test -count=1 -race -timeout 45m $$(scripts/test-tier.sh desktop)

# The proof that no test depends on an idle machine: make test LOAD_RUNS
# times in a row with every core kept busy by other processes.
LOAD_RUNS ?= 3
test-load: ## make test LOAD_RUNS (3) times in a row with every core kept busy (scripts/load.sh)
	@LOAD_RUNS=$(LOAD_RUNS) scripts/load.sh $(MAKE) test

# The proof that the suite is a stranger's: a fresh clone, run from
# a desktop terminal (DISPLAY and WAYLAND_DISPLAY set to the user's own
# session), beside the user's own daemon, every core busy, LOAD_RUNS (3)
# times in a row; then the user's daemon must still be ready and have
# taken no dictation. About 30 min a run on a 2-core machine.
test-stranger: setup ## make test as a stranger runs it: fresh clone, user's DISPLAY and daemon beside it, cores busy, LOAD_RUNS (3) times (scripts/stranger.sh; REV=…)
	@LOAD_RUNS=$(LOAD_RUNS) scripts/stranger.sh $(or $(REV),HEAD)

bench: build ## yaz-decode next to whisper-cli and parakeet-cli (Parakeet 0.6B next to whisper base.en/small.en); the daemon, the gate and yaz-mcp; dictation latency, live text next to whole and eager holds; release to last character by typing route (x11, wayland, wtype, portal, and ibus on the real GNOME desk where it can run)
	$(GO) run ./scripts/bench -bin bin -whisper-cli $(WHISPER_CLI) -parakeet-cli $(PARAKEET_CLI) -jfk $(JFK) -work $(GEN)/bench
	$(GO) test -count=1 -run '^$$' -bench 'BinaryReserveRoundTrip' ./cmd/yaz-gate
	$(GO) test -count=1 -run '^$$' -bench 'DaemonRoundTrip' -benchtime 2000x ./test/e2e
	$(GO) test -count=1 -run '^$$' -bench 'DaemonIdleCPU' -benchtime 20x ./test/e2e
	$(GO) test -count=1 -run '^$$' -bench 'MCPTranscribeOverhead' -benchtime 5x ./test/e2e
	$(GO) test -count=1 -timeout 60m -run '^$$' -bench 'DictationLatency' -benchtime 3x ./test/e2e
	@# Live text (dictation.live) next to whole and eager holds on the base.en-sized model, 1 to 33 s: about 15 minutes.
	$(GO) test -count=1 -timeout 60m -run '^$$' -bench 'DictationLive' -benchtime 3x ./test/e2e
	$(GO) test -count=1 -run '^$$' -bench 'ReleaseToLastChar' -benchtime 5x ./test/e2e

demo: setup ## set up, fetch tiny.en (offline: a generated model), transcribe jfk.wav and a spoken sentence
	@$(MAKE) --no-print-directory build # after setup: the build folder it made (see test)
	@BIN=$(BIN) scripts/demo.sh

# Where install puts things; PREFIX=/usr/local make install for elsewhere,
# DESTDIR=... for a staging root.
BINDIR ?= $(PREFIX)/bin
# yaz-decode looks for the CUDA module in ../lib/yazses beside its folder.
LIBDIR ?= $(PREFIX)/lib
MANDIR ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR ?= $(or $(XDG_CONFIG_HOME),$(HOME)/.config)/systemd/user
# The .desktop file that gives the desktop portal YazSes's application id.
APPDIR ?= $(PREFIX)/share/applications
APPID := io.github.yazses.YazSes
UNIT := app-$(APPID).service
CONFDIR ?= $(or $(XDG_CONFIG_HOME),$(HOME)/.config)/yazses
# What loads the completions: the bash-completion package.
BASHCOMP_LOADER ?= /usr/share/bash-completion/bash_completion

install: build ## binaries, yaz-fetch-model, man pages, bash completion, the .desktop file, the systemd user unit, a default config (kept if present)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(addprefix $(BIN)/,$(BINS)) $(DESTDIR)$(BINDIR)/
	@if [ -f $(BIN)/yaz-ggml-cuda.so ]; then \
		install -d $(DESTDIR)$(LIBDIR)/yazses && install -C -m 0644 $(BIN)/yaz-ggml-cuda.so $(DESTDIR)$(LIBDIR)/yazses/; \
	else rm -f $(DESTDIR)$(LIBDIR)/yazses/yaz-ggml-cuda.so; fi
	sed 's/^version=.*/version=$(VERSION)/' scripts/fetch-model.sh > $(DESTDIR)$(BINDIR)/yaz-fetch-model
	chmod 0755 $(DESTDIR)$(BINDIR)/yaz-fetch-model
	@# Man pages from each program's kong model; bash completion answered by
	@# the program itself (kongplete) when bash runs it with COMP_LINE set.
	@for b in $(BINS); do \
		$(BIN)/$$b --man > $(DESTDIR)$(MANDIR)/$$b.1 || exit 1; \
		echo "complete -o default -C '$(BINDIR)/$$b' $$b" > $(DESTDIR)$(BASHCOMPDIR)/$$b; \
	done
	scripts/fetch-model.sh --completion > $(DESTDIR)$(BASHCOMPDIR)/yaz-fetch-model
	@if [ ! -f $(BASHCOMP_LOADER) ]; then \
		echo "install: bash loads the completions in $(BASHCOMPDIR) through the bash-completion package, which is missing: apt install bash-completion (dnf, pacman: bash-completion)"; fi
	$(DESTDIR)$(BINDIR)/yaz-fetch-model --man > $(DESTDIR)$(MANDIR)/yaz-fetch-model.1
	install -d $(DESTDIR)$(APPDIR)
	sed 's#@BINDIR@#$(BINDIR)#' packaging/desktop/$(APPID).desktop > $(DESTDIR)$(APPDIR)/$(APPID).desktop
	install -d $(DESTDIR)$(UNITDIR)
	@# The unit was yazsesd.service; now that is the name enabling gives it.
	@if [ -f $(DESTDIR)$(UNITDIR)/yazsesd.service ] && [ ! -L $(DESTDIR)$(UNITDIR)/yazsesd.service ]; then \
		echo "install: yazsesd.service is now $(UNIT) (enable it by that name)"; \
		rm -f $(DESTDIR)$(UNITDIR)/yazsesd.service $(DESTDIR)$(UNITDIR)/graphical-session.target.wants/yazsesd.service; \
	fi
	sed 's#%h/.local/bin/#$(BINDIR)/#' packaging/systemd/$(UNIT) > $(DESTDIR)$(UNITDIR)/$(UNIT)
	install -d -m 0700 $(DESTDIR)$(CONFDIR)
	@if [ -e $(DESTDIR)$(CONFDIR)/config.toml ]; then \
		echo "install: keeping $(CONFDIR)/config.toml"; \
	else \
		$(BIN)/yazsesd config default > $(DESTDIR)$(CONFDIR)/config.toml && chmod 0600 $(DESTDIR)$(CONFDIR)/config.toml; \
	fi
	@echo "install: systemctl --user daemon-reload && systemctl --user enable --now $(UNIT)"
	@echo "  (then systemctl --user status yazsesd, reload yazsesd … name it too)"
	@# MCP hosts: the full path (a host without ~/.local/bin in PATH fails with spawn ENOENT).
	@echo "install: MCP hosts start $(BINDIR)/yaz-mcp; give them the full path:"
	@echo "  claude mcp add yazses -- $(BINDIR)/yaz-mcp"
	@echo '  Cursor (~/.cursor/mcp.json), Claude Desktop: {"mcpServers": {"yazses": {"command": "$(BINDIR)/yaz-mcp", "args": []}}}'
	@echo '  VS Code (.vscode/mcp.json): {"servers": {"yazses": {"type": "stdio", "command": "$(BINDIR)/yaz-mcp", "args": []}}}'
	@echo '  Codex (~/.codex/config.toml): [mcp_servers.yazses] command = "$(BINDIR)/yaz-mcp"'

uninstall: ## stops the running daemon, then removes the binaries, man pages, completion, the .desktop file and the unit; your configuration and models stay
	@scripts/stop-daemon.sh $(DESTDIR)$(BINDIR)
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(BINS) yaz-fetch-model) $(DESTDIR)$(LIBDIR)/yazses/yaz-ggml-cuda.so
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNIT) yazsesd.service graphical-session.target.wants/$(UNIT) graphical-session.target.wants/yazsesd.service) $(DESTDIR)$(APPDIR)/$(APPID).desktop
	@if [ -d $(DESTDIR)$(LIBDIR)/yazses ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(LIBDIR)/yazses; fi
	rm -f $(foreach b,$(BINS) yaz-fetch-model,$(DESTDIR)$(MANDIR)/$(b).1) $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(BINS) yaz-fetch-model)

# The Debian package: the programs of make build staged as make install
# puts them under /usr, the Silero model, the copyright of everything linked
# in, dependencies from dpkg-shlibdeps (scripts/deb.sh).
deb: build test-models ## the Debian package, dist/yazses_<version>_<arch>.deb
	@BIN=$(abspath $(BIN)) VERSION=$(VERSION) VAD_MODEL=$(YAZ_TEST_MODELS)/ggml-silero-v6.2.0.bin GO=$(GO) scripts/deb.sh

# The package's files as a tarball with install.sh, for distributions
# without dpkg, and SHA256SUMS (scripts/dist.sh).
dist: deb ## dist/yazses-<version>-linux-<arch>.tar.gz with install.sh, and dist/SHA256SUMS
	@scripts/dist.sh $$(ls -t dist/yazses_*.deb | head -1)

# The package on fresh Debian 12 and 13 roots: apt installs it with its
# dependencies, and every program works there as a user starts it
# (scripts/package-test.sh; needs root and a Debian mirror).
test-package: dist ## the package installed by apt on fresh Debian 12 and 13 roots, and used there; the tarball installed and uninstalled
	@if [ "$$(id -u)" -ne 0 ]; then echo "test-package: needs root (mmdebstrap, chroot)"; exit 1; fi
	@pkg=$$(ls -t dist/yazses_*.deb | head -1); \
	lintian --fail-on error --suppress-tags hardening-no-pie,hardening-no-relro $$pkg && echo "test-package: lintian: no errors" && \
	scripts/dist-test.sh $$(ls -t dist/yazses-*.tar.gz | head -1) && \
	YAZ_VERSION=$(VERSION) GO=$(GO) scripts/package-test.sh $$pkg $(PACKAGE_SUITES)

lint:
	$(GO) vet ./...
	@command -v staticcheck >/dev/null && staticcheck ./... || $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

env: ## print the cgo settings for plain go commands: eval "$$(make -s env)"
	@echo "export C_INCLUDE_PATH=$(C_INCLUDE_PATH) LIBRARY_PATH=$(LIBRARY_PATH) YAZ_WHISPER_CLI=$(YAZ_WHISPER_CLI) YAZ_PARAKEET_CLI=$(YAZ_PARAKEET_CLI) YAZ_TEST_MODELS=$(YAZ_TEST_MODELS) YAZ_GPU=$(YAZ_GPU) YAZ_CUDA_ARCH=$(YAZ_CUDA_ARCH) YAZ_TEST_VULKAN=$(YAZ_TEST_VULKAN) YAZ_CUDA_MODULE=$(YAZ_CUDA_MODULE) YAZ_TEST_CUDA=$(YAZ_TEST_CUDA)"
	@echo "export GOFLAGS='$(GOFLAGS)'"

clean:
	rm -rf bin dist $(GEN)
