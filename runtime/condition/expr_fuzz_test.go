package condition

import (
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// fuzzMaxAlloc bounds what one run of a fuzzed $expr may allocate: exprMaxBuilt bytes of strings (lower and
// upper may overshoot by twice the last input), exprMemoryBudget range or array elements (8 or 16 bytes
// each), a 160-byte VM scope per loop entered (at most exprMaxSteps/exprLoopEntry) and exprMaxSteps loop
// steps, each of which may leave up to about 24 bytes of garbage (the arguments of a metered call, a boxed
// result). The live memory of a run is far less; most of this is garbage.
const fuzzMaxAlloc = 32 << 20

// FuzzExpr builds expressions from the allowed functions and operators (and, rarely, a refused one) out of the
// fuzzer's bytes, and checks that compiling and running them never panics, that a refusal is a 400
// invalid_config naming the $expr, that a run over its limits is a 400 naming it too, that a run allocates at
// most fuzzMaxAlloc, and that runs are deterministic. The seed corpus is testdata/fuzz/FuzzExpr.
func FuzzExpr(f *testing.F) {
	f.Add([]byte{})
	env := fuzzEnv(f)
	const path = "strategy.conditions[0].query"
	f.Fuzz(func(t *testing.T, program []byte) {
		src := newExprGen(program).bool()
		raw, _ := json.Marshal(map[string]string{"$expr": src})
		m, err := Compile(raw, path)
		if err != nil {
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Code != codeInvalidConfig || ge.Param != path+".$expr" {
				t.Fatalf("Compile(%s): %v, want a 400 invalid_config on %s.$expr", src, err, path)
			}
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ok, gerr := Eval(m, env)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > fuzzMaxAlloc {
			t.Fatalf("%s allocated %d bytes in one run, more than %d", src, d, fuzzMaxAlloc)
		}
		if gerr != nil {
			if gerr.Status != 400 || gerr.Param != path+".$expr" || !strings.Contains(gerr.Message, path+".$expr") {
				t.Fatalf("%s: run error %v does not name %s.$expr with a 400", src, gerr, path)
			}
			if ok {
				t.Fatalf("%s: matched and failed at once", src)
			}
		}
		if ok2, gerr2 := Eval(m, env); ok2 != ok || (gerr2 == nil) != (gerr == nil) {
			t.Fatalf("%s: Eval is not deterministic: %v %v, then %v %v", src, ok, gerr, ok2, gerr2)
		}
	})
}

// fuzzEnv is sampleEnv with fields big enough to make a careless program expensive: a 64 KiB string, an
// array of 2,000 numbers and a 50x50 array of arrays.
func fuzzEnv(tb testing.TB) *Env {
	env := sampleEnv(tb)
	nums := make([]any, 2000)
	for i := range nums {
		nums[i] = float64(i)
	}
	rows := make([]any, 50)
	for i := range rows {
		rows[i] = nums[:50]
	}
	env.Params["long"] = strings.Repeat("abcdefgh", 8<<10)
	env.Params["nums"] = nums
	env.Params["rows"] = rows
	return env
}

// exprGen turns bytes into an expression, typed so that most of them compile. Each choice reads one byte;
// when the bytes run out every choice is 0, which leads to a leaf, so every input yields a finite expression.
type exprGen struct {
	b     []byte
	nodes int
}

func newExprGen(b []byte) *exprGen { return &exprGen{b: b} }

func (g *exprGen) pick(n int) int {
	if len(g.b) == 0 {
		return 0
	}
	c := int(g.b[0])
	g.b = g.b[1:]
	return c % n
}

func pickOf(g *exprGen, options ...string) string { return options[g.pick(len(options))] }

// bool is the whole expression.
func (g *exprGen) bool() string { return g.boolean(6, 0) }

// stop reports whether to end the branch here: out of depth or nodes.
func (g *exprGen) stop(depth int) bool {
	g.nodes++
	return depth <= 0 || g.nodes > 120
}

// elem is the element of the innermost loop, or a field of it.
func (g *exprGen) elem() string { return pickOf(g, "#", ".role", ".content", "#[0]") }

func (g *exprGen) boolean(depth, loops int) string {
	if g.stop(depth) {
		return pickOf(g, "true", "false")
	}
	d := depth - 1
	switch g.pick(16) {
	case 0:
		if loops > 0 {
			return pickOf(g, "true", "false", "# == nil", ".role == \"user\"")
		}
		return pickOf(g, "true", "false", "params.stream", "params.nope == nil")
	case 1, 2:
		return "(" + g.num(d, loops) + " " + pickOf(g, "==", "!=", "<", "<=", ">", ">=") + " " + g.num(d, loops) + ")"
	case 3, 4:
		return "(" + g.str(d, loops) + " " + pickOf(g, "==", "!=", "<", ">=", "contains", "startsWith", "endsWith") + " " + g.str(d, loops) + ")"
	case 5:
		return "(" + g.str(d, loops) + " matches " + strconv.Quote(pickOf(g, "^a", "b+", "(?i)GPT", "[0-9]{2,}", "x|y")) + ")"
	case 6:
		return pickOf(g, "hasPrefix", "hasSuffix") + "(" + g.str(d, loops) + ", " + g.str(d, loops) + ")"
	case 7, 8:
		return "(" + g.boolean(d, loops) + " " + pickOf(g, "&&", "||", "and", "or") + " " + g.boolean(d, loops) + ")"
	case 9:
		return pickOf(g, "!", "not ") + g.boolean(d, loops)
	case 10:
		return "(" + pickOf(g, g.str(d, loops), g.num(d, loops), g.any(d, loops)) + " " + pickOf(g, "in", "not in") + " " + g.arr(d, loops) + ")"
	case 11, 12:
		return pickOf(g, "all", "any", "none", "one") + "(" + g.collection(loops) + ", " + g.boolean(d, loops+1) + ")"
	case 13:
		return "(" + g.boolean(d, loops) + " ? " + g.boolean(d, loops) + " : " + g.boolean(d, loops) + ")"
	case 14:
		return "(" + g.num(d, loops) + " in " + g.num(d, loops) + ".." + g.num(d, loops) + ")"
	default:
		if g.pick(4) > 0 {
			return "true"
		}
		return g.refused(d, loops) + " != nil"
	}
}

func (g *exprGen) num(depth, loops int) string {
	if g.stop(depth) {
		return g.int()
	}
	d := depth - 1
	switch g.pick(16) {
	case 0, 1:
		return g.int()
	case 2:
		if loops > 0 {
			return pickOf(g, "0.5", "1e300", "#[1]")
		}
		return pickOf(g, "params.max_tokens", "params.temperature", "0.5", "1e300", "params.nums[3]")
	case 3:
		if loops > 0 {
			return pickOf(g, "#", "len(#)", "#[1]")
		}
		return "len(" + pickOf(g, g.str(d, loops), g.arr(d, loops)) + ")"
	case 4, 5:
		return "(" + g.num(d, loops) + " " + pickOf(g, "+", "-", "*", "/", "%", "**") + " " + g.num(d, loops) + ")"
	case 6:
		return pickOf(g, "abs", "ceil", "floor", "round", "int", "float") + "(" + g.num(d, loops) + ")"
	case 7:
		return pickOf(g, "int", "float") + "(" + g.str(d, loops) + ")"
	case 8:
		return pickOf(g, "indexOf", "lastIndexOf") + "(" + g.str(d, loops) + ", " + g.str(d, loops) + ")"
	case 9:
		if g.pick(2) == 0 {
			return pickOf(g, "min", "max") + "(" + g.arr(d, loops) + ")"
		}
		return pickOf(g, "min", "max") + "(" + g.num(d, loops) + ", " + g.num(d, loops) + ")"
	case 10, 11:
		return pickOf(g, "count", "findIndex", "findLastIndex") + "(" + g.collection(loops) + ", " + g.boolean(d, loops+1) + ")"
	case 12:
		return "-" + g.num(d, loops)
	case 13:
		return "(" + g.boolean(d, loops) + " ? " + g.num(d, loops) + " : " + g.num(d, loops) + ")"
	case 14:
		return "(" + g.any(d, loops) + " ?? " + g.num(d, loops) + ")"
	default:
		if g.pick(4) > 0 {
			return g.int()
		}
		return "len(" + g.refused(d, loops) + ")"
	}
}

func (g *exprGen) str(depth, loops int) string {
	if g.stop(depth) {
		return g.lit()
	}
	d := depth - 1
	switch g.pick(15) {
	case 0, 1:
		return g.lit()
	case 2, 3:
		if loops > 0 && g.pick(8) > 0 {
			return g.elem()
		}
		return pickOf(g, "params.model", "params.long", "metadata.tier", "metadata.word", "url.pathname",
			"params.messages[1].content", "params.tags[0]")
	case 4, 5:
		return "(" + g.str(d, loops) + " + " + g.str(d, loops) + ")"
	case 6:
		return pickOf(g, "lower", "upper", "trim") + "(" + g.str(d, loops) + ")"
	case 7:
		return "string(" + pickOf(g, g.num(d, loops), g.boolean(d, loops), g.any(d, loops)) + ")"
	case 8:
		return "trim(" + g.str(d, loops) + ", " + g.lit() + ")"
	case 9:
		return pickOf(g, "trimPrefix", "trimSuffix") + "(" + g.str(d, loops) + ", " + g.str(d, loops) + ")"
	case 10:
		return g.str(d, loops) + "[" + g.int() + ":" + g.int() + "]"
	case 11:
		return "(" + g.boolean(d, loops) + " ? " + g.str(d, loops) + " : " + g.str(d, loops) + ")"
	case 12:
		return "type(" + g.any(d, loops) + ")"
	case 13:
		return pickOf(g, "find", "findLast") + "(params.messages, " + g.boolean(d, loops+1) + ").content"
	default:
		if g.pick(4) > 0 {
			return g.lit()
		}
		return "string(" + g.refused(d, loops) + ")"
	}
}

// arr is an array, for in, len, min and max.
func (g *exprGen) arr(depth, loops int) string {
	if g.stop(depth) {
		return "[1, \"a\"]"
	}
	d := depth - 1
	switch g.pick(6) {
	case 0:
		if loops > 0 {
			return g.elem()
		}
		return pickOf(g, "params.messages", "params.tags", "params.nums", "params.rows", "params.nums[5:50]")
	case 1:
		return "[" + g.str(d, loops) + ", " + g.num(d, loops) + ", " + g.any(d, loops) + "]"
	case 2:
		return "(" + g.num(d, loops) + ".." + g.num(d, loops) + ")"
	case 3:
		if loops > 0 {
			return g.elem()
		}
		return "params.rows[" + g.int() + "]"
	case 4:
		return "(" + g.boolean(d, loops) + " ? " + g.arr(d, loops) + " : " + g.arr(d, loops) + ")"
	default:
		return "[" + g.lit() + ", " + g.int() + "]"
	}
}

// any is a value of any type.
func (g *exprGen) any(depth, loops int) string {
	switch g.pick(7) {
	case 0:
		return g.str(depth, loops)
	case 1:
		return g.num(depth, loops)
	case 2:
		return g.arr(depth, loops)
	case 3:
		return "{" + strconv.Quote("k") + ": " + g.num(depth-1, loops) + "}"
	case 4:
		return pickOf(g, "first", "last") + "(" + g.arr(depth-1, loops) + ")"
	case 5:
		return "get(" + g.arr(depth-1, loops) + ", " + g.int() + ")"
	default:
		if loops > 0 {
			return pickOf(g, "nil", "#", ".content")
		}
		return pickOf(g, "nil", "params", "params.meta", "metadata")
	}
}

// collection is what a loop iterates: mostly what the vetter allows, sometimes what it refuses.
func (g *exprGen) collection(loops int) string {
	if loops > 0 && g.pick(2) == 0 {
		return pickOf(g, "#", ".content", "#[0:3]")
	}
	switch g.pick(7) {
	case 0:
		return pickOf(g, "params.messages", "params.tags", "params.nums", "params.rows", "params.long", "metadata")
	case 1:
		return g.int() + ".." + g.int()
	case 2:
		return "[" + g.lit() + ", " + g.int() + ", " + g.lit() + "]"
	case 3:
		return "params.nums[" + g.int() + ":" + g.int() + "]"
	case 4:
		return pickOf(g, "[params.long, params.long]", "params.long", "params.rows")
	default:
		return pickOf(g, "params.rows", "params.messages", "params.nums")
	}
}

// refused is a construct the vetter must refuse: it may never run.
func (g *exprGen) refused(depth, loops int) string {
	s := g.str(depth, loops)
	switch g.pick(7) {
	case 0:
		return "repeat(" + s + ", " + g.int() + ")"
	case 1:
		return "replace(" + s + ", \"\", " + s + ")"
	case 2:
		return "(let v = " + s + "; v + v)"
	case 3:
		return pickOf(g, "filter", "map", "sortBy", "groupBy") + "(" + g.collection(loops) + ", " + g.boolean(depth, loops+1) + ")"
	case 4:
		return pickOf(g, "join", "split", "toJSON", "fromJSON", "keys", "uniq", "sort", "concat", "toBase64") + "(" + s + ")"
	case 5:
		return "(" + s + " matches " + s + ")"
	default:
		return "$env"
	}
}

func (g *exprGen) int() string {
	switch g.pick(4) {
	case 0:
		return strconv.Itoa(g.pick(10))
	case 1:
		return strconv.Itoa(g.pick(256) * 397)
	case 2:
		return "-" + strconv.Itoa(g.pick(256))
	default:
		return strconv.Itoa(1 << g.pick(63))
	}
}

// lit is a string literal, rarely longer than the literal limit.
func (g *exprGen) lit() string {
	n := g.pick(32)
	switch n {
	case 30:
		n = 1000
	case 31:
		n = 1100
	}
	return strconv.Quote(strings.Repeat(pickOf(g, "a", "B", "é", "x y", "ȿ", "\xff"), n))
}
