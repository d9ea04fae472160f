//go:build unix

package tts

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own and makes the
// context's cancel kill that whole group, so nothing espeak-ng started
// outlives it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
