package main

import (
	"os/exec"
	"syscall"
)

var terminateSignal = syscall.SIGTERM

// setDeathSignal makes the kernel kill the child when this process dies, even by SIGKILL, so that a benchmark
// killed hard leaves no gateway or mock behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
