package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

func TestResponsesStoreChainAndList(t *testing.T) {
	f := newFixture(t, Options{})
	turn1 := raws(`{"type":"message","role":"user","content":"one"}`)
	obj := `{"id":"resp_a","object":"response","created_at":5,"output":[{"id":"msg_out","type":"message","role":"assistant","content":[{"type":"output_text","text":"two"}]}]}`
	if err := f.plane.StoreResponse(ctx, f.caller, json.RawMessage(obj), turn1); err != nil {
		t.Fatal(err)
	}
	got, err := f.plane.Response(ctx, f.caller, "resp_a")
	if err != nil || string(got) != obj {
		t.Fatalf("Response: %s, %v", got, err)
	}
	chained, err := f.plane.ChainInput(ctx, f.caller, "resp_a", raws(`{"type":"message","role":"user","content":"three"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(chained) != 3 || !strings.Contains(string(chained[0]), "one") || !strings.Contains(string(chained[1]), "msg_out") ||
		!strings.Contains(string(chained[2]), "three") {
		t.Fatalf("chained input: %s", chained)
	}
	if err := f.plane.StoreResponse(ctx, f.caller, json.RawMessage(`{"id":"resp_b","output":[]}`), chained); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		q       InputItemsQuery
		ids     []string
		hasMore bool
		param   string
	}{
		{"default newest first", InputItemsQuery{}, []string{"item_b_2", "msg_out", "item_b_0"}, false, ""},
		{"ascending", InputItemsQuery{Order: "asc"}, []string{"item_b_0", "msg_out", "item_b_2"}, false, ""},
		{"a page", InputItemsQuery{Order: "asc", Limit: 1}, []string{"item_b_0"}, true, ""},
		{"after", InputItemsQuery{Order: "asc", After: "item_b_0"}, []string{"msg_out", "item_b_2"}, false, ""},
		{"limit too big", InputItemsQuery{Limit: 101}, nil, false, "limit"},
		{"bad order", InputItemsQuery{Order: "up"}, nil, false, "order"},
		{"unknown after", InputItemsQuery{After: "nope"}, nil, false, "after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, err := f.plane.ResponseInputItems(ctx, f.caller, "resp_b", tc.q)
			if tc.param != "" {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Param != tc.param {
					t.Fatalf("err %v, want a 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, item := range list.Data {
				var head struct{ ID string }
				if err := json.Unmarshal(item, &head); err != nil {
					t.Fatalf("item %s: %v", item, err)
				}
				ids = append(ids, head.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || list.HasMore != tc.hasMore ||
				*list.FirstID != tc.ids[0] || *list.LastID != tc.ids[len(tc.ids)-1] {
				t.Fatalf("page %v more %v, want %v more %v", ids, list.HasMore, tc.ids, tc.hasMore)
			}
		})
	}

	other := Caller{WorkspaceID: uuid.NewString()}
	notFound := func(name string, err error, param string) {
		t.Helper()
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != http.StatusNotFound || ge.Param != param {
			t.Fatalf("%s: %v, want 404 naming %q", name, err, param)
		}
	}
	_, err = f.plane.Response(ctx, other, "resp_a")
	notFound("another workspace's response", err, "")
	_, err = f.plane.ChainInput(ctx, other, "resp_a", nil)
	notFound("chaining from another workspace's response", err, "previous_response_id")
	notFound("deleting another workspace's response", f.plane.DeleteResponse(ctx, other, "resp_a"), "")
	if err := f.plane.DeleteResponse(ctx, f.caller, "resp_a"); err != nil {
		t.Fatal(err)
	}
	_, err = f.plane.ResponseInputItems(ctx, f.caller, "resp_a", InputItemsQuery{})
	notFound("input items of a deleted response", err, "")
}
