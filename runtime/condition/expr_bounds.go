package condition

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm/runtime"
)

// The bounds of a $expr. Any gateway key can send a config, so a query must not be able to cost more than a
// small multiple of the request it reads. Outside all()/any()/... every node runs at most once and each of
// the allowed operations is linear in its operands, whose sizes are bounded by the body limit (request
// fields) or by exprMaxBuilt (strings the program builds). Loops are metered in steps, string building in
// bytes; exprMemoryBudget is expr's own budget for ranges and array literals.
const (
	// exprMaxSource bounds a $expr's text, and with it the total size of its literals.
	exprMaxSource = 8 << 10
	// exprMaxLiteral bounds one string literal, which a loop may scan once per element.
	exprMaxLiteral = 1 << 10
	// exprMaxNodes bounds the size of a $expr program (expr's default is 10,000).
	exprMaxNodes = 1000
	// exprMemoryBudget bounds the elements of the ranges and array literals one run builds (expr's default is
	// 1,000,000).
	exprMemoryBudget = 100_000
	// exprMaxSteps bounds the loop work of one run: an element visited by all(), any(), ... costs one step per
	// node and literal byte of the loop's predicate, and entering a loop costs exprLoopEntry.
	exprMaxSteps = 1_000_000
	// exprLoopEntry is the cost of entering a loop, empty or not: vm.VM keeps a scope of about 160 bytes per
	// loop entered until the run ends.
	exprLoopEntry = 100
	// exprMaxBuilt bounds the bytes of the strings one run builds with +, lower, upper and string.
	exprMaxBuilt = 1 << 20
)

// exprFunctions is the allow-list of expr-lang builtins. Each was read in expr v1.17.8: it runs in time linear
// in its arguments and allocates nothing bigger than them (trim, trimPrefix and trimSuffix return substrings,
// the others scalars), except lower, upper and string, which are metered (exprMeter). Left out: repeat and
// replace (their output is not bounded by their input: the OOM of issue 12); split, splitAfter, join, keys,
// values, toPairs, fromPairs, concat, flatten, reverse, sort, median, toJSON, fromJSON, toBase64 and
// fromBase64 (they copy their input into new strings, arrays or maps, unmetered); uniq (quadratic); now,
// date, duration and timezone (the clock, zoneinfo files); take, mean, sum and the bit* functions (nothing a
// routing condition needs).
var exprFunctions = map[string]bool{
	"len": true, "type": true, "abs": true, "ceil": true, "floor": true, "round": true,
	"int": true, "float": true, "string": true,
	"lower": true, "upper": true, "trim": true, "trimPrefix": true, "trimSuffix": true,
	"hasPrefix": true, "hasSuffix": true, "indexOf": true, "lastIndexOf": true,
	"min": true, "max": true, "first": true, "last": true, "get": true,
}

// exprPredicates are the allowed loops. expr parses every predicate builtin whatever the config disables, so
// the vetter refuses the others: filter, map, groupBy and sortBy build arrays as long as their input, reduce
// and sum fold without bound, and findLast and findLastIndex leak a VM stack slot per element in v1.17.8
// (emitLoopBackwards never pops its bound check).
var exprPredicates = map[string]bool{
	"all": true, "any": true, "none": true, "one": true, "count": true, "find": true, "findIndex": true,
}

// exprAllowed is the allow-list as error messages print it.
var exprAllowed = func() string {
	var names []string
	for name := range exprFunctions {
		names = append(names, name)
	}
	for name := range exprPredicates {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}()

// exprParseConfig is the config of the vetting parse: every builtin parses as a BuiltinNode, so the vetter sees
// the names the allow-list leaves out.
func exprParseConfig() *conf.Config {
	c := conf.CreateNew()
	c.MaxNodes = exprMaxNodes
	return c
}

// vetExpr refuses what the bounds cannot cover: functions off the allow-list, let (it shares a value, so a
// program could double a string per node), $env, map literals, patterns and trim cutsets that are not literals
// (compiled or scanned once per call), long literals, constant ranges over the memory budget, and loops that
// could cost more than their input (see collection and the identifier rule). It returns "" or the first
// problem with its position.
func vetExpr(tree *parser.Tree) string {
	v := exprVetter{}
	v.walk(tree.Node)
	if v.bad == nil {
		return ""
	}
	fe := &file.Error{Location: v.bad.Location(), Message: v.why}
	return exprMessage(fe.Bind(tree.Source))
}

type exprVetter struct {
	loops []string // the predicates around the node being walked, innermost last
	bad   ast.Node
	why   string
}

func (v *exprVetter) fail(n ast.Node, format string, args ...any) {
	if v.bad == nil {
		v.bad, v.why = n, fmt.Sprintf(format, args...)
	}
}

func (v *exprVetter) walk(node ast.Node) {
	if node == nil || v.bad != nil {
		return
	}
	switch n := node.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.PointerNode:
	case *ast.StringNode:
		if len(n.Value) > exprMaxLiteral {
			v.fail(n, "a string literal of %d bytes is longer than the %d allowed", len(n.Value), exprMaxLiteral)
		}
	case *ast.BytesNode:
		if len(n.Value) > exprMaxLiteral {
			v.fail(n, "a bytes literal of %d bytes is longer than the %d allowed", len(n.Value), exprMaxLiteral)
		}
	case *ast.IdentifierNode:
		switch {
		case n.Value == "$env":
			v.fail(n, "$env is not available in $expr; use metadata, params and url")
		case len(v.loops) > 0:
			// A request field read in a loop is scanned once per element: quadratic in the body.
			v.fail(n, "inside %s() only the element (#, .field) and literals can be used, not %s",
				v.loops[len(v.loops)-1], n.Value)
		}
	case *ast.UnaryNode:
		v.walk(n.Node)
	case *ast.BinaryNode:
		switch n.Operator {
		case "matches":
			if _, ok := n.Right.(*ast.StringNode); !ok {
				v.fail(n, "matches takes a string literal as its pattern")
			}
		case "..":
			if lo, ok := constInt(n.Left); ok {
				if hi, ok := constInt(n.Right); ok && hi >= lo && uint64(hi)-uint64(lo) >= exprMemoryBudget {
					v.fail(n, "the range %d..%d is longer than the %d elements allowed", lo, hi, exprMemoryBudget)
				}
			}
		}
		v.walk(n.Left)
		v.walk(n.Right)
	case *ast.ChainNode:
		v.walk(n.Node)
	case *ast.MemberNode:
		v.walk(n.Node)
		v.walk(n.Property)
	case *ast.SliceNode:
		v.walk(n.Node)
		v.walk(n.From)
		v.walk(n.To)
	case *ast.CallNode:
		v.fail(n, "function %s is not allowed in $expr (allowed: %s)", calleeName(n.Callee), exprAllowed)
	case *ast.BuiltinNode:
		v.builtin(n)
	case *ast.PredicateNode:
		v.walk(n.Node)
	case *ast.VariableDeclaratorNode:
		v.fail(n, "let is not allowed in $expr")
	case *ast.SequenceNode:
		for _, s := range n.Nodes {
			v.walk(s)
		}
	case *ast.ConditionalNode:
		v.walk(n.Cond)
		v.walk(n.Exp1)
		v.walk(n.Exp2)
	case *ast.ArrayNode:
		for _, e := range n.Nodes {
			v.walk(e)
		}
	case *ast.MapNode:
		// expr charges a map literal one unit of its memory budget per key, for some 300 bytes.
		v.fail(n, "map literals are not allowed in $expr")
	default:
		v.fail(node, "%s is not allowed in $expr", strings.TrimPrefix(fmt.Sprintf("%T", node), "*ast."))
	}
}

func (v *exprVetter) builtin(n *ast.BuiltinNode) {
	switch {
	case exprPredicates[n.Name]:
		if len(n.Arguments) == 0 {
			return // the checker reports it
		}
		if !v.collection(n.Arguments[0]) {
			where := "a field of params or metadata"
			if len(v.loops) > 0 {
				where = "a field of the element (#.field)"
			}
			v.fail(n.Arguments[0], "%s() loops over %s, a range or an array of literals", n.Name, where)
			return
		}
		v.walk(n.Arguments[0])
		v.loops = append(v.loops, n.Name)
		for _, a := range n.Arguments[1:] {
			v.walk(a)
		}
		v.loops = v.loops[:len(v.loops)-1]
	case exprFunctions[n.Name]:
		if n.Name == "trim" && len(n.Arguments) == 2 {
			if _, ok := n.Arguments[1].(*ast.StringNode); !ok {
				v.fail(n.Arguments[1], "trim takes a string literal as its cutset")
			}
		}
		for _, a := range n.Arguments {
			v.walk(a)
		}
	default:
		v.fail(n, "function %s is not allowed in $expr (allowed: %s)", n.Name, exprAllowed)
	}
}

// collection reports whether a loop's collection cannot repeat a value: a path into the request (or, in a
// nested loop, into the element), whose elements add up to at most the body; a range, metered by expr's
// budget; or an array of literals. An array such as [params.big, params.big, ...] would let a loop scan one
// field once per node.
func (v *exprVetter) collection(node ast.Node) bool {
	switch n := node.(type) {
	case *ast.BinaryNode:
		return n.Operator == ".."
	case *ast.ArrayNode:
		for _, e := range n.Nodes {
			if !isLiteral(e) {
				return false
			}
		}
		return true
	}
	for {
		switch n := node.(type) {
		case *ast.MemberNode:
			node = n.Node
		case *ast.ChainNode:
			node = n.Node
		case *ast.SliceNode:
			node = n.Node
		case *ast.IdentifierNode:
			return len(v.loops) == 0 && (n.Value == "params" || n.Value == "metadata" || n.Value == "url")
		case *ast.PointerNode:
			return len(v.loops) > 0 && n.Name == ""
		default:
			return false
		}
	}
}

func isLiteral(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.BytesNode:
		return true
	case *ast.UnaryNode:
		return n.Operator == "-" && isLiteral(n.Node)
	}
	return false
}

func constInt(n ast.Node) (int64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return int64(n.Value), true
	case *ast.UnaryNode:
		if i, ok := constInt(n.Node); ok && n.Operator == "-" {
			return -i, true
		}
	}
	return 0, false
}

func calleeName(n ast.Node) string {
	if id, ok := n.(*ast.IdentifierNode); ok {
		return id.Value
	}
	return n.String()
}

// The metered functions. The patch (exprMeter) rewrites what it meters into calls that take $env first, the
// *exprEnv of the run, whose exprSpend is per run.
const (
	fnAdd    = "$add"    // + with an operand of unknown type
	fnConcat = "$concat" // + of two strings
	fnLoop   = "$loop"
	fnLower  = "$lower"
	fnUpper  = "$upper"
	fnString = "$string"
)

// exprFunctionOptions registers the metered functions.
var exprFunctionOptions = []expr.Option{
	expr.Function(fnAdd, exprAdd, new(func(any, any, any) any)),
	expr.Function(fnConcat, exprAdd, new(func(any, string, string) string)),
	expr.Function(fnLoop, exprLoop, new(func(any, any, int, int) any)),
	expr.Function(fnLower, exprCase(strings.ToLower), new(func(any, string) string)),
	expr.Function(fnUpper, exprCase(strings.ToUpper), new(func(any, string) string)),
	expr.Function(fnString, exprString, new(func(any, any) string)),
}

// exprSpend is what one run has spent of its budgets.
type exprSpend struct {
	steps int
	built int
	loops int // loops entered
}

// exprLimitError stops a run that went over a budget; Eval turns it into a 400.
type exprLimitError struct{ reason string }

func (e *exprLimitError) Error() string { return e.reason }

var (
	errExprSteps = &exprLimitError{fmt.Sprintf("its loops take more than %d steps (elements times the size of the predicate)", exprMaxSteps)}
	errExprBuilt = &exprLimitError{fmt.Sprintf("it builds more than %d bytes of strings (with +, lower, upper and string)", exprMaxBuilt)}
)

func spendOf(env any) *exprSpend { return &env.(*exprEnv).spend }

func (s *exprSpend) step(n int) error {
	if n > exprMaxSteps-s.steps {
		s.steps = exprMaxSteps
		return errExprSteps
	}
	s.steps += n
	return nil
}

func (s *exprSpend) build(n int) error {
	if n > exprMaxBuilt-s.built {
		s.built = exprMaxBuilt
		return errExprBuilt
	}
	s.built += n
	return nil
}

// exprAdd is +: metered when it concatenates, expr's own addition otherwise.
func exprAdd(args ...any) (any, error) {
	a, aok := args[1].(string)
	b, bok := args[2].(string)
	if !aok || !bok {
		return runtime.Add(args[1], args[2]), nil
	}
	if err := spendOf(args[0]).build(len(a) + len(b)); err != nil {
		return nil, err
	}
	return a + b, nil
}

// exprCase is lower or upper. The input is charged before the call; a case change can make the output longer
// (an invalid byte becomes a 3-byte U+FFFD), and the excess is charged after.
func exprCase(fn func(string) string) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		s := args[1].(string)
		sp := spendOf(args[0])
		if err := sp.build(len(s)); err != nil {
			return nil, err
		}
		out := fn(s)
		if len(out) > len(s) {
			if err := sp.build(len(out) - len(s)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// exprString is string() of a scalar. expr's builtin formats arrays and maps too, whose text can be far larger
// than the body they come from.
func exprString(args ...any) (any, error) {
	switch v := args[1].(type) {
	case string:
		return v, nil
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		out := builtin.String(v).(string)
		if err := spendOf(args[0]).build(len(out)); err != nil {
			return nil, err
		}
		return out, nil
	default:
		return nil, fmt.Errorf("string() takes a number, a boolean or a string, not %s", builtin.Type(v))
	}
}

// exprLoop charges a loop before it starts: its entry, and the collection's length times the predicate's
// weight.
func exprLoop(args ...any) (any, error) {
	n := 0
	switch c := args[1].(type) {
	case []any:
		n = len(c)
	case []int:
		n = len(c)
	case nil:
	default:
		switch v := reflect.ValueOf(c); v.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
			n = v.Len()
		}
	}
	sp := spendOf(args[0])
	sp.loops++
	if err := sp.step(exprLoopEntry + n*args[2].(int)); err != nil {
		return nil, err
	}
	return args[1], nil
}

// exprMeter is the patch that routes metered operations through the functions above. It runs after expr's
// type check, so + is left alone when either side is known not to be a string, and literal concatenations are
// left for the optimizer to fold at compile time.
type exprMeter struct {
	loops int
}

func (p *exprMeter) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator == "+" && mayBeString(n.Left) && mayBeString(n.Right) &&
			!(constString(n.Left) && constString(n.Right)) {
			fn := fnAdd
			if n.Left.Type().Kind() == reflect.String && n.Right.Type().Kind() == reflect.String {
				fn = fnConcat // keeps the result typed, for the checker
			}
			ast.Patch(node, meteredCall(fn, n.Left, n.Right))
		}
	case *ast.BuiltinNode:
		switch {
		case exprPredicates[n.Name] && len(n.Arguments) > 0:
			// The id keeps the optimizer from merging two loops (all(x, p) && all(x, q)) into one
			// charged once.
			p.loops++
			weight := 1
			for _, a := range n.Arguments[1:] {
				weight += exprWeight(a)
			}
			n.Arguments[0] = meteredCall(fnLoop, n.Arguments[0], &ast.IntegerNode{Value: weight},
				&ast.IntegerNode{Value: p.loops})
		case len(n.Arguments) == 1 && (n.Name == "lower" || n.Name == "upper" || n.Name == "string"):
			ast.Patch(node, meteredCall("$"+n.Name, n.Arguments[0]))
		}
	}
}

func meteredCall(name string, args ...ast.Node) ast.Node {
	return &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: name},
		Arguments: append([]ast.Node{&ast.IdentifierNode{Value: "$env"}}, args...),
	}
}

func mayBeString(n ast.Node) bool {
	k := n.Type().Kind()
	return k == reflect.String || k == reflect.Interface
}

func constString(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.StringNode:
		return true
	case *ast.BinaryNode:
		return n.Operator == "+" && constString(n.Left) && constString(n.Right)
	}
	return false
}

// exprWeight is what one pass of a predicate costs: its nodes, plus its literal bytes, which an operation
// such as "..." contains # may scan in full.
func exprWeight(n ast.Node) int {
	w := &weigher{}
	ast.Walk(&n, w)
	return w.w
}

type weigher struct{ w int }

func (w *weigher) Visit(node *ast.Node) {
	w.w++
	switch n := (*node).(type) {
	case *ast.StringNode:
		w.w += len(n.Value)
	case *ast.BytesNode:
		w.w += len(n.Value)
	}
}
