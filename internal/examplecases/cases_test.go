package examplecases

import (
	"maps"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// TestTable proves the table reads, that every example has cases for every language, and that the cases reach
// what the examples do: a denial with data, a redaction, an error, a condition that matches with its debug
// line and one that reads a request field.
func TestTable(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, example := range Examples {
		for _, lang := range wasmtest.Languages {
			if _, err := Cases(example, lang); err != nil {
				t.Error(err)
			}
		}
	}
	var denied, redacted, errors, logged, fields, kv int
	for _, c := range all {
		w := c.Want
		switch {
		case w.Verdict != nil && !*w.Verdict && len(w.Data) > 0:
			denied++
		case w.TransformedText != nil:
			redacted++
		case w.ErrorContains != nil:
			errors++
		}
		if len(w.Logs) > 0 {
			logged++
		}
		if len(c.Fields) > 0 {
			fields++
		}
		if long := c.KVStore()["long"]; len(long) > 4<<10 {
			kv++ // a value past the SDKs' first 4 KiB buffer
		}
	}
	if denied == 0 || redacted == 0 || errors == 0 || logged == 0 || fields == 0 || kv == 0 {
		t.Errorf("denied %d, redacted %d, errors %d, logged %d, with request fields %d, with a kv value past 4 KiB %d: want each",
			denied, redacted, errors, logged, fields, kv)
	}
	if _, err := Cases("nope", wasmtest.Go); err == nil {
		t.Error("an example without cases is not an error")
	}
}

// TestParseErrors proves a broken table is refused with an error naming the case and the field, never read as
// a case that tests less.
func TestParseErrors(t *testing.T) {
	const ok = `{"example":"pii","name":"n","kind":"check","check_id":"pii.detect","input":{"text":"x"},"want":{"verdict":true}}`
	if _, err := parse([]byte(`{"cases":[` + ok + `]}`)); err != nil {
		t.Fatalf("a good case: %v", err)
	}
	for _, tc := range []struct{ name, table, want string }{
		{"unknown field", `{"cases":[{"example":"pii","name":"n","kind":"check","check_id":"c","want":{"verdit":true}}]}`, `unknown field "verdit"`},
		{"unknown example", strings.Replace(ok, `"pii"`, `"pi"`, 1), `example "pi" is none of`},
		{"no name", strings.Replace(ok, `"name":"n"`, `"name":""`, 1), "name is required"},
		{"bad kind", strings.Replace(ok, `"kind":"check"`, `"kind":"transform"`, 1), `kind "transform"`},
		{"check without id", strings.Replace(ok, `"check_id":"pii.detect"`, `"check_id":""`, 1), "check_id is required"},
		{"condition with id", strings.Replace(ok, `"kind":"check"`, `"kind":"condition"`, 1), "check_id must be empty"},
		{"no verdict", strings.Replace(ok, `{"verdict":true}`, `{}`, 1), "want.verdict is required"},
		{"negative repeat", strings.Replace(ok, `"text":"x"`, `"text":"x","repeat":-1`, 1), "input.repeat -1"},
		{"huge text", strings.Replace(ok, `"text":"x"`, `"text":"x","repeat":2000000`, 1), "more than 1048576 bytes"},
		{"bad param", strings.Replace(ok, `"text":"x"`, `"text":"x","params":{"a":nope}`, 1), "invalid character"},
		{"data not an object", strings.Replace(ok, `"verdict":true`, `"verdict":true,"data":[1]`, 1), "want.data must be a JSON object"},
		{"bad level", strings.Replace(ok, `"verdict":true`, `"verdict":true,"logs":[{"level":"trace","msg":"m"}]`, 1), `want.logs[0].level "trace"`},
		{"languages without why", strings.Replace(ok, `"want"`, `"languages":["go"],"want"`, 1), "why must say why"},
		{"why without languages", strings.Replace(ok, `"want"`, `"why":"because","want"`, 1), "why must say why"},
		{"unknown language", strings.Replace(ok, `"want"`, `"languages":["zig"],"why":"w","want"`, 1), `languages[0] "zig"`},
		{"repeated language", strings.Replace(ok, `"want"`, `"languages":["go","go"],"why":"w","want"`, 1), `languages[1] "go" is repeated`},
		{"name taken", ok + `,` + ok, `name "n" is taken in example "pii"`},
		{"kv key with a slash", strings.Replace(ok, `"want"`, `"kv":{"a/b":"v"},"want"`, 1), `kv key "a/b" has byte 0x2f at 1`},
		{"empty kv key", strings.Replace(ok, `"want"`, `"kv":{"":"v"},"want"`, 1), `kv key "" must be 1 to 256 bytes`},
		{"kv value not a string", strings.Replace(ok, `"want"`, `"kv":{"k":1},"want"`, 1), `kv["k"]: a string or {"text", "repeat", "suffix"}: json: cannot unmarshal number`},
		{"kv unknown field", strings.Replace(ok, `"want"`, `"kv":{"k":{"txt":"a"}},"want"`, 1), `kv["k"]: a string or {"text", "repeat", "suffix"}: json: unknown field "txt"`},
		{"kv negative repeat", strings.Replace(ok, `"want"`, `"kv":{"k":{"text":"a","repeat":-1}},"want"`, 1), `kv["k"]: repeat -1 is negative`},
		{"kv too long", strings.Replace(ok, `"want"`, `"kv":{"k":{"text":"ab","repeat":600000}},"want"`, 1), `kv["k"]: more than 1048576 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := tc.table
			if !strings.HasPrefix(table, `{"cases"`) {
				table = `{"cases":[` + table + `]}`
			}
			_, err := parse([]byte(table))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestCompare proves the runner notices each kind of difference, and that data is compared byte for byte.
func TestCompare(t *testing.T) {
	cases, err := parse([]byte(`{"cases":[{"example":"pii","name":"n","kind":"check","check_id":"c","input":{},
		"want":{"verdict":true,"data":{"b": 1, "a": [1, 2]},"transformed_text":"T"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &cases[0].Want
	out := hostapi.NewOutput()
	out.Data = []byte(`{"b":1,"a":[1,2]}`)
	out.SetTransformedText("T")
	if p := Compare(want, &out); len(p) != 0 {
		t.Fatalf("equal outputs differ: %v", p)
	}
	out.Data = []byte(`{"a":[1,2],"b":1}`)
	if p := Compare(want, &out); len(p) != 1 || !strings.Contains(p[0], "the same JSON written otherwise") {
		t.Fatalf("want the data's other key order, got %v", p)
	}
	out.Verdict, out.Data, out.Error = false, []byte(`{"a":[2,1]}`), "oops"
	out.SetTransformedText("t")
	if p := Compare(want, &out); len(p) != 4 {
		t.Fatalf("want 4 problems (verdict, data, text, error), got %d: %v", len(p), p)
	}
	yes, msg := true, "boom"
	out = hostapi.NewOutput()
	if p := Compare(&Want{ErrorContains: &msg, Match: &yes}, &out); len(p) != 2 {
		t.Fatalf("want 2 problems (error, match), got %d: %v", len(p), p)
	}
}

// TestHostInput proves how a case becomes the host's Input: the text repeated, parameters sorted by name as
// the gateway binds them, their JSON text kept as written.
func TestHostInput(t *testing.T) {
	cases, err := parse([]byte(`{"cases":[{"example":"router","name":"n","kind":"condition","input":{"text":"ab","repeat":3,
		"stage":"condition","metadata":[["k","v"],["k","w"]],"params":{"z": [1, 2],"a":"x"}},"want":{"match":false}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := cases[0].HostInput()
	if in.Text != "ababab" || in.Stage != "condition" || in.CheckID != "" || cases[0].HostKind() != hostapi.KindCondition {
		t.Fatalf("input = %+v", in)
	}
	if len(in.Params) != 2 || in.Params[0] != (hostapi.KV{Key: "a", Value: `"x"`}) || in.Params[1] != (hostapi.KV{Key: "z", Value: `[1, 2]`}) {
		t.Fatalf("params = %v", in.Params)
	}
	if len(in.Metadata) != 2 || in.Metadata[1] != (hostapi.KV{Key: "k", Value: "w"}) {
		t.Fatalf("metadata = %v", in.Metadata)
	}
}

// TestKVStore proves how a case's kv becomes the store kv_get answers from: strings as they are, the long form
// repeated then suffixed, and no store at all (nil, not empty) for a case without kv.
func TestKVStore(t *testing.T) {
	cases, err := parse([]byte(`{"cases":[{"example":"denylist","name":"a","kind":"check","check_id":"d.c","input":{},
		"kv":{"s":"one\ntwo","l":{"text":"ab","repeat":3,"suffix":"!"},"e":""},"want":{"verdict":true}},
		{"example":"denylist","name":"b","kind":"check","check_id":"d.c","input":{},"kv":{},"want":{"verdict":true}},
		{"example":"denylist","name":"c","kind":"check","check_id":"d.c","input":{},"want":{"verdict":true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cases[0].KVStore(), map[string]string{"s": "one\ntwo", "l": "ababab!", "e": ""}; !maps.Equal(got, want) {
		t.Errorf("store %q, want %q", got, want)
	}
	if got := cases[1].KVStore(); got == nil || len(got) != 0 {
		t.Errorf("an empty kv: store %v, want an empty one", got)
	}
	if got := cases[2].KVStore(); got != nil {
		t.Errorf("no kv: store %v, want none", got)
	}
}
