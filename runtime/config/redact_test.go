package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestCustomHostErrorRedacted: a bad custom_host of an inline config is named in the error without the
// password its userinfo holds; the caller who sends a saved config's ID did not necessarily write it.
func TestCustomHostErrorRedacted(t *testing.T) {
	for _, host := range []string{"ftp://user:s3cret@127.0.0.1/v1", "http:user:s3cret@127.0.0.1"} {
		_, err := Parse([]byte(`{"targets": [{"provider": "openai", "api_key": "sk", "custom_host": "` + host + `"}]}`))
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != "targets[0].custom_host" {
			t.Fatalf("%s: %v", host, err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "user") || !strings.Contains(ge.Message, "***@127.0.0.1") {
			t.Errorf("%s: %v", host, err)
		}
	}
}
