package control

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func status(err error) int {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge.Status
	}
	return 0
}

func template(content string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": content}}})
	return b
}

// Versions added at once get distinct numbers, 2 to n+1, none lost.
func TestPromptVersionsHammer(t *testing.T) {
	f := newFixture(t, Options{})
	if _, err := f.plane.CreatePrompt(ctx, f.caller, NewPrompt{ID: json.RawMessage(`"welcome"`), Template: template("v1")}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := f.plane.AddPromptVersion(ctx, f.caller, "welcome", NewPromptVersion{Template: template("vx")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	p, err := f.plane.GetPrompt(ctx, f.caller, "welcome")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, v := range p.Versions {
		got = append(got, v.Version)
	}
	slices.Sort(got)
	if len(got) != n+1 || got[0] != 1 || got[n] != n+1 || len(slices.Compact(got)) != n+1 {
		t.Fatalf("versions %v, want 1 to %d once each", got, n+1)
	}
}

// PromptTemplate follows the writes: a published version, a prompt deleted.
func TestPromptTemplateFollowsWrites(t *testing.T) {
	f := newFixture(t, Options{})
	model := func(ref string) (string, int) {
		tmpl, _, err := f.plane.PromptTemplate(f.caller.WorkspaceID, ref)
		if err != nil {
			return "", status(err)
		}
		b, err := tmpl.Render(map[string]any{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), 200
	}
	if _, err := f.plane.CreatePrompt(ctx, f.caller, NewPrompt{ID: json.RawMessage(`"p"`), Template: template("one")}); err != nil {
		t.Fatal(err)
	}
	first, _ := model("p")
	if _, err := f.plane.AddPromptVersion(ctx, f.caller, "p", NewPromptVersion{Template: template("two"), Publish: json.RawMessage(`true`)}); err != nil {
		t.Fatal(err)
	}
	if second, _ := model("p"); second == first {
		t.Fatalf("after publishing version 2, p still renders %s", second)
	}
	if _, err := f.plane.PublishPromptVersion(ctx, f.caller, "p", 1); err != nil {
		t.Fatal(err)
	}
	if again, _ := model("p"); again != first {
		t.Fatalf("after publishing version 1 again, p renders %s, want %s", again, first)
	}
	if err := f.plane.DeletePrompt(ctx, f.caller, "p"); err != nil {
		t.Fatal(err)
	}
	if _, st := model("p"); st != 404 {
		t.Fatalf("a deleted prompt answers %d, want 404", st)
	}
}
