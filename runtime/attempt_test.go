package runtime

import (
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"ms", map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond, true},
		{"azure ms", map[string]string{"X-Ms-Retry-After-Ms": "20"}, 20 * time.Millisecond, true},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{"ms wins over seconds", map[string]string{"Retry-After": "2", "Retry-After-Ms": "5"}, 5 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffCap(t *testing.T) {
	want := []time.Duration{250, 500, 1000, 2000, 4000, 8000, 8000, 8000}
	for i, w := range want {
		if got := backoffCap(i) - 1; got != w*time.Millisecond {
			t.Errorf("retry %d: cap %v, want %v", i, got, w*time.Millisecond)
		}
	}
}

func TestShouldRetry(t *testing.T) {
	def := &config.Retry{Attempts: 2}
	only408 := &config.Retry{Attempts: 2, OnStatusCodes: []int{408}}
	tests := []struct {
		name  string
		retry *config.Retry
		out   *outcome
		want  bool
	}{
		{"503 by default", def, &outcome{status: 503}, true},
		{"429 by default", def, &outcome{status: 429}, true},
		{"400 never by default", def, &outcome{status: 400}, false},
		{"transport error", def, &outcome{err: &gwerr.Error{Status: 502, Code: gwerr.CodeUpstream}}, true},
		{"timeout not by default", def, &outcome{err: &gwerr.Error{Status: 408, Code: gwerr.CodeRequestTimeout}}, false},
		{"timeout when listed", only408, &outcome{err: &gwerr.Error{Status: 408, Code: gwerr.CodeRequestTimeout}}, true},
		{"refused host never", def, &outcome{err: &gwerr.Error{Status: 400, Code: "host_not_allowed"}}, false},
		{"listed codes only", only408, &outcome{status: 503}, false},
	}
	for _, tc := range tests {
		if got := shouldRetry(tc.retry, tc.out); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
