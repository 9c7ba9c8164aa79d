package storage

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestResponsesRoundTripPerWorkspace(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, other := NewUUID(), NewUUID()
	r := &StoredResponse{ID: "resp_1", WorkspaceID: ws, CreatedAt: 7,
		Response: json.RawMessage(`{"id":"resp_1","object":"response"}`),
		Input:    []json.RawMessage{json.RawMessage(`{"id":"msg_1","type":"message"}`)}}
	if err := s.Responses().Put(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Responses().Get(ws, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Response) != string(r.Response) || got.CreatedAt != 7 || got.Input != nil {
		t.Fatalf("got %+v", got)
	}
	items, err := s.Responses().Input(ws, "resp_1")
	if err != nil || len(items) != 1 || string(items[0]) != `{"id":"msg_1","type":"message"}` {
		t.Fatalf("input items: %s, %v", items, err)
	}
	tests := []struct {
		name   string
		ws, id string
	}{
		{"another workspace", other, "resp_1"},
		{"unknown id", ws, "resp_2"},
		{"invalid id", ws, "resp/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Responses().Get(tc.ws, tc.id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get: %v, want ErrNotFound", err)
			}
			if _, err := s.Responses().Input(tc.ws, tc.id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Input: %v, want ErrNotFound", err)
			}
			if err := s.Responses().Delete(tc.ws, tc.id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Delete: %v, want ErrNotFound", err)
			}
		})
	}
	if err := s.Responses().Delete(ws, "resp_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Responses().Input(ws, "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("input items after delete: %v, want ErrNotFound", err)
	}
	if err := s.Responses().Put(&StoredResponse{ID: "resp_3", WorkspaceID: ws, Response: json.RawMessage(`{`)}); err == nil {
		t.Fatal("a response object that is not JSON was stored")
	}
}
