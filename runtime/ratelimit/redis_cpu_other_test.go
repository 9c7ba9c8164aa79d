//go:build !unix

package ratelimit

import "testing"

// reportCPU reports nothing where getrusage is missing.
func reportCPU(*testing.B) func() { return func() {} }
