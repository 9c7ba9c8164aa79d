package main

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// TestFirstStartKey starts the binary on an empty data folder with and without a bootstrap file: the first
// start prints an admin key only when, once the bootstrap file is applied, no admin key exists.
func TestFirstStartKey(t *testing.T) {
	const (
		teamID = "44444444-4444-4444-8444-444444444444"
		orgID  = "55555555-5555-4555-8555-555555555555"
	)
	tests := []struct {
		name      string
		bootstrap string // "" for none
		wantKey   bool   // a new admin key is printed
		wantSlugs []string
		wantKeys  int // keys in the store after the start
	}{
		{name: "no bootstrap file", wantKey: true, wantSlugs: []string{"default"}, wantKeys: 1},
		{name: "bootstrap file with an admin key",
			bootstrap: `{"workspaces": [{"id": "` + teamID + `", "slug": "team", "organisation_id": "` + orgID + `"}],
			  "api_keys": [{"key": "gw-boot-admin", "workspace": "team", "admin": true},
			               {"key": "gw-boot-plain", "workspace": "team"}]}`,
			wantSlugs: []string{"team"}, wantKeys: 2},
		{name: "bootstrap file without admin keys",
			bootstrap: `{"workspaces": [{"id": "` + teamID + `", "slug": "team", "organisation_id": "` + orgID + `"}],
			  "api_keys": [{"key": "gw-boot-plain", "workspace": "team"}]}`,
			wantKey: true, wantSlugs: []string{"default", "team"}, wantKeys: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			args := []string{"--listen", "127.0.0.1:0", "--data", data}
			if tc.bootstrap != "" {
				args = append(args, "--bootstrap", writeFile(t, dir, "bootstrap.json", tc.bootstrap))
			}
			p := startGateway(t, nil, args...)
			if p.base == "" {
				t.Fatalf("gateway exited: %v", p.err)
			}
			// stdout and stderr reach the test through two pipes: a key printed before the listening line may
			// arrive after it, so wait for it, and judge its absence only once the process has exited.
			if tc.wantKey {
				key := waitForKey(t, p)
				defer assertNotOnDisk(t, data, key)
				if !strings.Contains(p.stdout.String(), "curl -s "+p.base+"/v1/api-keys -H 'x-gateway-api-key: "+key+"'") {
					t.Errorf("first start printed no ready-to-paste curl line:\n%s", p.stdout)
				}
				if !strings.Contains(p.stdout.String(), p.base+"/console") {
					t.Errorf("first start did not say where the console is:\n%s", p.stdout)
				}
				// Listing keys needs the admin right.
				if status, body, _ := call(t, "GET", p.base+"/v1/api-keys", key, ""); status != 200 {
					t.Fatalf("the printed key cannot manage keys: %d %v", status, body)
				}
				// It is an organisation admin too: it manages workspaces.
				if status, body, _ := call(t, "GET", p.base+"/v1/workspaces", key, ""); status != 200 {
					t.Fatalf("the printed key cannot list workspaces: %d %v", status, body)
				}
			} else if status, body, _ := call(t, "GET", p.base+"/v1/api-keys", "gw-boot-admin", ""); status != 200 {
				t.Fatalf("the bootstrap file's admin key: %d %v", status, body)
			}
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit code after SIGTERM = %d", code)
			}
			out := p.stdout.String()
			want := 0
			if tc.wantKey {
				want = 1
			}
			if n := len(printedKey.FindAllString(out, -1)); n != want {
				t.Fatalf("printed %d keys, want %d:\n%s", n, want, out)
			}
			if !tc.wantKey && strings.Contains(out, "First start") {
				t.Fatalf("printed a first-start message although the bootstrap file has an admin key:\n%s", out)
			}
			slugs, n := storeContents(t, data)
			if !slices.Equal(slugs, tc.wantSlugs) || n != tc.wantKeys {
				t.Fatalf("store holds workspaces %v and %d keys; want %v and %d", slugs, n, tc.wantSlugs, tc.wantKeys)
			}

			// A later start prints nothing, whatever the first one did.
			p2 := startGateway(t, nil, args...)
			if p2.base == "" {
				t.Fatalf("restart failed: %v", p2.err)
			}
			p2.stop(t, syscall.SIGTERM)
			if printedKey.MatchString(p2.stdout.String()) {
				t.Fatalf("restart printed a key:\n%s", p2.stdout)
			}
		})
	}
}

// storeContents opens a stopped gateway's store and returns its workspaces' slugs (sorted) and how many API
// keys it holds in all.
func storeContents(t *testing.T, data string) (slugs []string, keys int) {
	t.Helper()
	master, _, err := storage.LoadOrCreateMasterKeyFile(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := storage.Open(filepath.Join(data, "db"), storage.Options{MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wss, err := s.Workspaces.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range wss {
		slugs = append(slugs, ws.Slug)
		list, err := s.APIKeys.List(ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		keys += len(list)
	}
	slices.Sort(slugs)
	return slugs, keys
}

// waitForKey returns the first-start key the gateway printed, waiting for stdout to catch up with stderr.
func waitForKey(t *testing.T, p *gatewayProc) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := printedKey.FindStringSubmatch(p.stdout.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no key printed:\n%s", p.stdout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
