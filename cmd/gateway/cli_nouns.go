package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// fieldKind says how a flag's text becomes a JSON value.
type fieldKind int

const (
	kString fieldKind = iota
	kBool
	kNumber
	kJSON // the flag's text is a JSON value (an object, an array, ...)
)

// field is one JSON field of a request body, set by the flag of its name in kebab case.
type field struct {
	name  string // JSON name: custom_host → --custom-host
	kind  fieldKind
	usage string
}

func flagName(jsonName string) string { return strings.ReplaceAll(jsonName, "_", "-") }

// write is a verb that sends a JSON body: create/add (POST to the collection) or put (PUT to one item).
type write struct {
	verb    string // "create", "add", "put"
	one     bool   // PUT /path/{id} rather than POST /path
	fields  []field
	example string
}

// query is a query parameter of list or delete, set by the flag of its name in kebab case; a flag flag (--force)
// sends "true".
type query struct {
	name, usage string
	flag        bool
}

// noun is one resource of the admin API and its commands.
type noun struct {
	name, short, path string
	arg               string   // what names one item: ID, SLUG
	cols              []string // the list table's columns
	list, get, del    bool
	listQuery         []query
	delQuery          []query
	writes            []write
	virtualKey        bool // --virtual-key applies
	extra             func(c *client, n *noun) []*cobra.Command
}

func (n *noun) command(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: n.name, Short: n.short,
		Example: fmt.Sprintf("  gateway %s list\n  gateway %s list --json", n.name, n.name)}
	if !n.list {
		cmd.Example = fmt.Sprintf("  gateway %s --help", n.name)
	}
	if n.virtualKey {
		cmd.PersistentFlags().StringVar(&c.virtualKey, "virtual-key", "", "a stored provider's slug (x-gateway-virtual-key)")
	}
	if n.list {
		cmd.AddCommand(n.listCommand(c))
	}
	if n.get {
		cmd.AddCommand(&cobra.Command{Use: "get " + n.arg, Short: "Show one of " + n.name, Args: cobra.ExactArgs(1),
			Example: fmt.Sprintf("  gateway %s get %s\n  gateway %s get %s --json", n.name, n.arg, n.name, n.arg),
			RunE: func(cmd *cobra.Command, args []string) error {
				body, err := c.do(cmd.Context(), "GET", n.item(args[0]), nil, "")
				if err != nil {
					return err
				}
				return c.printAnswer(body, n.cols)
			}})
	}
	for _, w := range n.writes {
		cmd.AddCommand(n.writeCommand(c, w))
	}
	if n.del {
		cmd.AddCommand(n.deleteCommand(c))
	}
	if n.extra != nil {
		cmd.AddCommand(n.extra(c, n)...)
	}
	return cmd
}

// item is the path of one item.
func (n *noun) item(id string) string { return n.path + "/" + url.PathEscape(id) }

func (n *noun) listCommand(c *client) *cobra.Command {
	vals := map[string]*string{}
	cmd := &cobra.Command{Use: "list", Short: "List " + n.name, Args: cobra.NoArgs,
		Example: fmt.Sprintf("  gateway %s list\n  gateway %s list --json", n.name, n.name),
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, err := c.do(cmd.Context(), "GET", n.path+encodeQuery(cmd, vals), nil, "")
			if err != nil {
				return err
			}
			return c.printAnswer(body, n.cols)
		}}
	for _, q := range append([]query{{name: "limit", usage: "at most this many items"}, {name: "after", usage: "the items after this ID"}}, n.listQuery...) {
		vals[q.name] = cmd.Flags().String(flagName(q.name), "", q.usage)
	}
	return cmd
}

func (n *noun) deleteCommand(c *client) *cobra.Command {
	vals := map[string]*string{}
	cmd := &cobra.Command{Use: "delete " + n.arg, Short: "Delete one of " + n.name, Args: cobra.ExactArgs(1),
		Example: fmt.Sprintf("  gateway %s delete %s", n.name, n.arg),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := c.do(cmd.Context(), "DELETE", n.item(args[0])+encodeQuery(cmd, vals), nil, "")
			if err != nil {
				return err
			}
			return c.printAnswer(body, n.cols)
		}}
	for _, q := range n.delQuery {
		if q.flag {
			cmd.Flags().Bool(flagName(q.name), false, q.usage)
			yes := "true"
			vals[q.name] = &yes
			continue
		}
		vals[q.name] = cmd.Flags().String(flagName(q.name), "", q.usage)
	}
	return cmd
}

// encodeQuery is the query string of the flags the caller set, "" for none.
func encodeQuery(cmd *cobra.Command, vals map[string]*string) string {
	q := url.Values{}
	for name, v := range vals {
		if cmd.Flags().Changed(flagName(name)) {
			q.Set(name, *v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func (n *noun) writeCommand(c *client, w write) *cobra.Command {
	use, short, method := w.verb, "Make one of "+n.name, "POST"
	if w.one {
		use, short, method = w.verb+" "+n.arg, "Replace or change one of "+n.name, "PUT"
	}
	var file string
	strs := map[string]*string{}
	bools := map[string]*bool{}
	cmd := &cobra.Command{Use: use, Short: short, Example: w.example,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := buildBody(cmd, c.stdin, file, w.fields, strs, bools)
			if err != nil {
				return err
			}
			path := n.path
			if w.one {
				path = n.item(args[0])
			}
			out, err := c.do(cmd.Context(), method, path, bytes.NewReader(body), "application/json")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	cmd.Args = cobra.NoArgs
	if w.one {
		cmd.Args = cobra.ExactArgs(1)
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the JSON body from this file (- for stdin); flags override its fields")
	for _, f := range w.fields {
		if f.kind == kBool {
			bools[f.name] = cmd.Flags().Bool(flagName(f.name), false, f.usage)
		} else {
			strs[f.name] = cmd.Flags().String(flagName(f.name), "", f.usage)
		}
	}
	return cmd
}

// buildBody makes a request body: the JSON object of file (if any) with the fields of the flags set over it.
func buildBody(cmd *cobra.Command, stdin io.Reader, file string, fields []field, strs map[string]*string, bools map[string]*bool) ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if file != "" {
		raw, err := readInput(stdin, file)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object: %w", file, err)
		}
	}
	for _, f := range fields {
		if !cmd.Flags().Changed(flagName(f.name)) {
			continue
		}
		var v json.RawMessage
		switch f.kind {
		case kBool:
			v, _ = json.Marshal(*bools[f.name])
		case kString:
			v, _ = json.Marshal(*strs[f.name])
		default:
			s := strings.TrimSpace(*strs[f.name])
			if !json.Valid([]byte(s)) {
				return nil, fmt.Errorf("--%s: not a JSON value: %s", flagName(f.name), s)
			}
			v = json.RawMessage(s)
		}
		obj[f.name] = v
	}
	return json.Marshal(obj)
}

// readInput reads a file named on the command line, or stdin for "-".
func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}
