package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/gwerr"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/storage"
)

// The bootstrap file and the admin API accept and refuse the same providers and configs, at the same paths.
func TestBootstrapAndAPIAgree(t *testing.T) {
	st, err := storage.Open("mem", storage.Options{MasterKey: make([]byte, storage.MasterKeySize), InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := &storage.Workspace{ID: "4f0c5f1e-2b1a-4c55-9a53-5b8f4a1d9e01", Slug: "default", OrganisationID: "4f0c5f1e-2b1a-4c55-9a53-5b8f4a1d9e02"}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	p := control.New(st, nil, control.Options{})
	caller := control.Caller{WorkspaceID: ws.ID}
	firstPath := func(err error) string {
		var ve *bootstrap.ValidationError
		if errors.As(err, &ve) {
			return strings.TrimPrefix(ve.Problems[0].Path, "providers[0].")
		}
		return ""
	}
	for i, item := range []string{
		`{"slug": "p%d", "provider": "openai", "api_key": "k"}`,
		`{"slug": "p%d", "provider": "openai"}`,
		`{"slug": "p%d", "provider": "openai", "api_key": "k", "custom_host": "ftp://x"}`,
		`{"slug": "p%d", "provider": "bedrock", "cloudz_access_key_id": "a", "cloudz_secret_access_key": "s", "cloudz_region": "us-east-1"}`,
		`{"slug": "p%d", "provider": "bedrock", "cloudz_region": 3, "api_key": "k"}`,
		`{"slug": "p%d", "provider": "nope", "api_key": "k"}`,
		`{"slug": "p%d", "provider": "openai", "api_key": "k", "unknown": 1}`,
	} {
		body := fmt.Sprintf(item, i)
		_, fileErr := bootstrap.Parse([]byte(`{"providers": [`+body+`]}`), "")
		_, apiErr := p.CreateProvider(context.Background(), caller, []byte(body))
		var ge *gwerr.Error
		apiPath := ""
		if errors.As(apiErr, &ge) {
			apiPath = ge.Param
		}
		if (fileErr == nil) != (apiErr == nil) || firstPath(fileErr) != apiPath {
			t.Errorf("%s: file %v, API %v", body, fileErr, apiErr)
		}
	}
}
