package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/schema"
)

// Replay turns a stored response object (a cache hit) into the responses event stream a streamed request
// expects: response.created and response.in_progress, each output item added, its text or arguments in one
// delta, done, and the final event (response.completed, response.incomplete or response.failed, by the
// stored status) carrying the stored object. Items of kinds the gateway does not stream piece by piece (web
// search, reasoning, ...) are sent whole, added and done.
func Replay(response []byte) (io.ReadCloser, error) {
	var resp schema.Response
	if err := json.Unmarshal(response, &resp); err != nil {
		return nil, err
	}
	if resp.Object != "response" || resp.ID == "" {
		return nil, errors.New("responses: the stored answer is not a response object")
	}
	s := &stream{resp: &resp}
	final := resp
	start := resp
	start.Status, start.Output, start.Usage, start.OutputText = "in_progress", []json.RawMessage{}, nil, nil
	s.resp = &start
	s.responseEvent("response.created")
	s.responseEvent("response.in_progress")
	for i, raw := range final.Output {
		var item struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			return nil, err
		}
		it := &streamItem{index: i, id: item.ID}
		switch item.Type {
		case "message":
			var shell map[string]json.RawMessage
			_ = json.Unmarshal(raw, &shell)
			shell["status"], shell["content"] = json.RawMessage(`"in_progress"`), json.RawMessage(`[]`)
			s.itemEvent("response.output_item.added", i, shell)
			for k, part := range item.Content {
				if part.Type != "output_text" {
					continue
				}
				d := strconv.AppendInt(append(s.itemRef("response.content_part.added", it, false), `,"content_index":`...), int64(k), 10)
				s.end(append(d, `,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`...))
				d = strconv.AppendInt(append(s.itemRef("response.output_text.delta", it, false), `,"content_index":`...), int64(k), 10)
				d = jsonstr.AppendString(append(d, `,"delta":`...), part.Text)
				s.end(append(d, `,"logprobs":[]`...))
				d = strconv.AppendInt(append(s.itemRef("response.output_text.done", it, false), `,"content_index":`...), int64(k), 10)
				d = jsonstr.AppendString(append(d, `,"text":`...), part.Text)
				s.end(append(d, `,"logprobs":[]`...))
				d = strconv.AppendInt(append(s.itemRef("response.content_part.done", it, false), `,"content_index":`...), int64(k), 10)
				d = jsonstr.AppendString(append(d, `,"part":{"type":"output_text","text":`...), part.Text)
				s.end(append(d, `,"annotations":[],"logprobs":[]}`...))
			}
		case "function_call":
			var shell map[string]json.RawMessage
			_ = json.Unmarshal(raw, &shell)
			shell["status"], shell["arguments"] = json.RawMessage(`"in_progress"`), json.RawMessage(`""`)
			s.itemEvent("response.output_item.added", i, shell)
			d := jsonstr.AppendString(append(s.itemRef("response.function_call_arguments.delta", it, false), `,"delta":`...), item.Arguments)
			s.end(d)
			d = jsonstr.AppendString(append(s.itemRef("response.function_call_arguments.done", it, false), `,"arguments":`...), item.Arguments)
			s.end(d)
		default:
			s.itemEvent("response.output_item.added", i, raw)
		}
		s.itemEvent("response.output_item.done", i, raw)
	}
	s.resp = &final
	switch final.Status {
	case "incomplete":
		s.responseEvent("response.incomplete")
	case "failed":
		s.responseEvent("response.failed")
	default:
		s.responseEvent("response.completed")
	}
	return io.NopCloser(bytes.NewReader(s.out)), nil
}
