package condition

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/llmgw/gateway/runtime/gwerr"
)

const (
	// exprMaxNodes bounds the size of a $expr program (expr's default is 10,000).
	exprMaxNodes = 1000
	// exprMemoryBudget bounds what one $expr run may allocate and iterate (expr's default is 1,000,000).
	exprMemoryBudget = 100_000
)

// exprEnv is what a $expr program sees: metadata, params and url.pathname.
type exprEnv struct {
	Metadata map[string]string `expr:"metadata"`
	Params   map[string]any    `expr:"params"`
	URL      exprURL           `expr:"url"`
}

type exprURL struct {
	Pathname string `expr:"pathname"`
}

// exprNode runs a compiled expr-lang program. Its VMs and environments are pooled, so a run allocates only
// what the program itself does.
type exprNode struct {
	prog *vm.Program
	pool sync.Pool // of *exprRun
}

type exprRun struct {
	vm  vm.VM
	env exprEnv
}

func compileExpr(raw json.RawMessage, path string) (Matcher, *gwerr.Error) {
	var src string
	if firstByte(raw) != '"' || json.Unmarshal(raw, &src) != nil {
		return nil, configErr(path, "$expr takes a string; got %s", clip(raw))
	}
	if strings.TrimSpace(src) == "" {
		return nil, configErr(path, "$expr is empty")
	}
	prog, err := expr.Compile(src, expr.Env(exprEnv{}), expr.AsBool(), expr.MaxNodes(exprMaxNodes))
	if err != nil {
		e := configErr(path, "%s", exprMessage(err))
		e.Err = err
		return nil, e
	}
	n := &exprNode{prog: prog}
	n.pool.New = func() any { return &exprRun{vm: vm.VM{MemoryBudget: exprMemoryBudget}} }
	return n, nil
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

// Match runs the program; a run-time error (a nil dereference, a type mismatch, the memory budget) is no match.
func (n *exprNode) Match(env *Env) bool {
	if env == nil {
		env = &emptyEnv
	}
	r := n.pool.Get().(*exprRun)
	r.env = exprEnv{Metadata: env.Metadata, Params: env.Params, URL: exprURL{Pathname: env.URLPath}}
	out, err := r.vm.Run(n.prog, &r.env)
	// Drop references to the request before pooling.
	r.env = exprEnv{}
	clear(r.vm.Stack[:cap(r.vm.Stack)])
	clear(r.vm.Variables)
	n.pool.Put(r)
	ok, _ := out.(bool)
	return err == nil && ok
}
