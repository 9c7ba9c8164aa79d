package anthropicmsg

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/schema"
)

// fixedNow pins "created" to 1700000000 for the golden files.
func fixedNow(t testing.TB) {
	t.Helper()
	old := now
	now = func() time.Time { return time.Unix(1700000000, 0) }
	t.Cleanup(func() { now = old })
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual reports whether two JSON texts hold the same value; the error says why not.
func jsonEqual(t testing.TB, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("got is not JSON: %v\n%s", err, got)
		return false
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", compact(got), compact(want))
		return false
	}
	return true
}

func compact(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func readBench(name string) ([]byte, error) {
	return readBenchFile(filepath.Join("testdata", "response", name+".anthropic.json"))
}

func readBenchFile(name string) ([]byte, error) { return os.ReadFile(name) }

// requestOf decodes an OpenAI body as callers' bodies are decoded (providers.Call.Chat), then translates it.
func requestOf(openAIBody []byte, opts RequestOptions) ([]byte, string, error) {
	in, err := schema.DecodeChat(openAIBody)
	if err != nil {
		return nil, "", err
	}
	return Request(in, opts)
}
