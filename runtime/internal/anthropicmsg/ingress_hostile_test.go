package anthropicmsg

import (
	"runtime"
	"strings"
	"testing"
)

// A request is bounded by the routes' body limit, not by how many content blocks it holds: translating it
// must cost memory in proportion to its bytes. A content array of many small blocks (each decoded into a
// struct of ten members, kept until the whole array was read) once cost 26 times its bytes, so that a 32 MiB
// body of empty text blocks asked for some 800 MiB.
func TestManySmallBlocksCostTheirBytes(t *testing.T) {
	const blocks = 50_000
	body := []byte(`{"model":"m","max_tokens":1,"system":[` + strings.Repeat(`{"type":"text","text":""},`, blocks) + `{"type":"text","text":"s"}],` +
		`"messages":[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":""},`, blocks) +
		`{"type":"tool_result","tool_use_id":"t","content":[` + strings.Repeat(`{"type":"text","text":""},`, blocks) + `{"type":"text","text":"r"}]},` +
		`{"type":"text","text":"x"}]},{"role":"assistant","content":[` + strings.Repeat(`{"type":"thinking","thinking":""},`, blocks) + `{"type":"text","text":"a"}]}]}`)
	for name, translate := range map[string]func([]byte) ([]byte, error){"ToChat": ToChat, "CountTokens": CountTokens} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := translate(body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(body)) {
			t.Errorf("%s of a %d-byte body of %d blocks allocated %d bytes (%.1f times its size), want at most 8 times",
				name, len(body), 4*blocks, alloc, float64(alloc)/float64(len(body)))
		}
	}
}
