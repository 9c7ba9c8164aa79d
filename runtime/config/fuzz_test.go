package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzParse from validConfigs and invalidConfigs")

// FuzzParse: Parse never panics and is deterministic. An error is a *gwerr.Error with status 400 whose Param
// names the field (empty only when the body as a whole is wrong) and whose message starts with that path; an
// accepted config compiles, with canonical providers, capped retries and well-formed node paths. Seeds are in
// testdata/fuzz/FuzzParse (regenerate with go test ./runtime/config/ -run TestFuzzSeeds -update-seeds).
func FuzzParse(f *testing.F) {
	f.Add([]byte(fallbackConfig))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("error is a %T, not a *gwerr.Error: %v", err, err)
			}
			if ge.Status != 400 || c != nil {
				t.Fatalf("status %d, config %v: %v", ge.Status, c, err)
			}
			if ge.Param == "" && !wholeBodyBad(data, ge) {
				t.Fatalf("error without Param for a body that is a JSON object: %v", err)
			}
			if ge.Code == CodeInvalidConfig {
				want := "invalid config: "
				if ge.Param != "" {
					want += ge.Param + ": "
				}
				if !strings.HasPrefix(ge.Message, want) {
					t.Fatalf("message %q does not start with %q", ge.Message, want)
				}
			}
			if _, again := Parse(data); again == nil || again.Error() != err.Error() {
				t.Fatalf("Parse is not deterministic: %v, then %v", err, again)
			}
			return
		}
		p, err := Compile(c, data)
		if err != nil {
			t.Fatalf("Parse accepted a config that Compile refuses: %v", err)
		}
		checkNode(t, p.Root, "config", 0)
	})
}

// wholeBodyBad reports whether the error is about the body as a whole: not JSON, not an object, or a top-level
// object without any key set.
func wholeBodyBad(data []byte, ge *gwerr.Error) bool {
	var top any
	if json.Unmarshal(data, &top) != nil {
		return true
	}
	if _, isObject := top.(map[string]any); !isObject {
		return true
	}
	return strings.Contains(ge.Message, "the config has none of the key sets")
}

var pathRE = regexp.MustCompile(`^config(\.targets\[\d+\])*$`)

func checkNode(t *testing.T, n *Node, path string, depth int) {
	t.Helper()
	if n.Path != path || !pathRE.MatchString(n.Path) || depth > MaxDepth {
		t.Fatalf("node path %q at depth %d, want %q", n.Path, depth, path)
	}
	if n.Provider != "" && !strings.HasPrefix(n.Provider, "@") {
		if id, ok := providers.Canonical(n.Provider); !ok || id != n.Provider {
			t.Fatalf("%s: provider %q is not canonical", n.Path, n.Provider)
		}
	}
	if n.Retry != nil && (n.Retry.Attempts < 0 || n.Retry.Attempts > MaxRetryAttempts) {
		t.Fatalf("%s: retry attempts %d", n.Path, n.Retry.Attempts)
	}
	if len(n.Weights) != len(n.Children) {
		t.Fatalf("%s: %d weights for %d children", n.Path, len(n.Weights), len(n.Children))
	}
	for _, c := range n.Conditions {
		if c.Next < 0 || c.Next >= len(n.Children) || c.Match == nil {
			t.Fatalf("%s: condition %+v", n.Path, c)
		}
	}
	if n.Mode == ModeConditional && (n.DefaultNext < 0 || n.DefaultNext >= len(n.Children)) {
		t.Fatalf("%s: default %d", n.Path, n.DefaultNext)
	}
	for i, c := range n.Children {
		checkNode(t, c, fmt.Sprintf("%s.targets[%d]", path, i), depth+1)
	}
}

// TestFuzzSeeds checks that the seed corpus holds every table example; with -update-seeds it rewrites it.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	seeds := map[string]string{}
	name := func(prefix, s string) string {
		return prefix + "-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
	}
	for _, tc := range validConfigs {
		if len(tc.json) < 4096 {
			seeds[name("valid", tc.name)] = tc.json
		}
	}
	for _, tc := range invalidConfigs {
		if len(tc.json) < 4096 {
			seeds[name("invalid", tc.name)] = tc.json
		}
	}
	for file, body := range seeds {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", body)
		path := filepath.Join(dir, file)
		if *updateSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("seed %s is missing or stale; run go test ./runtime/config/ -run TestFuzzSeeds -update-seeds", path)
		}
	}
}
