package bootstrap

import (
	"testing"
)

// organisation_admin is a boolean of api_keys items: applied to the key, checked with the other fields by the
// rule the admin API uses (control.CheckAPIKey).
func TestAPIKeyOrganisationAdmin(t *testing.T) {
	st := newStore(t)
	f := mustParse(t, `{"workspaces": [{"slug": "default"}], "api_keys": [
		{"key": "gw-org-admin", "admin": true, "organisation_admin": true},
		{"key": "gw-ws-admin", "admin": true}]}`, "")
	if !f.APIKeys[0].OrganisationAdmin || f.APIKeys[1].OrganisationAdmin {
		t.Fatalf("parsed: %+v", f.APIKeys)
	}
	mustApply(t, st, f)
	for secret, want := range map[string]bool{"gw-org-admin": true, "gw-ws-admin": false} {
		k, err := st.APIKeys.Lookup(secret)
		if err != nil || !k.Admin || k.OrganisationAdmin != want {
			t.Fatalf("%s: %+v %v", secret, k, err)
		}
	}
	// taking the right away is a change, applied
	f = mustParse(t, `{"api_keys": [{"key": "gw-org-admin", "admin": true}]}`, "")
	if res := mustApply(t, st, f); res.Changed == 0 {
		t.Fatalf("revoking organisation_admin changed nothing: %+v", res)
	}
	if k, err := st.APIKeys.Lookup("gw-org-admin"); err != nil || k.OrganisationAdmin {
		t.Fatalf("after revoking: %+v %v", k, err)
	}

	tests := []struct {
		name, doc, path string
		keywords        []string
	}{
		{"not a boolean", `{"api_keys": [{"key": "gw-secret-1", "admin": true, "organisation_admin": "yes"}]}`,
			"api_keys[0].organisation_admin", []string{"must be a boolean"}},
		{"without admin", `{"api_keys": [{"key": "gw-secret-1", "organisation_admin": true}]}`,
			"api_keys[0].organisation_admin", []string{"admin"}},
		{"name with a control character", `{"api_keys": [{"key": "gw-secret-1", "name": "a\u0007b"}]}`,
			"api_keys[0].name", []string{"control characters"}},
		{"workspace name with a control character", `{"workspaces": [{"slug": "w", "name": "a\u0007b"}]}`,
			"workspaces[0].name", []string{"control characters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "")
			ve := validationError(t, err)
			if _, ok := findProblem(ve.Problems, tc.path, tc.keywords...); !ok {
				t.Fatalf("no problem at %s with %v: %s", tc.path, tc.keywords, dumpProblems(ve.Problems))
			}
		})
	}
}
