package bootstrap

import (
	"strings"
	"testing"
)

// TestCustomHostProblemRedacted: a bad custom_host is reported at its path without the password its userinfo
// holds (the message reaches the start-up log).
func TestCustomHostProblemRedacted(t *testing.T) {
	for _, host := range []string{"ftp://user:s3cret@127.0.0.1/v1", "http://user:s3/cret@127.0.0.1:1/v1"} {
		_, err := Parse([]byte(`{"providers": [{"slug": "up", "provider": "openai", "api_key": "sk", "custom_host": "`+host+`"}]}`), t.TempDir())
		ve := validationError(t, err)
		if _, ok := findProblem(ve.Problems, "providers[0].custom_host", "must be an http or https URL"); !ok {
			t.Fatalf("%s: problems %s", host, dumpProblems(ve.Problems))
		}
		for _, secret := range []string{"s3", "cret", "user"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows %q: %v", host, secret, err)
			}
		}
	}
}
