// Command sysprompt is an example transform plugin, for a mutator hook in before_request_hooks: it puts a
// system message at the front of a chat request that has none, and caps max_tokens (and
// max_completion_tokens) at a ceiling.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o sysprompt.wasm .
//
// Parameters: "system" (a string; the message to add) and "max_tokens" (a positive integer; the ceiling). See
// README.md.
package main

import (
	"encoding/json"
	"errors"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() { sdk.HandleTransform(transform) }

// capped are the members that bound an answer's length: OpenAI's older and newer names.
var capped = []string{"max_tokens", "max_completion_tokens"}

func transform(in sdk.TransformInput) sdk.TransformResult {
	if in.Stage != "before" {
		return sdk.Unchanged() // an answer is not this plugin's to rewrite
	}
	system, hasSystem := in.ParamString("system")
	if _, present := in.Param("system"); present && !hasSystem {
		return sdk.TransformError(errors.New(`sysprompt: parameter "system" must be a string`))
	}
	ceiling, hasCeiling := in.ParamInt("max_tokens")
	if _, present := in.Param("max_tokens"); present && (!hasCeiling || ceiling < 1) {
		return sdk.TransformError(errors.New(`sysprompt: parameter "max_tokens" must be a positive integer`))
	}
	// Members stay raw, so that what this plugin does not touch goes on exactly as it came.
	var body map[string]json.RawMessage
	if err := json.Unmarshal(in.Body, &body); err != nil {
		return sdk.TransformError(errors.New("sysprompt: the body is not a JSON object: " + err.Error()))
	}
	var added bool
	var lowered []string
	if hasSystem && system != "" {
		var err error
		if added, err = addSystem(body, system); err != nil {
			return sdk.TransformError(err)
		}
	}
	if hasCeiling && (in.Endpoint == "chat" || in.Endpoint == "completions") { // embeddings have no length
		for _, name := range capped {
			var n float64
			if raw, ok := body[name]; ok && json.Unmarshal(raw, &n) == nil && n <= float64(ceiling) {
				continue
			}
			if _, ok := body[name]; ok || name == "max_tokens" && body["max_completion_tokens"] == nil {
				body[name] = json.RawMessage(jsonInt(ceiling))
				lowered = append(lowered, name)
			}
		}
	}
	if !added && len(lowered) == 0 {
		return sdk.Unchanged()
	}
	out, err := json.Marshal(body)
	if err != nil {
		return sdk.TransformError(err)
	}
	r := sdk.Replace(out).With("system_added", added)
	if len(lowered) > 0 {
		r = r.With("capped", lowered)
	}
	return r
}

// addSystem puts a system message first in a chat request's messages unless one is there; a body without
// messages (a completion, embeddings) is left alone.
func addSystem(body map[string]json.RawMessage, system string) (bool, error) {
	raw, ok := body["messages"]
	if !ok {
		return false, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return false, errors.New("sysprompt: messages is not an array")
	}
	for _, m := range msgs {
		var role struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(m, &role) == nil && (role.Role == "system" || role.Role == "developer") {
			return false, nil
		}
	}
	first, err := json.Marshal(map[string]string{"role": "system", "content": system})
	if err != nil {
		return false, err
	}
	body["messages"], err = json.Marshal(append([]json.RawMessage{first}, msgs...))
	return err == nil, err
}

func jsonInt(n int64) []byte {
	b, _ := json.Marshal(n)
	return b
}

func main() {}
