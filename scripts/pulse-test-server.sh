#!/bin/sh
# pulse-test-server.sh start|stop|env DIR
#
# Runs a private, headless PulseAudio for tests and demos, with everything it
# owns under DIR:
#
#   DIR/run       XDG_RUNTIME_DIR of the server (mode 0700); socket DIR/run/pulse/native
#   DIR/home      HOME and config of the server (never the caller's own)
#   DIR/cookie    auth cookie shared by the server and its clients
#   DIR/pulse.log the server's log
#
# It has one null sink "yaz" (16 000 Hz, mono, s16le) that is the default sink;
# its monitor "yaz.monitor" is the default source, so whatever is played into
# the default sink can be recorded, bit-exact, from the default source.
#
# start  starts the server (if it is not running already), waits until
#        `pactl info` answers, and prints the lines to export, one per line:
#            XDG_RUNTIME_DIR=DIR/run
#            PULSE_SERVER=unix:DIR/run/pulse/native
#            PULSE_COOKIE=DIR/cookie
#        e.g. `eval "$(scripts/pulse-test-server.sh start /tmp/p | sed 's/^/export /')"`.
# env    prints the same lines without starting anything.
# stop   stops the server started in DIR (no-op when none runs).
#
# Shared memory is off (--disable-shm): PulseAudio 16's memfd transport
# aborted the server here under parallel clients ("Cannot send block
# reference with non-registered memfd ID", then an assertion in
# memblock.c); copying over the socket costs nothing at 16 kHz mono.
#
# Works as root (the server runs in user mode, not --system). Nothing but the
# env lines is printed on stdout; errors go to stderr with exit status 1; a
# usage error exits 2.
set -eu

usage() {
	echo "usage: $0 start|stop|env DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
[ -n "$2" ] || usage
mkdir -p "$2"
dir=$(cd "$2" && pwd)

run=$dir/run
sock=$run/pulse/native
pidfile=$run/pulse/pid
cookie=$dir/cookie
log=$dir/pulse.log

print_env() {
	echo "XDG_RUNTIME_DIR=$run"
	echo "PULSE_SERVER=unix:$sock"
	echo "PULSE_COOKIE=$cookie"
}

# client runs a pulse client (pactl) against this server only, never
# autospawning another one.
client() {
	env XDG_RUNTIME_DIR="$run" PULSE_SERVER="unix:$sock" PULSE_COOKIE="$cookie" \
		PULSE_CLIENTCONFIG="$dir/client.conf" HOME="$dir/home" XDG_CONFIG_HOME="$dir/home/.config" \
		"$@"
}

answers() {
	[ -S "$sock" ] && client pactl info >/dev/null 2>&1
}

server_pid() {
	[ -f "$pidfile" ] || return 1
	pid=$(tr -dc 0-9 <"$pidfile")
	[ -n "$pid" ] && running "$pid" && echo "$pid"
}

start() {
	command -v pulseaudio >/dev/null 2>&1 || {
		echo "$0: pulseaudio is not installed (apt-get install pulseaudio pulseaudio-utils)" >&2
		exit 1
	}
	command -v pactl >/dev/null 2>&1 || {
		echo "$0: pactl is not installed (apt-get install pulseaudio-utils)" >&2
		exit 1
	}
	if answers; then
		print_env
		return 0
	fi
	mkdir -p "$run" "$dir/home/.config" "$dir/state"
	chmod 0700 "$run" "$dir/home"
	printf "autospawn = no\nenable-shm = no\nenable-memfd = no\n" >"$dir/client.conf"
	[ -s "$cookie" ] || head -c 256 /dev/urandom >"$cookie"
	chmod 0600 "$cookie"
	# -n: no default script, only the modules named here. The daemon forks
	# and its parent returns once the server is up (or failed).
	if ! env XDG_RUNTIME_DIR="$run" HOME="$dir/home" XDG_CONFIG_HOME="$dir/home/.config" \
		PULSE_STATE_PATH="$dir/state" PULSE_RUNTIME_PATH="$run/pulse" \
		pulseaudio -D -n --system=false --exit-idle-time=-1 --realtime=no --high-priority=no --no-cpu-limit --disable-shm=yes \
		--use-pid-file=yes --log-target="file:$log" \
		--load="module-native-protocol-unix auth-cookie=$cookie" \
		--load="module-null-sink sink_name=yaz rate=16000 channels=1 format=s16le sink_properties=device.description=yaz" \
		</dev/null >>"$log" 2>&1; then
		echo "$0: pulseaudio did not start; see $log:" >&2
		tail -n 5 "$log" >&2 || true
		exit 1
	fi
	i=0
	until answers; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "$0: pulseaudio in $dir does not answer after 10 s; see $log" >&2
			exit 1
		fi
		sleep 0.1
	done
	client pactl set-default-sink yaz >/dev/null
	client pactl set-default-source yaz.monitor >/dev/null
	print_env
}

# running reports whether pid is alive and not a zombie (an exited daemon
# waits for init to reap it, which can take seconds in a container).
running() {
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
		[ "$state" != Z ] && [ -n "$state" ]
	fi
}

stop() {
	pid=$(server_pid) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	i=0
	while running "$pid"; do
		i=$((i + 1))
		if [ $i -gt 50 ]; then
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	rm -f "$pidfile"
}

case $cmd in
start) start ;;
stop) stop ;;
env) print_env ;;
*) usage ;;
esac
