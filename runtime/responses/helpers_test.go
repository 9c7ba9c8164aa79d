package responses_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const (
	testID      = "resp_test"
	testCreated = 1700000000
)

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, g, w)
			}
		}
	}
}

// indent formats a JSON document for a golden file.
func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// request decodes testdata/name.request.json.
func request(t *testing.T, name string) *schema.ResponseRequest {
	t.Helper()
	r, err := schema.DecodeResponseRequest(readFile(t, filepath.Join("testdata", name+".request.json")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// event is one event of a responses stream.
type event struct {
	Name string
	Data []byte
	Head struct {
		Type           string          `json:"type"`
		SequenceNumber int64           `json:"sequence_number"`
		ItemID         string          `json:"item_id"`
		OutputIndex    int             `json:"output_index"`
		Delta          string          `json:"delta"`
		Text           string          `json:"text"`
		Arguments      string          `json:"arguments"`
		Response       json.RawMessage `json:"response"`
	}
}

// parseEvents splits a responses event stream into events.
func parseEvents(t *testing.T, stream []byte) []event {
	t.Helper()
	var out []event
	var ev event
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = []byte(strings.TrimPrefix(line, "data: "))
		case line == "":
			if err := json.Unmarshal(ev.Data, &ev.Head); err != nil {
				t.Fatalf("event %s: %v: %s", ev.Name, err, ev.Data)
			}
			out = append(out, ev)
			ev = event{}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

// checkEvents checks a responses stream's invariants and returns its final response: names match types,
// sequence numbers count from 0, created and in_progress come first and a terminal event last, every item's
// deltas concatenate to its done text, and the message texts to the response's output_text.
func checkEvents(t *testing.T, events []event) map[string]any {
	t.Helper()
	if len(events) < 3 || events[0].Name != "response.created" || events[1].Name != "response.in_progress" {
		t.Fatalf("stream does not start with response.created, response.in_progress: %d events", len(events))
	}
	texts := map[string]*strings.Builder{}
	var all strings.Builder
	for i, ev := range events {
		if ev.Head.Type != ev.Name {
			t.Errorf("event %d: name %s, type %s", i, ev.Name, ev.Head.Type)
		}
		if ev.Head.SequenceNumber != int64(i) {
			t.Errorf("event %d (%s): sequence_number %d", i, ev.Name, ev.Head.SequenceNumber)
		}
		b := texts[ev.Head.ItemID]
		if b == nil {
			b = &strings.Builder{}
			texts[ev.Head.ItemID] = b
		}
		switch ev.Name {
		case "response.output_text.delta":
			b.WriteString(ev.Head.Delta)
			all.WriteString(ev.Head.Delta)
		case "response.function_call_arguments.delta", "response.reasoning_summary_text.delta":
			b.WriteString(ev.Head.Delta)
		case "response.output_text.done", "response.reasoning_summary_text.done":
			if b.String() != ev.Head.Text {
				t.Errorf("%s: deltas %q, done %q", ev.Head.ItemID, b.String(), ev.Head.Text)
			}
		case "response.function_call_arguments.done":
			if b.String() != ev.Head.Arguments {
				t.Errorf("%s: deltas %q, done %q", ev.Head.ItemID, b.String(), ev.Head.Arguments)
			}
		}
	}
	last := events[len(events)-1]
	switch last.Name {
	case "response.completed", "response.incomplete", "response.failed":
	default:
		t.Fatalf("last event is %s", last.Name)
	}
	var resp map[string]any
	if err := json.Unmarshal(last.Head.Response, &resp); err != nil {
		t.Fatal(err)
	}
	if last.Name != "response.failed" && resp["output_text"] != all.String() {
		t.Errorf("output_text %q, deltas %q", resp["output_text"], all.String())
	}
	return resp
}

// readAll reads a stream in small pieces, as a client would.
func readAll(t testing.TB, r io.ReadCloser) []byte {
	t.Helper()
	defer r.Close()
	var out []byte
	buf := make([]byte, 37)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
