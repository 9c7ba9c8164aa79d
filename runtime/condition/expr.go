package condition

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// exprEnv is what a $expr program sees: metadata, params and url.pathname. spend is unexported, so programs
// cannot see it; the metered functions reach it through $env.
type exprEnv struct {
	Metadata map[string]string `expr:"metadata"`
	Params   map[string]any    `expr:"params"`
	URL      exprURL           `expr:"url"`
	spend    exprSpend
}

type exprURL struct {
	Pathname string `expr:"pathname"`
}

// exprNode runs a compiled expr-lang program. Its VMs and environments are pooled, so a run allocates only
// what the program itself does.
type exprNode struct {
	prog *vm.Program
	path string    // the JSON path of the $expr, for run-time errors
	pool sync.Pool // of *exprRun
}

type exprRun struct {
	vm  vm.VM
	env exprEnv
}

// exprPooledLoops is how many loop entries a pooled VM may have kept scopes for.
const exprPooledLoops = 64

func compileExpr(raw json.RawMessage, path string) (Matcher, *gwerr.Error) {
	var src string
	if firstByte(raw) != '"' || json.Unmarshal(raw, &src) != nil {
		return nil, configErr(path, "$expr takes a string; got %s", clip(raw))
	}
	if strings.TrimSpace(src) == "" {
		return nil, configErr(path, "$expr is empty")
	}
	if len(src) > exprMaxSource {
		return nil, configErr(path, "$expr is %d bytes long; at most %d are allowed", len(src), exprMaxSource)
	}
	// Vet the plain parse first, so that a refused function is named as such rather than as an unknown name.
	tree, err := parser.ParseWithConfig(src, exprParseConfig())
	if err != nil {
		return nil, exprErr(path, err)
	}
	if why := vetExpr(tree); why != "" {
		return nil, configErr(path, "%s", why)
	}
	opts := append([]expr.Option{
		expr.Env(exprEnv{}), expr.AsBool(), expr.MaxNodes(exprMaxNodes), expr.DisableAllBuiltins(),
		expr.Patch(&exprMeter{}),
	}, exprFunctionOptions...)
	for name := range exprFunctions {
		opts = append(opts, expr.EnableBuiltin(name))
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, exprErr(path, err)
	}
	n := &exprNode{prog: prog, path: path}
	n.pool.New = func() any { return &exprRun{vm: vm.VM{MemoryBudget: exprMemoryBudget}} }
	return n, nil
}

func exprErr(path string, err error) *gwerr.Error {
	e := configErr(path, "%s", exprMessage(err))
	e.Err = err
	return e
}

// exprMessage is expr's error message on one line, with its position but without the source snippet.
func exprMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		if fe.Snippet != "" {
			return fe.Message + " (" + strconv.Itoa(fe.Line) + ":" + strconv.Itoa(fe.Column+1) + ")"
		}
		return fe.Message
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// Match runs the program; a run that fails or goes over a budget is no match (Eval tells the two apart).
func (n *exprNode) Match(env *Env) bool {
	ok, _ := n.Eval(env)
	return ok
}

// Eval runs the program. A run-time error (a nil dereference, a type mismatch) or a non-boolean result is no
// match; a run that goes over a budget is a 400 naming the $expr, since silently not matching would route the
// request somewhere its config did not mean to.
func (n *exprNode) Eval(env *Env) (bool, *gwerr.Error) {
	if env == nil {
		env = &emptyEnv
	}
	r := n.pool.Get().(*exprRun)
	r.env = exprEnv{Metadata: env.Metadata, Params: env.Params, URL: exprURL{Pathname: env.URLPath}}
	out, err := r.vm.Run(n.prog, &r.env)
	// Drop references to the request before pooling. A VM that entered many loops keeps a scope per loop
	// (vm.VM never shrinks its scope pool), and one whose stack grew past what a program of exprMaxNodes
	// needs keeps that: replace it rather than let the pool pin them.
	loops := r.env.spend.loops
	r.env = exprEnv{}
	if loops > exprPooledLoops || cap(r.vm.Stack) > exprMaxNodes {
		r.vm = vm.VM{MemoryBudget: exprMemoryBudget}
	} else {
		clear(r.vm.Stack[:cap(r.vm.Stack)])
		clear(r.vm.Variables)
	}
	n.pool.Put(r)
	if err != nil {
		if reason := overBudget(err); reason != "" {
			return false, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: n.path,
				Message: n.path + ": the expression went over its limits on this request: " + reason}
		}
		return false, nil
	}
	ok, _ := out.(bool)
	return ok, nil
}

// overBudget is the reason a run stopped on a budget, or "" when it stopped for another reason.
func overBudget(err error) string {
	var le *exprLimitError
	if errors.As(err, &le) {
		return le.reason
	}
	var fe *file.Error
	if errors.As(err, &fe) && fe.Message == "memory budget exceeded" { // vm.VM's panic on its MemoryBudget
		return "its ranges and array literals hold more than " + strconv.Itoa(exprMemoryBudget) + " elements"
	}
	return ""
}
