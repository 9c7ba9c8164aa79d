// Command guest is a test plugin that exercises every part of sdk-guest inside wasm: it echoes its input,
// calls the host functions, grows its buffers and panics on request. Its behaviour is chosen by param "do".
package main

import (
	"errors"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() {
	sdk.HandleCheck(check)
	sdk.HandleCondition(func(in sdk.Input) bool {
		if do, _ := in.ParamString("do"); do == "panic" {
			var m map[string]int
			m["x"] = 1 // a nil map write panics
		}
		return strings.Contains(in.Text, "match")
	})
}

func check(in sdk.Input) sdk.Result {
	do, _ := in.ParamString("do")
	switch do {
	case "echo":
		user, _ := in.Metadata("user")
		words, _ := in.ParamStrings("words")
		limit, _ := in.ParamFloat("limit")
		n, _ := in.ParamInt("limit")
		strict, _ := in.ParamBool("strict")
		return sdk.Pass().
			With("text_len", len(in.Text)).With("model", in.Model).With("check_id", in.CheckID).
			With("stage", in.Stage).With("endpoint", in.Endpoint).With("user", user).With("words", words).
			With("tool", in.Tool).With("mcp_server", in.MCPServer).With("tool_call", in.IsToolCall()).
			With("limit", limit).With("limit_int", n).With("strict", strict).
			With("metadata_keys", in.MetadataKeys()).With("params", in.ParamNames())
	case "host":
		sdk.Log(sdk.LevelInfo, "hello from the guest")
		sdk.Logf(sdk.LevelWarn, "text has %d bytes", len(in.Text))
		v, ok := sdk.RequestField("params.max_tokens")
		big, bigOK := sdk.RequestField("params.messages")
		_, absentOK := sdk.RequestField("nope")
		return sdk.Pass().With("max_tokens", v).With("max_tokens_ok", ok).
			With("messages_len", len(big)).With("messages_ok", bigOK).With("absent_ok", absentOK).
			With("now_ms", sdk.Now().UnixMilli())
	case "upper":
		return sdk.Transform(strings.ToUpper(in.Text))
	case "fail":
		return sdk.Fail("asked to fail")
	case "error":
		return sdk.Error(errors.New("asked to error"))
	case "bad data":
		return sdk.Pass().With("ch", make(chan int))
	case "panic":
		panic("asked to panic")
	case "alloc":
		// Allocate and drop a lot, so the GC runs between calls while the host holds buffers.
		var keep int
		for i := range 50 {
			keep += len(strings.Repeat("x", 64<<10+i))
		}
		return sdk.Pass().With("n", keep)
	}
	return sdk.Pass()
}

func main() {}
