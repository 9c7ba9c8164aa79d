package sdkrun

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

// fill sets every field of v, through slices and nested structs, to a value that is not its zero and says where
// it is, so that a round trip that drops or swaps a field shows.
func fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(path)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(len(path)) + 0.5)
	}
}

// TestConvertEveryField proves that every field of the gateway's Input and Output survives a trip through the
// SDK's copy and back, whatever fields hostapi gains.
func TestConvertEveryField(t *testing.T) {
	var in hostapi.Input
	fill(reflect.ValueOf(&in).Elem(), "in")
	if got := convert[hostapi.Input](convert[sdk.WireInput](in)); !reflect.DeepEqual(got, in) {
		t.Errorf("Input round trip:\n got %+v\nwant %+v", got, in)
	}
	var out hostapi.Output
	fill(reflect.ValueOf(&out).Elem(), "out")
	if got := convert[hostapi.Output](convert[sdk.WireOutput](out)); !reflect.DeepEqual(got, out) {
		t.Errorf("Output round trip:\n got %+v\nwant %+v", got, out)
	}
	var empty hostapi.Input // nil slices stay nil
	if got := convert[sdk.WireInput](empty); got.Metadata != nil || got.Params != nil {
		t.Errorf("empty Input converts to %+v", got)
	}
}

func TestConvertMismatchPanics(t *testing.T) {
	type from struct{ A, B string }
	type to struct{ A, C string }
	defer func() {
		if r := recover(); r != `sdkrun: github.com/llmgw/gateway/internal/sdkrun.to.B: github.com/llmgw/gateway/internal/sdkrun.to has no such field` {
			t.Errorf("recovered %v", r)
		}
	}()
	convert[to](from{"x", "y"})
}

// TestRun calls a registered check through Run: the input's fields reach the handler and its result comes back
// in the gateway's Output.
func TestRun(t *testing.T) {
	sdk.HandleCheck(func(in sdk.Input) sdk.Result {
		word, _ := in.ParamString("word")
		user, _ := in.Metadata("user")
		return sdk.Fail("seen").With("text", in.Text).With("tool", in.Tool).With("word", word).With("user", user)
	})
	out := Run(hostapi.KindCheck, &hostapi.Input{Text: "hello", Tool: "read_file", Endpoint: "mcp",
		Metadata: []hostapi.KV{{Key: "user", Value: "u1"}}, Params: []hostapi.KV{{Key: "word", Value: `"w"`}}})
	want := hostapi.Output{Data: []byte(`{"reason":"seen","text":"hello","tool":"read_file","user":"u1","word":"w"}`)}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("out = %+v (data %s), want %+v (data %s)", out, out.Data, want, want.Data)
	}
	if out := Run(hostapi.KindCondition, &hostapi.Input{}); out.Error != "sdk: the plugin registers no condition (call sdk.HandleCondition in init)" {
		t.Errorf("condition: %+v", out)
	}
}
