package vertex

import (
	"context"
	"testing"
	"time"
)

// BenchmarkNewRequestCachedToken is the hot path of a service account target: translation, URL and a cached
// access token (one SHA-256 of the key file to find it).
func BenchmarkNewRequestCachedToken(b *testing.B) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(b, clock)
	a := New()
	a.now = clock.Now
	tg := newTarget("http://vertex.test", fields(b, "cloudy_region", "us-central1",
		"cloudy_service_account_json", serviceAccountJSON(b, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com")), nil)
	ctx := context.Background()
	if _, err := a.NewRequest(ctx, tg, chatCall); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.NewRequest(ctx, tg, chatCall); err != nil {
			b.Fatal(err)
		}
	}
}
