package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCacheNamespaceIgnoresMetadataFields: with x-gateway-cache-namespace, requests that differ only in
// metadata share one answer, also when the metadata fills a body field (_user fills "user"). A "user" the
// caller sends is part of the body and stays in the key; without a namespace the metadata splits the cache.
func TestCacheNamespaceIgnoresMetadataFields(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, countingAnswers)
	h := append([]string{HeaderConfig, cacheConfig("simple", 60)}, upstreamHeaders(up)...)
	withUser := func(ns, user string) []string {
		out := append([]string{HeaderMetadata, `{"_user":"` + user + `"}`}, h...)
		if ns != "" {
			out = append(out, HeaderCacheNamespace, ns)
		}
		return out
	}
	tests := []struct {
		name       string
		body       string
		headers    []string
		status     string
		text       string
		sentUser   string // the "user" the upstream got, when it was called
		wantCalled bool
	}{
		{"namespace, first user", chatBody, withUser("ns1", "u1"), "MISS", "answer 1", "u1", true},
		{"namespace, another user", chatBody, withUser("ns1", "u2"), "HIT", "answer 1", "", false},
		{"namespace, no metadata", chatBody, append([]string{HeaderCacheNamespace, "ns1"}, h...), "HIT", "answer 1", "", false},
		{"namespace, the caller's own user", `{"model":"gpt-4o-mini","user":"u3","messages":[{"role":"user","content":"Hi"}]}`,
			withUser("ns1", "u1"), "MISS", "answer 2", "u3", true},
		{"no namespace, first user", chatBody, withUser("", "u1"), "MISS", "answer 3", "u1", true},
		{"no namespace, another user", chatBody, withUser("", "u2"), "MISS", "answer 4", "u2", true},
		{"no namespace, the first user again", chatBody, withUser("", "u1"), "HIT", "answer 3", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := up.calls.Load()
			a := f.chat(t, tc.body, tc.headers...)
			if got := content(t, a); got != tc.text || a.header.Get(HeaderCacheStatus) != tc.status {
				t.Fatalf("answer %q with cache status %q; want %q, %q", got, a.header.Get(HeaderCacheStatus), tc.text, tc.status)
			}
			if called := up.calls.Load() != before; called != tc.wantCalled {
				t.Fatalf("upstream called: %v, want %v", called, tc.wantCalled)
			}
			if tc.wantCalled {
				_, sent := up.lastRequest()
				var req struct {
					User string `json:"user"`
				}
				json.Unmarshal([]byte(sent), &req)
				if req.User != tc.sentUser {
					t.Fatalf("upstream got user %q, want %q: %s", req.User, tc.sentUser, sent)
				}
			}
		})
	}
}

// TestSemanticCacheNamespaceIgnoresMetadataFields is the same for the semantic cache's partitions: a reworded
// question under the same namespace is a semantic hit whoever _user is.
func TestSemanticCacheNamespaceIgnoresMetadataFields(t *testing.T) {
	f, _ := newLimitedFixture(t)
	var chats atomic.Int64
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			var req struct {
				Model string `json:"model"`
				Input string `json:"input"`
			}
			_, body := up.lastRequest()
			json.Unmarshal([]byte(body), &req)
			vec, _ := json.Marshal(bagOfWords(req.Input))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":%s}],"model":%q,"usage":{"prompt_tokens":3,"total_tokens":3}}`, vec, req.Model)
			return
		}
		countingAnswers(w, r, chats.Add(1))
	})
	ask := func(question, user string) answer {
		h := append([]string{HeaderConfig, cacheConfig("semantic", 0), HeaderCacheNamespace, "ns1",
			HeaderMetadata, `{"_user":"` + user + `"}`}, upstreamHeaders(up)...)
		return f.chat(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":`+strconvQuote(question)+`}]}`, h...)
	}
	a := ask("What is the capital of France?", "u1")
	if a.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("first: %q", a.header.Get(HeaderCacheStatus))
	}
	first := content(t, a)
	a = ask("what is the capital of france", "u2")
	if got := content(t, a); got != first || a.header.Get(HeaderCacheStatus) != "SEMANTIC HIT" {
		t.Fatalf("reworded question of another _user: %q with %q; want %q with SEMANTIC HIT", got,
			a.header.Get(HeaderCacheStatus), first)
	}
	if n := chats.Load(); n != 1 {
		t.Fatalf("chat completions called %d times, want 1", n)
	}
}
