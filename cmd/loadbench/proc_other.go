//go:build !linux

package main

import (
	"os"
	"os/exec"
)

var terminateSignal = os.Interrupt

// setDeathSignal does nothing off Linux: children are stopped when the run ends, fails or is interrupted.
func setDeathSignal(*exec.Cmd) {}
