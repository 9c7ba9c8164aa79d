package bedrock

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/llmgw/gateway/runtime/providers"
)

// testTime is the pinned clock of test adapters: 2023-11-14T22:13:20Z.
var testTime = time.Unix(1700000000, 0).UTC()

const testModel = "anthropic.claude-3-5-sonnet-20240620-v1:0"

func testAdapter() *Adapter {
	return &Adapter{signer: v4.NewSigner(), now: func() time.Time { return testTime }, newID: func() string { return "chatcmpl-test" }}
}

// translateChatBody decodes body as NewRequest does and translates it.
func translateChatBody(body []byte) ([]byte, []byte, error) {
	c := &providers.Call{Endpoint: providers.ChatCompletions, Body: body}
	in, err := c.Chat()
	if err != nil {
		return nil, nil, err
	}
	return translateChatRequest(in)
}

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual compares two JSON texts semantically (key order and spacing ignored, numbers as float64).
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
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("JSON differs\n got: %s\nwant: %s", gi, wi)
	}
}

// sseEvents splits server-sent events on their blank lines.
func sseEvents(s string) []string {
	var out []string
	for _, ev := range strings.Split(s, "\n\n") {
		if ev != "" {
			out = append(out, ev)
		}
	}
	return out
}

// compareSSE compares streams event by event: the "data: " JSON of each semantically, [DONE] exactly.
func compareSSE(t testing.TB, got, want string) {
	t.Helper()
	g, w := sseEvents(got), sseEvents(want)
	for i := 0; i < max(len(g), len(w)); i++ {
		if i >= len(g) {
			t.Errorf("event %d missing, want %s", i, w[i])
			continue
		}
		if i >= len(w) {
			t.Errorf("event %d unexpected: %s", i, g[i])
			continue
		}
		gd, ok1 := strings.CutPrefix(g[i], "data: ")
		wd, ok2 := strings.CutPrefix(w[i], "data: ")
		if !ok1 || !ok2 || strings.Contains(gd, "\n") {
			t.Errorf("event %d is not one data line:\n got %q\nwant %q", i, g[i], w[i])
			continue
		}
		if wd == "[DONE]" || gd == "[DONE]" {
			if gd != wd {
				t.Errorf("event %d = %s, want %s", i, gd, wd)
			}
			continue
		}
		jsonEqual(t, []byte(gd), []byte(wd))
	}
}

// header is one eventstream header of a hand-built frame: a string (type 7) unless typ says otherwise.
type header struct {
	name  string
	typ   byte
	value []byte
}

func strHeader(name, value string) header { return header{name: name, typ: 7, value: []byte(value)} }

// buildFrame encodes one eventstream message (test-side encoder, written from the format's description).
func buildFrame(headers []header, payload []byte) []byte {
	var hb bytes.Buffer
	for _, h := range headers {
		hb.WriteByte(byte(len(h.name)))
		hb.WriteString(h.name)
		hb.WriteByte(h.typ)
		if h.typ == 6 || h.typ == 7 {
			binary.Write(&hb, binary.BigEndian, uint16(len(h.value)))
		}
		hb.Write(h.value)
	}
	total := uint32(preludeLen + hb.Len() + len(payload) + 4)
	msg := make([]byte, 0, total)
	msg = binary.BigEndian.AppendUint32(msg, total)
	msg = binary.BigEndian.AppendUint32(msg, uint32(hb.Len()))
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg[:8]))
	msg = append(msg, hb.Bytes()...)
	msg = append(msg, payload...)
	return binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
}

func eventFrame(eventType, payload string) []byte {
	return buildFrame([]header{strHeader(":event-type", eventType), strHeader(":content-type", "application/json"),
		strHeader(":message-type", "event")}, []byte(payload))
}
