package claude

import (
	"encoding/json"
	"net/http"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// CloudBody returns the Messages request raw as a cloud wants it: without "model", which the cloud takes in
// the URL (returned as model), with "anthropic_version" set to version, and without "stream" unless
// keepStream (Bedrock's InvokeModel refuses it: streaming is its other operation; Vertex AI's
// streamRawPredict wants it). Every other member is kept as it is. A body without a model string is a 400
// naming model.
func CloudBody(raw []byte, version string, keepStream bool) (body []byte, model string, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, "", gwerr.BadRequest("", "the request body must be a JSON object")
	}
	if err := json.Unmarshal(m["model"], &model); err != nil || model == "" {
		return nil, "", &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "model",
			Message: "model must be the name of a Claude model"}
	}
	delete(m, "model")
	if !keepStream {
		delete(m, "stream")
	}
	m["anthropic_version"], _ = json.Marshal(version)
	body, err = json.Marshal(m)
	return body, model, err
}
