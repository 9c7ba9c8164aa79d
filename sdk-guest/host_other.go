//go:build !wasip1

package sdk

import (
	"os"
	"time"
)

// Native stand-ins for the host functions, so that a plugin builds and its handlers can be tested on any GOOS.

func hostLog(level Level, msg string) {
	os.Stderr.WriteString("sdk " + level.String() + ": " + msg + "\n")
}

func hostNowUnixMs() int64 { return time.Now().UnixMilli() }

func hostRequestField(string) (string, bool) { return "", false }
