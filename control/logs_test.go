package control

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

func TestLogsScopeAndValidation(t *testing.T) {
	f := newFixture(t, Options{})
	other := &storage.Workspace{ID: uuid.NewString(), Slug: "other", OrganisationID: uuid.NewString()}
	if _, err := f.store.Workspaces.Put(other); err != nil {
		t.Fatal(err)
	}
	mine := &storage.LogEntry{WorkspaceID: f.caller.WorkspaceID, Status: 200, Model: "m", Request: json.RawMessage(`{"x":1}`)}
	theirs := &storage.LogEntry{WorkspaceID: other.ID, Status: 200, Model: "m", CreatedAt: time.Now().Add(time.Second)}
	if err := f.store.Logs.Append([]*storage.LogEntry{mine, theirs}); err != nil {
		t.Fatal(err)
	}
	ids := func(page *LogPage) []string {
		var out []string
		for _, e := range page.Entries {
			out = append(out, e.ID)
		}
		return out
	}

	page, err := f.plane.ListLogs(ctx, f.caller, LogFilter{})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != mine.ID {
		t.Fatalf("admin list = %v, %v; want only its own entry", ids(page), err)
	}
	page, err = f.plane.ListLogs(ctx, f.caller, LogFilter{AllWorkspaces: true})
	if err != nil || len(page.Entries) != 2 {
		t.Fatalf("organisation admin list = %v, %v; want both", ids(page), err)
	}
	page, err = f.plane.ListLogs(ctx, f.caller, LogFilter{AllWorkspaces: true, WorkspaceID: "other"})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != theirs.ID {
		t.Fatalf("organisation admin list of workspace other = %v, %v", ids(page), err)
	}

	got, err := f.plane.GetLog(ctx, f.caller, mine.ID)
	if err != nil || string(got.Request) != `{"x":1}` {
		t.Fatalf("GetLog = %+v, %v; want the entry with its request", got, err)
	}
	if _, err := f.plane.GetAnyLog(ctx, f.caller, theirs.ID); err != nil {
		t.Fatalf("GetAnyLog of another workspace's entry: %v", err)
	}

	tests := []struct {
		name   string
		get    func() error
		status int
		param  string
	}{
		{"another workspace's entry", func() error { _, err := f.plane.GetLog(ctx, f.caller, theirs.ID); return err }, 404, ""},
		{"not a log ID", func() error { _, err := f.plane.GetLog(ctx, f.caller, "nope"); return err }, 404, ""},
		{"another workspace's list", func() error {
			_, err := f.plane.ListLogs(ctx, f.caller, LogFilter{WorkspaceID: "other"})
			return err
		}, 403, ""},
		{"unknown workspace", func() error {
			_, err := f.plane.ListLogs(ctx, f.caller, LogFilter{AllWorkspaces: true, WorkspaceID: "nope"})
			return err
		}, 404, ""},
		{"status", func() error { _, err := f.plane.ListLogs(ctx, f.caller, LogFilter{Status: 99}); return err }, 400, "status"},
		{"limit", func() error { _, err := f.plane.ListLogs(ctx, f.caller, LogFilter{Limit: 101}); return err }, 400, "limit"},
		{"after", func() error { _, err := f.plane.ListLogs(ctx, f.caller, LogFilter{After: "file-1"}); return err }, 400, "after"},
		{"to before from", func() error {
			_, err := f.plane.ListLogs(ctx, f.caller, LogFilter{From: time.Unix(20, 0), To: time.Unix(10, 0)})
			return err
		}, 400, "to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ge *gwerr.Error
			if err := tc.get(); !errors.As(err, &ge) || ge.Status != tc.status || ge.Param != tc.param {
				t.Fatalf("error %v, want %d naming %q", err, tc.status, tc.param)
			}
		})
	}
}
