package gemini

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/schema"
)

var update = flag.Bool("update", false, "rewrite the expected OpenAI files of testdata from the translation (review the diff)")

// pin makes ids and timestamps deterministic: created 1700000000, random ids "id1", "id2", ...
func pin(t testing.TB) {
	t.Helper()
	oldNow, oldID := now, randomID
	n := 0
	now = func() time.Time { return time.Unix(1700000000, 0) }
	randomID = func() string { n++; return "id" + strconv.Itoa(n) }
	t.Cleanup(func() { now, randomID = oldNow, oldID })
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chatRequest decodes an OpenAI request body, as providers.Call.Chat does, and translates it.
func chatRequest(openAIBody []byte) ([]byte, string, error) {
	in, err := schema.DecodeChat(openAIBody)
	if err != nil {
		return nil, "", err
	}
	return ChatRequest(in)
}

// decodeChat decodes a request body that a test knows to be valid.
func decodeChat(t testing.TB, openAIBody []byte) *schema.ChatRequest {
	t.Helper()
	in, err := schema.DecodeChat(openAIBody)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// decodeEmbeddings decodes an embeddings request body that a test knows to be valid.
func decodeEmbeddings(t testing.TB, openAIBody []byte) *schema.EmbeddingsRequest {
	t.Helper()
	in, err := schema.DecodeEmbeddings(openAIBody)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// golden compares got with the JSON file want (semantically); with -update it rewrites the file.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	jsonEqual(t, got, readFile(t, path))
}

func jsonEqual(t testing.TB, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", compact(got), compact(want))
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// sseEvents splits an OpenAI event stream into the data of its events.
func sseEvents(t testing.TB, stream string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(stream, "\n\n") {
		if ev == "" {
			continue
		}
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

func caseNames(t testing.TB, dir, suffix string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no %s files in %s", suffix, dir)
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = strings.TrimSuffix(filepath.Base(m), suffix)
	}
	return names
}
