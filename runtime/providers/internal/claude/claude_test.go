package claude

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestCloudBody(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		keepStream bool
		want       map[string]any
		model      string
		errParam   string
	}{
		{name: "bedrock drops model and stream", in: `{"model":"anthropic.claude-3","max_tokens":5,"stream":true,"messages":[]}`,
			want: map[string]any{"anthropic_version": "v", "max_tokens": 5.0, "messages": []any{}}, model: "anthropic.claude-3"},
		{name: "vertex keeps stream", in: `{"model":"claude-3","stream":true,"anthropic_version":"old"}`, keepStream: true,
			want: map[string]any{"anthropic_version": "v", "stream": true}, model: "claude-3"},
		{name: "no model", in: `{"messages":[]}`, errParam: "model"},
		{name: "model not a string", in: `{"model":3}`, errParam: "model"},
		{name: "not an object", in: `[1]`, errParam: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, model, err := CloudBody([]byte(tc.in), "v", tc.keepStream)
			if tc.want == nil {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.errParam {
					t.Fatalf("err = %v, want a 400 naming %q", err, tc.errParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || model != tc.model {
				t.Fatalf("got %s, %q; want %v, %q", body, model, tc.want, tc.model)
			}
		})
	}
}
