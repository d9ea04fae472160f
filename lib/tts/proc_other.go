//go:build !unix

package tts

import "os/exec"

// setProcessGroup keeps exec's default (kill the process) where there are no
// Unix process groups.
func setProcessGroup(*exec.Cmd) {}
