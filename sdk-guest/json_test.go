package sdk

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONString(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`"abc"`, "abc", true},
		{` "abc" `, "abc", true},
		{`""`, "", true},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\u4e2d"`, "é中", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud83d"`, "\ufffd", true},
		{`"\ud83dx"`, "\ufffdx", true},
		{`"héllo"`, "héllo", true},
		{`"abc`, "", false},
		{`"a\`, "", false},
		{`"\x"`, "", false},
		{`"\u12"`, "", false},
		{`"\u12g4"`, "", false},
		{"\"a\nb\"", "", false},
		{`"a" "b"`, "", false},
		{`abc`, "", false},
		{`10`, "", false},
		{``, "", false},
	}
	for _, tc := range tests {
		got, ok := jsonString(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("jsonString(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if tc.ok {
			var std string
			if err := json.Unmarshal([]byte(tc.in), &std); err != nil || std != got {
				t.Errorf("encoding/json says %q, %v for %q", std, err, tc.in)
			}
		}
	}
}

func TestJSONNumberBoolStrings(t *testing.T) {
	numbers := map[string]bool{
		"0": true, "-0": true, "10": true, " 1.5e3 ": true, "1E-2": true, "-12.25": true,
		"01": false, "1.": false, ".5": false, "1e": false, "+1": false, "-": false, "1 2": false, `"1"`: false, "NaN": false,
	}
	for in, ok := range numbers {
		if _, got := jsonNumber(in); got != ok {
			t.Errorf("jsonNumber(%q) ok = %v, want %v", in, got, ok)
		}
		var f float64
		if std := json.Unmarshal([]byte(in), &f) == nil; std != ok {
			t.Errorf("encoding/json disagrees on %q", in)
		}
	}
	bools := []struct {
		in       string
		want, ok bool
	}{{"true", true, true}, {" false\n", false, true}, {"True", false, false}, {"truex", false, false}, {"1", false, false}, {"", false, false}}
	for _, tc := range bools {
		if got, ok := jsonBool(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("jsonBool(%q) = %v, %v", tc.in, got, ok)
		}
	}
	arrays := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, []string{}, true},
		{` [ ] `, []string{}, true},
		{`["a"]`, []string{"a"}, true},
		{`[ "a" , "b\n" ,"" ]`, []string{"a", "b\n", ""}, true},
		{`["a",]`, nil, false},
		{`["a" "b"]`, nil, false},
		{`["a", 1]`, nil, false},
		{`["a"`, nil, false},
		{`["a"] x`, nil, false},
		{`"a"`, nil, false},
		{`[`, nil, false},
	}
	for _, tc := range arrays {
		got, ok := jsonStrings(tc.in)
		if !reflect.DeepEqual(got, tc.want) || ok != tc.ok {
			t.Errorf("jsonStrings(%q) = %#v, %v; want %#v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

type marshaler struct{}

func (marshaler) MarshalJSON() ([]byte, error) { return []byte(`{"m":1}`), nil }

type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("nope") }

func TestAppendObjectMatchesEncodingJSON(t *testing.T) {
	data := map[string]any{
		"s": "a\"b\\c\n\t\x01<>&\u2028 é 中 \xff", "b": true, "n": nil,
		"i": -3, "i8": int8(-8), "i16": int16(16), "i32": int32(32), "i64": int64(1 << 60),
		"u": uint(1), "u8": uint8(8), "u16": uint16(16), "u32": uint32(32), "u64": uint64(1 << 63),
		"f": 1.5, "f32": float32(0.1), "big": 1e21, "small": 1e-7, "zero": 0.0, "negzero": math.Copysign(0, -1),
		"ss": []string{"x", "y"}, "is": []int{1, 2}, "fs": []float64{0.5}, "any": []any{1, "a", nil, []string{}},
		"m": map[string]any{"z": 1, "a": map[string]string{"k": "v"}}, "mi": map[string]int{"a": 1}, "mf": map[string]float64{"a": 0.25},
		"maps": []map[string]any{{"a": 1}}, "raw": RawJSON(`[1,2]`), "marshaler": marshaler{}, "err": errors.New("boom"),
		"empty": map[string]any{},
	}
	got, err := appendObject(nil, data, "")
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	// encoding/json needs help for the types it encodes differently: RawJSON (a string type) and error.
	std := map[string]any{}
	for k, v := range data {
		std[k] = v
	}
	std["raw"], std["err"] = json.RawMessage(`[1,2]`), "boom"
	want, err := json.Marshal(std)
	if err != nil {
		t.Fatal(err)
	}
	var wantBack any
	_ = json.Unmarshal(want, &wantBack)
	if !reflect.DeepEqual(back, wantBack) {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	// Strings are byte-for-byte what encoding/json writes, apart from its HTML escaping.
	s, _ := appendObject(nil, map[string]any{"s": data["s"]}, "")
	ws, _ := json.Marshal(map[string]any{"s": data["s"]})
	wsNoHTML := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(ws))
	if string(s) != wsNoHTML {
		t.Fatalf("string encoding\n got %s\nwant %s", s, wsNoHTML)
	}
}

func TestAppendObjectErrors(t *testing.T) {
	tests := []struct {
		name string
		data map[string]any
		want string
	}{
		{"unsupported", map[string]any{"a": map[string]any{"b": struct{}{}}}, "a.b: unsupported type"},
		{"nan", map[string]any{"f": math.NaN()}, "f: NaN or infinite number"},
		{"inf in slice", map[string]any{"fs": []float64{math.Inf(1)}}, "fs: NaN or infinite number"},
		{"in array", map[string]any{"xs": []any{1, complex(1, 2)}}, "xs[1]: unsupported type"},
		{"marshaler", map[string]any{"m": badMarshaler{}}, "m: nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := appendObject(nil, tc.data, "")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\u00e9"`, `"\ud83d\ude00"`, `"a\nb"`, `["a","b"]`, `"\ud800\u0041"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			// The reader passes invalid UTF-8 through where encoding/json replaces it; params are valid JSON.
			return
		}
		got, ok := jsonString(s)
		var std string
		stdErr := json.Unmarshal([]byte(s), &std)
		if ok != (stdErr == nil) {
			// encoding/json accepts only strings here too, so the two must agree on validity.
			t.Fatalf("jsonString(%q) ok = %v, encoding/json err = %v", s, ok, stdErr)
		}
		if ok && got != std {
			t.Fatalf("jsonString(%q) = %q, encoding/json %q", s, got, std)
		}
		// Whatever the writer quotes, the reader reads back (as valid UTF-8).
		if back, ok := jsonString(string(appendQuoted(nil, s))); !ok || back != s {
			t.Fatalf("quote %q: read back %q, %v", s, back, ok)
		}
	})
}
