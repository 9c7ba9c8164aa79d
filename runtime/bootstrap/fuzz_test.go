package bootstrap

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

// FuzzParse: Parse never panics; it returns either a *File or a *ValidationError that names each problem; a
// file it accepts applies to an empty store without any error but a *ValidationError (a workspace reference),
// and applying it again changes nothing. Seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(`{"providers": [{"slug": "p", "provider": "llmvendor", "api_key": "k"}]}`))
	dir := exampleDir(f) // Parse only reads it, so every input shares it
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, dir)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse error is a %T, not a *ValidationError: %v", err, err)
			}
			if file != nil {
				t.Fatalf("Parse returned a *File beside its error %v", err)
			}
			if len(ve.Problems) == 0 {
				t.Fatalf("ValidationError without problems")
			}
			msg := ve.Error()
			for _, p := range ve.Problems {
				// The one empty path: an unknown section named "" (regression seed 898242f690920d21), whose
				// path is its name. It reads oddly (": unknown section ...") but names the problem.
				if p.Message == "" || (p.Path == "" && !strings.HasPrefix(p.Message, "unknown section")) {
					t.Fatalf("problem without path or message: %+v", p)
				}
				if !strings.Contains(msg, p.String()) {
					t.Fatalf("Error() does not show %q", p.String())
				}
			}
			return
		}
		if file == nil {
			t.Fatal("Parse returned neither a *File nor an error")
		}
		for _, p := range file.Providers {
			if id, ok := providers.Canonical(p.Provider); !ok || id != p.Provider {
				t.Fatalf("%s: provider %q is not a canonical identifier", p.Path, p.Provider)
			}
		}
		for _, p := range file.Prompts {
			published := 0
			for i, v := range p.Versions {
				if v.Version != i+1 {
					t.Fatalf("%s: version %d numbered %d", p.Path, i, v.Version)
				}
				if v.Published {
					published++
				}
			}
			if len(p.Versions) == 0 || published > 1 {
				t.Fatalf("%s: %d versions, %d published", p.Path, len(p.Versions), published)
			}
		}
		for _, p := range file.RateLimitPolicies {
			if p.Value <= 0 || p.Status == "" {
				t.Fatalf("%s: accepted value %v, status %q", p.Path, p.Value, p.Status)
			}
		}

		st := newStore(t)
		res, err := Apply(st, file)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("a file that Parse accepted fails to apply to an empty store: %v", err)
			}
			if ws, _ := st.Workspaces.List(); len(ws) != 0 || res != (Result{}) {
				t.Fatalf("Apply refused the file (%v) but wrote %d workspaces, result %+v", err, len(ws), res)
			}
			return
		}
		before := dumpStore(t, st)
		again, err := Apply(st, file)
		if err != nil {
			t.Fatalf("second Apply: %v", err)
		}
		if again.Changed != 0 {
			t.Fatalf("second Apply of the same file = %+v, want Changed 0 (first: %+v)", again, res)
		}
		if after := dumpStore(t, st); !reflect.DeepEqual(before, after) {
			t.Fatalf("second Apply changed the store")
		}
	})
}
