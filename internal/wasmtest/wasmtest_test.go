package wasmtest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

// The guest in testdata/guest exercises sdk-guest inside wasm; these tests prove the SDK's exports, imports,
// buffers and panic recovery end to end.

func data(t *testing.T, out hostapi.Output) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(out.Data, &m); err != nil {
		t.Fatalf("Data %q: %v", out.Data, err)
	}
	return m
}

func param(do string) []hostapi.KV { return []hostapi.KV{{Key: "do", Value: `"` + do + `"`}} }

func TestGuest(t *testing.T) {
	p := Instantiate(t, Build(t, "testdata/guest"))

	t.Run("echo", func(t *testing.T) {
		in := &hostapi.Input{
			Text: "héllo", Model: "gpt-4o-mini", CheckID: "test.echo", Stage: "before", Endpoint: "chat",
			Metadata: []hostapi.KV{{Key: "user", Value: "u1"}, {Key: "team", Value: "t"}},
			Params: append(param("echo"), hostapi.KV{Key: "words", Value: ` ["a", "b\u00e9\n"] `},
				hostapi.KV{Key: "limit", Value: "1e2"}, hostapi.KV{Key: "strict", Value: "true"}),
		}
		out := p.MustCall(t, hostapi.KindCheck, in, nil)
		if !out.Verdict || out.Error != "" {
			t.Fatalf("out = %+v", out)
		}
		got, _ := json.Marshal(data(t, out))
		want := `{"check_id":"test.echo","endpoint":"chat","limit":100,"limit_int":100,"mcp_server":"","metadata_keys":["user","team"],"model":"gpt-4o-mini","params":["do","words","limit","strict"],"stage":"before","strict":true,"text_len":6,"tool":"","tool_call":false,"user":"u1","words":["a","bé\n"]}`
		if string(got) != want {
			t.Fatalf("data\n got %s\nwant %s", got, want)
		}
	})

	t.Run("tool call", func(t *testing.T) {
		in := &hostapi.Input{Text: `{"q":"x"}`, CheckID: "test.echo", Stage: "after", Endpoint: "mcp", Tool: "search", MCPServer: "docs", Params: param("echo")}
		m := data(t, p.MustCall(t, hostapi.KindCheck, in, nil))
		if m["tool"] != "search" || m["mcp_server"] != "docs" || m["tool_call"] != true || m["stage"] != "after" || m["endpoint"] != "mcp" {
			t.Fatalf("data = %v", m)
		}
	})

	t.Run("host functions", func(t *testing.T) {
		now := time.UnixMilli(1_700_000_000_123)
		big := `[` + strings.Repeat(`{"role":"user","content":"xxxxxxxx"},`, 200) + `{}]`
		host := &Host{Now: now, Fields: map[string]string{"params.max_tokens": "512", "params.messages": big}}
		out := p.MustCall(t, hostapi.KindCheck, &hostapi.Input{Text: "abc", Params: param("host")}, host)
		m := data(t, out)
		if m["max_tokens"] != "512" || m["max_tokens_ok"] != true || m["messages_len"] != float64(len(big)) ||
			m["messages_ok"] != true || m["absent_ok"] != false || m["now_ms"] != float64(now.UnixMilli()) {
			t.Fatalf("data = %v", m)
		}
		logs := host.Logs()
		if len(logs) != 2 || logs[0] != (LogEntry{hostapi.LevelInfo, "hello from the guest"}) ||
			logs[1] != (LogEntry{hostapi.LevelWarn, "text has 3 bytes"}) {
			t.Fatalf("logs = %v", logs)
		}
	})

	tests := []struct {
		name string
		kind hostapi.Kind
		in   hostapi.Input
		want hostapi.Output
	}{
		{"pass", hostapi.KindCheck, hostapi.Input{Text: "x"}, hostapi.Output{Verdict: true}},
		{"fail", hostapi.KindCheck, hostapi.Input{Params: param("fail")},
			hostapi.Output{Data: []byte(`{"reason":"asked to fail"}`)}},
		{"transform", hostapi.KindCheck, hostapi.Input{Text: "abc", Params: param("upper")},
			hostapi.Output{Verdict: true, TransformedText: "ABC", HasTransformedText: true}},
		{"error", hostapi.KindCheck, hostapi.Input{Params: param("error")}, hostapi.Output{Error: "asked to error"}},
		{"bad data", hostapi.KindCheck, hostapi.Input{Params: param("bad data")},
			hostapi.Output{Verdict: true, Error: "sdk: encode Result.Data: ch: unsupported type (use a string, number, bool, slice, map[string]any, RawJSON or a Marshaler)"}},
		{"panic", hostapi.KindCheck, hostapi.Input{Params: param("panic")}, hostapi.Output{Verdict: true, Error: "panic: asked to panic"}},
		{"condition match", hostapi.KindCondition, hostapi.Input{Text: "a match"}, hostapi.Output{Verdict: true, Match: true}},
		{"condition no match", hostapi.KindCondition, hostapi.Input{Text: "no"}, hostapi.Output{Verdict: true}},
		{"condition panic", hostapi.KindCondition, hostapi.Input{Params: param("panic")},
			hostapi.Output{Verdict: true, Error: "panic: assignment to entry in nil map"}},
		{"unknown kind", 7, hostapi.Input{}, hostapi.Output{Verdict: true, Error: "sdk: unknown call kind 7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := &Host{}
			out := p.MustCall(t, tc.kind, &tc.in, host)
			if string(out.Data) != string(tc.want.Data) || out.Verdict != tc.want.Verdict || out.Error != tc.want.Error ||
				out.Match != tc.want.Match || out.TransformedText != tc.want.TransformedText || out.HasTransformedText != tc.want.HasTransformedText {
				t.Fatalf("out\n got %+v\nwant %+v", out, tc.want)
			}
			if strings.Contains(tc.name, "panic") {
				logs := host.Logs()
				if len(logs) != 1 || logs[0].Level != hostapi.LevelError || !strings.Contains(logs[0].Msg, "goroutine") {
					t.Fatalf("panic not logged with its stack: %v", logs)
				}
			}
		})
	}

	t.Run("instance survives panics and grows its input buffer", func(t *testing.T) {
		for _, n := range []int{0, 1, 4096, 1 << 20, 10, 3 << 20, 5} {
			out := p.MustCall(t, hostapi.KindCheck, &hostapi.Input{Text: strings.Repeat("y", n), Params: param("echo")}, nil)
			if m := data(t, out); m["text_len"] != float64(n) {
				t.Fatalf("size %d: text_len %v", n, m["text_len"])
			}
			_ = p.MustCall(t, hostapi.KindCheck, &hostapi.Input{Params: param("panic")}, nil)
		}
	})

	t.Run("garbage collection between calls", func(t *testing.T) {
		for range 5 {
			out := p.MustCall(t, hostapi.KindCheck, &hostapi.Input{Params: param("alloc")}, nil)
			if out.Error != "" || !out.Verdict {
				t.Fatalf("out = %+v", out)
			}
		}
	})
}

func TestMalformedInputFromHost(t *testing.T) {
	p := Instantiate(t, Build(t, "testdata/guest"))
	// A host that writes garbage gets an error output, not a trap.
	res, err := p.alloc.Call(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	ptr := uint32(res[0])
	p.mod.Memory().Write(ptr, []byte{hostapi.TagText, 9, 0})
	res, err = p.call.Call(t.Context(), uint64(hostapi.KindCheck), uint64(ptr), 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	var out hostapi.Output
	if err := hostapi.DecodeOutput(b, &out); err != nil || !strings.Contains(out.Error, "truncated") {
		t.Fatalf("out = %+v, %v", out, err)
	}
	// An input pointer that gateway_alloc did not hand out is refused.
	res, err = p.call.Call(t.Context(), uint64(hostapi.KindCheck), 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = p.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if err := hostapi.DecodeOutput(b, &out); err != nil || !strings.Contains(out.Error, "not in memory from gateway_alloc") {
		t.Fatalf("out = %+v, %v", out, err)
	}
}
