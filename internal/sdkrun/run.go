package sdkrun

import (
	"fmt"
	"reflect"

	"github.com/llmgw/gateway/hostapi"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

// Run calls sdk.Run with in converted to the SDK's copy of the wire types and converts the Output back. It has
// the signature of a native run in the gateway's tests (func(hostapi.Kind, *hostapi.Input) hostapi.Output).
func Run(kind hostapi.Kind, in *hostapi.Input) hostapi.Output {
	wire := convert[sdk.WireInput](*in)
	out := sdk.Run(sdk.Kind(kind), &wire)
	return convert[hostapi.Output](out)
}

// convert copies src into a new To field by field, by name, through slices and nested structs. The two sides
// are generated from one source (hostapi/internal/gensdkcopy), so a field missing on one side or of a kind
// the copy does not know is a bug of this package: it panics, naming the field, and TestConvertEveryField
// catches it first.
func convert[To any](src any) To {
	var dst To
	copyValue(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src), typeName(reflect.TypeFor[To]()))
	return dst
}

func copyValue(dst, src reflect.Value, path string) {
	switch src.Kind() {
	case reflect.Struct:
		if dst.Kind() != reflect.Struct || dst.NumField() != src.NumField() {
			panic(fmt.Sprintf("sdkrun: %s: %s does not match %s (is sdk-guest/internal/hostapi stale? run go generate ./hostapi)",
				path, typeName(src.Type()), typeName(dst.Type())))
		}
		for i := range src.NumField() {
			name := src.Type().Field(i).Name
			field := dst.FieldByName(name)
			if !field.IsValid() {
				panic(fmt.Sprintf("sdkrun: %s.%s: %s has no such field", path, name, typeName(dst.Type())))
			}
			copyValue(field, src.Field(i), path+"."+name)
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		if dst.Kind() != reflect.Slice {
			panic(fmt.Sprintf("sdkrun: %s: %s does not match %s", path, src.Type(), dst.Type()))
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if dst.Kind() != src.Kind() {
			panic(fmt.Sprintf("sdkrun: %s: %s does not match %s", path, src.Type(), dst.Type()))
		}
		dst.Set(src.Convert(dst.Type()))
	default:
		panic(fmt.Sprintf("sdkrun: %s: cannot copy a %s", path, src.Type()))
	}
}

// typeName names t with its package path: both sides' types are called hostapi.Something.
func typeName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
