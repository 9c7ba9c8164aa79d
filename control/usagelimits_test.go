package control

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

func TestUsageLimitLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	pol, err := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"name": "team", "type": "cost", "credit_limit": 10,
		"alert_threshold": 8, "periodic_reset": "monthly", "group_by": [{"key": "api_key"}],
		"object": "policy_usage_limits", "current_usage": 3, "usage_by_group": [], "period_start": 1, "period_end": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if pol.Type != "cost" || pol.CreditLimit != 10 || *pol.AlertThreshold != 8 || *pol.PeriodicReset != "monthly" ||
		pol.Status != "active" || pol.WorkspaceID != f.caller.WorkspaceID {
		t.Fatalf("created %+v", pol)
	}
	// A null periodic_reset never resets; "exhausted" sent back (as the view shows it) stores active.
	upd, err := f.plane.UpdateUsageLimit(ctx, f.caller, pol.ID, fields(t, `{"periodic_reset": null, "credit_limit": 20, "status": "exhausted"}`))
	if err != nil {
		t.Fatal(err)
	}
	if upd.PeriodicReset != nil || upd.CreditLimit != 20 || upd.Status != "active" || *upd.AlertThreshold != 8 || upd.Name == nil {
		t.Fatalf("updated %+v", upd)
	}
	if _, err := f.plane.UpdateUsageLimit(ctx, f.caller, pol.ID, fields(t, `{"status": "archived"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status string
		want   int
	}{{"", 0}, {"archived", 1}, {"active", 0}} {
		if _, total, err := f.plane.ListUsageLimits(ctx, f.caller, UsageLimitFilter{Status: tc.status}); err != nil || total != tc.want {
			t.Fatalf("list status %q: %d %v, want %d", tc.status, total, err, tc.want)
		}
	}
	if id, err := f.plane.DeleteUsageLimit(ctx, f.caller, pol.ID); err != nil || id != pol.ID {
		t.Fatalf("delete: %q %v", id, err)
	}
	if _, err := f.plane.GetUsageLimit(ctx, f.caller, pol.ID); status(err) != 404 {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestUsageLimitListFiltersExhausted(t *testing.T) {
	f := newFixture(t, Options{})
	a, _ := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"type": "tokens", "credit_limit": 1}`))
	b, _ := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"type": "cost", "credit_limit": 1}`))
	spent := func(p *storage.UsageLimitPolicy) bool { return p.ID == a.ID }
	tests := []struct {
		name string
		f    UsageLimitFilter
		want []string
	}{
		{"not archived", UsageLimitFilter{Exhausted: spent}, []string{a.ID, b.ID}},
		{"exhausted", UsageLimitFilter{Status: "exhausted", Exhausted: spent}, []string{a.ID}},
		{"active", UsageLimitFilter{Status: "active", Exhausted: spent}, []string{b.ID}},
		{"type", UsageLimitFilter{Type: "cost"}, []string{b.ID}},
		{"paged", UsageLimitFilter{Paged: true, PageSize: 1, Page: 1}, []string{b.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, _, err := f.plane.ListUsageLimits(ctx, f.caller, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range page {
				got = append(got, p.ID)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, _, err := f.plane.ListUsageLimits(ctx, f.caller, UsageLimitFilter{Workspace: "elsewhere"}); status(err) != 404 {
		t.Fatalf("another workspace filter: %v", err)
	}
}

func TestUsageLimitValidationNamesTheField(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct{ body, param string }{
		{`{"credit_limit": 5}`, "type"},
		{`{"type": "dollars", "credit_limit": 5}`, "type"},
		{`{"type": "cost"}`, "credit_limit"},
		{`{"type": "cost", "credit_limit": 0}`, "credit_limit"},
		{`{"type": "cost", "credit_limit": "5"}`, "credit_limit"},
		{`{"type": "cost", "credit_limit": 5, "alert_threshold": 6}`, "alert_threshold"},
		{`{"type": "cost", "credit_limit": 5, "alert_threshold": 0}`, "alert_threshold"},
		{`{"type": "cost", "credit_limit": 5, "periodic_reset": "daily"}`, "periodic_reset"},
		{`{"type": "cost", "credit_limit": 5, "status": "paused"}`, "status"},
		{`{"type": "cost", "credit_limit": 5, "conditions": [{"key": "colour", "value": "x"}]}`, "conditions[0].key"},
		{`{"type": "cost", "credit_limit": 5, "group_by": [{"key": ""}]}`, "group_by[0].key"},
		{`{"type": "cost", "credit_limit": 5, "id": "not-a-uuid"}`, "id"},
		{`{"type": "cost", "credit_limit": 5, "workspace": "default"}`, "workspace"},
		{`{"type": "cost", "credit_limit": 5, "workspace_id": "other"}`, "workspace_id"},
		{`{"type": "cost", "credit_limit": 5, "colour": 1}`, "colour"},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			_, err := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
				t.Fatalf("err %v (param %q), want 400 naming %q", err, paramOf(ge), tc.param)
			}
		})
	}
}

func paramOf(ge *gwerr.Error) string {
	if ge == nil {
		return ""
	}
	return ge.Param
}

func TestUsageLimitOfAnotherWorkspace(t *testing.T) {
	f := newFixture(t, Options{})
	other := &storage.Workspace{ID: uuid.NewString(), Slug: "other", OrganisationID: uuid.NewString()}
	if _, err := f.store.Workspaces.Put(other); err != nil {
		t.Fatal(err)
	}
	theirs := Caller{WorkspaceID: other.ID}
	pol, err := f.plane.CreateUsageLimit(ctx, theirs, fields(t, `{"type": "tokens", "credit_limit": 100}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.plane.GetUsageLimit(ctx, f.caller, pol.ID); status(err) != 404 {
		t.Fatalf("get: %v", err)
	}
	if _, err := f.plane.UpdateUsageLimit(ctx, f.caller, pol.ID, fields(t, `{"credit_limit": 1}`)); status(err) != 404 {
		t.Fatalf("update: %v", err)
	}
	if _, err := f.plane.DeleteUsageLimit(ctx, f.caller, pol.ID); status(err) != 404 {
		t.Fatalf("delete: %v", err)
	}
	// ids are unique across workspaces
	if _, err := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"id": "`+pol.ID+`", "type": "tokens", "credit_limit": 1}`)); status(err) != 409 {
		t.Fatalf("same id elsewhere: %v", err)
	}
}
