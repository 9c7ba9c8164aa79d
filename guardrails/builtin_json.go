package guardrails

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxJSONStarts bounds how many '{' / '[' positions findJSON tries to decode from, so that a text full of braces
// costs linear time at most maxJSONStarts times.
const maxJSONStarts = 64

// findJSON calls yield with each JSON object or array found in text (in a ```json block or inline), in order,
// until yield returns false. Numbers are json.Number.
func findJSON(text string, yield func(v any) bool) {
	tries := 0
	for i := 0; i < len(text) && tries < maxJSONStarts; i++ {
		if c := text[i]; c != '{' && c != '[' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		if !yield(v) {
			return
		}
		i += int(dec.InputOffset()) - 1
	}
}

// jsonSchema {schema, not}: passes when some JSON object or array in the text validates against schema (any
// draft the library knows; $ref to anything but the schema itself is refused). A text without JSON fails.
func newJSONSchema(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	if p.err != nil {
		return nil, p.err
	}
	sraw, ok := p.get("schema")
	if !ok {
		return nil, paramErr("schema", "is required")
	}
	if jsonfield.Kind(sraw) == "string" { // a schema sent as JSON text
		var s string
		if err := json.Unmarshal(sraw, &s); err == nil {
			sraw = json.RawMessage(s)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sraw))
	if err != nil {
		return nil, paramErr("schema", "is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network loads
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		return nil, paramErr("schema", "%v", err)
	}
	sch, err := c.Compile("mem://schema.json")
	if err != nil {
		return nil, paramErr("schema", "is not a valid JSON schema: %v", err)
	}
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	static := `"not":` + strconv.FormatBool(not)
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		found, valid := 0, false
		var firstErr string
		findJSON(in.Text, func(v any) bool {
			found++
			if err := sch.Validate(v); err != nil {
				if firstErr == "" {
					firstErr = err.Error()
				}
				return true
			}
			valid = true
			return false
		})
		d := dataInt(dataStart(static, 64), "jsonFound", found)
		d = dataBool(d, "valid", valid)
		if !valid && firstErr != "" {
			d = dataRaw(d, "error", jsonText(firstErr))
		}
		return verdictOutput(valid != not, dataEnd(d))
	}}, nil
}

// jsonKeys {keys, operator (any|all|none, default any)}: passes when some JSON object in the text has any, all
// or none of keys at its top level. A text without a JSON object fails.
func newJSONKeys(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	keys := p.strings("keys", true)
	op := p.operator("operator", "any")
	if p.err != nil {
		return nil, p.err
	}
	static := `"operator":"` + op + `"`
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		objects, verdict := 0, false
		var present []string
		findJSON(in.Text, func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok {
				return true
			}
			objects++
			present = present[:0]
			for _, k := range keys {
				if _, ok := m[k]; ok {
					present = append(present, k)
				}
			}
			switch op {
			case "any":
				verdict = len(present) > 0
			case "all":
				verdict = len(present) == len(keys)
			default:
				verdict = len(present) == 0
			}
			return !verdict
		})
		d := dataInt(dataStart(static, 48), "jsonObjects", objects)
		if present == nil {
			present = []string{}
		}
		d = dataRaw(d, "presentKeys", jsonText(present))
		return verdictOutput(verdict, dataEnd(d))
	}}, nil
}
