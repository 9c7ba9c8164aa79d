package routes

import (
	"bytes"
	"net/url"
	"testing"

	"github.com/google/uuid"
)

// TestWorkspaceNamesCannotBeProbed sends every endpoint that takes a workspace ID or slug from the caller
// another workspace's ID and slug, and unknown ones of the same form: the answers must be the same status and
// the same bytes once the echoed reference is blanked, so that no answer tells whether a workspace exists.
func TestWorkspaceNamesCannotBeProbed(t *testing.T) {
	f := newFixture(t, Options{})
	jsonAs := func(key string) []string {
		return []string{HeaderAPIKey, key, "Content-Type", "application/json"}
	}
	tests := []struct {
		name string
		send func(t *testing.T, ref string) answer
	}{
		{"GET policies ?workspace_id=", func(t *testing.T, ref string) answer {
			return f.do(t, "GET", policiesPath+"?workspace_id="+url.QueryEscape(ref), "", HeaderAPIKey, f.plain)
		}},
		{"POST policies workspace_id", func(t *testing.T, ref string) answer {
			return f.do(t, "POST", policiesPath, `{"type": "requests", "unit": "rpm", "value": 1, "workspace_id": "`+ref+`"}`, jsonAs(f.admin)...)
		}},
		{"POST api-keys workspace", func(t *testing.T, ref string) answer {
			return f.do(t, "POST", "/v1/api-keys", `{"workspace": "`+ref+`"}`, jsonAs(f.admin)...)
		}},
	}
	// Each pair is a reference to the other workspace and an unknown one of the same form.
	pairs := [][2]string{
		{f.other.Slug, "no-such-slug"},
		{f.other.ID, uuid.NewString()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range pairs {
				known, unknown := tc.send(t, p[0]), tc.send(t, p[1])
				if known.status < 400 {
					t.Fatalf("another workspace's %q was accepted: %d %s", p[0], known.status, known.body)
				}
				// Messages echo the reference quoted (JSON-escaped); "other" alone is also part of "another".
				kb := bytes.ReplaceAll(known.body, []byte(`\"`+p[0]+`\"`), []byte("REF"))
				ub := bytes.ReplaceAll(unknown.body, []byte(`\"`+p[1]+`\"`), []byte("REF"))
				if known.status != unknown.status || !bytes.Equal(kb, ub) {
					t.Errorf("another workspace answers %d %s\nan unknown one answers %d %s", known.status, known.body,
						unknown.status, unknown.body)
				}
			}
		})
	}
}
