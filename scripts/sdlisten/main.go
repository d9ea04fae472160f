// Command sdlisten is the service manager's side of sd_notify, for a script
// that starts yazsesd as systemd starts a Type=notify unit: it binds a unix
// datagram socket at PATH (give it to the daemon as NOTIFY_SOCKET), says
// "listening" on stdout once it does, then writes each line of each
// datagram that comes (READY=1, STATUS=…, STOPPING=1) on stdout, and exits
// 0 after READY=1. With no READY=1 within -timeout it exits 1.
//
//	go run ./scripts/sdlisten -timeout 90s "$dir/notify"
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 90*time.Second, "how long to wait for READY=1")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sdlisten [-timeout D] PATH")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := listen(flag.Arg(0), *timeout, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sdlisten:", err)
		os.Exit(1)
	}
}

// listen binds path, says "listening" on w and writes there each line the
// daemon sends, until READY=1 (nil) or timeout (an error).
func listen(path string, timeout time.Duration, w io.Writer) error {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	defer os.Remove(path)
	out := bufio.NewWriter(w)
	fmt.Fprintln(out, "listening")
	if err := out.Flush(); err != nil {
		return err
	}
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("no READY=1 within %v", timeout)
		}
		if err != nil {
			return err
		}
		ready := false
		for _, line := range strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n") {
			fmt.Fprintln(out, line)
			ready = ready || line == "READY=1"
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if ready {
			return nil
		}
	}
}
