package control

import (
	"encoding/json"
	"testing"
)

func TestPageOf(t *testing.T) {
	items := []string{"a", "b", "c", "e"}
	id := func(s string) string { return s }
	for _, tc := range []struct {
		pg   Page
		want string
		more bool
	}{
		{Page{}, "abce", false},
		{Page{Limit: 2}, "ab", true},
		{Page{Limit: 2, After: "b"}, "ce", false},
		{Page{After: "d"}, "e", false}, // an after that is gone (deleted) still pages on
		{Page{After: "e"}, "", false},
		{Page{Limit: 3, After: "0"}, "abc", true},
	} {
		got, more := PageOf(items, id, tc.pg)
		s := ""
		for _, x := range got {
			s += x
		}
		if s != tc.want || more != tc.more {
			t.Errorf("%+v: %q %v, want %q %v", tc.pg, s, more, tc.want, tc.more)
		}
	}
}

func TestMaskValue(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"api_key", `"sk-abcdefgh1234"`, `"…1234"`},
		{"api_key", `"short"`, `"…"`},
		{"custom_host", `"http://u:pw@h/v1"`, `"http://***@h/v1"`},
		{"cloudy_service_account_json", `{"private_key": "x"}`, `"…"`},
	} {
		if got := string(maskValue(tc.name, json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestNamesProvider(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"provider": "@main"}`, true},
		{`{"targets": [{"provider": "openai"}, {"targets": [{"virtual_key": "main"}]}]}`, true},
		{`{"provider": "@mainly", "virtual_key": "other"}`, false},
		{`{"messages": [{"role": "user", "content": "@main"}]}`, false},
		{`not json`, false},
	} {
		if got := namesProvider(json.RawMessage(tc.raw), "main"); got != tc.want {
			t.Errorf("%s: %v", tc.raw, got)
		}
	}
}
