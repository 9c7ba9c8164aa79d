package bootstrap

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/gateway/runtime/jsoncheck"
)

// Problem is one thing wrong in a bootstrap file: where (a JSON path such as providers[0].custom_host) and what.
type Problem = jsoncheck.Problem

// ValidationError lists every problem found in a bootstrap file, so that one run shows them all.
type ValidationError struct {
	File     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bootstrap file %s is invalid (%d problem", e.File, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteByte('s')
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects a file's problems; object reads one entry (or a part of one) of the file.
type (
	problems = jsoncheck.Problems
	object   = jsoncheck.Object
)

var newObject = jsoncheck.NewObject

// kind names the JSON type of raw, as config errors do.
func kind(raw json.RawMessage) string { return jsoncheck.Kind(raw) }
