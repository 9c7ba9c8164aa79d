package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The CLI: `gateway NOUN VERB [ARGS]` talks to a running gateway's admin API (DESIGN.md, "Operating the gateway").
// It holds no management logic of its own: each command builds one request, sends it and prints the answer, as a
// table for people or, with --json, the API's JSON as it came.

// defaultGatewayURL is where the CLI finds the gateway without --url or GATEWAY_URL.
const defaultGatewayURL = "http://127.0.0.1:8787"

// isCLI reports whether args (the process's arguments without the program name) name a CLI command rather than
// the server: no arguments, `serve` and a first argument starting with "-" (today's flags) serve.
func isCLI(args []string) bool {
	if len(args) == 0 || args[0] == "serve" {
		return false
	}
	if !strings.HasPrefix(args[0], "-") {
		return true
	}
	// The CLI's global flags may come first (gateway --json keys list): a noun among the arguments means the
	// CLI. The server's flags take addresses, paths, sizes and durations, never a noun.
	for _, a := range args {
		for _, n := range nouns() {
			if a == n.name {
				return true
			}
		}
	}
	return false
}

// apiError is an answer of the gateway with a status of 400 or more; its body is printed as it came.
type apiError struct {
	status int
	body   []byte
}

func (e *apiError) Error() string {
	if b := bytes.TrimSpace(e.body); len(b) > 0 {
		return string(b)
	}
	return fmt.Sprintf("HTTP %d", e.status)
}

// client sends the CLI's requests. It is made per command run and is not shared.
type client struct {
	url, key, virtualKey string
	asJSON               bool
	http                 *http.Client
	stdin                io.Reader
	stdout               io.Writer
}

// do sends one request and returns the answer's body; an answer of 400 or more is an *apiError.
func (c *client) do(ctx context.Context, method, path string, body io.Reader, contentType string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.url, "/")+path, body)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("x-gateway-api-key", c.key)
	}
	if c.virtualKey != "" {
		req.Header.Set("x-gateway-virtual-key", c.virtualKey)
	}
	if contentType != "" {
		req.Header.Set("content-type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode >= 400 {
		return nil, &apiError{status: resp.StatusCode, body: out}
	}
	return out, nil
}

// runCLI runs the command tree over args and returns the process's exit status: 0, or 1 after printing the
// error (an API error as the API gave it) to stderr.
func runCLI(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newCLI(getenv, stdin, stdout)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ae *apiError
	if errors.As(err, &ae) {
		fmt.Fprintln(stderr, ae.Error())
	} else {
		fmt.Fprintln(stderr, "gateway:", err)
	}
	return 1
}

// newCLI builds the command tree. getenv supplies GATEWAY_URL and GATEWAY_API_KEY.
func newCLI(getenv func(string) string, stdin io.Reader, stdout io.Writer) *cobra.Command {
	c := &client{http: &http.Client{Timeout: 5 * time.Minute}, stdin: stdin, stdout: stdout}
	url := getenv("GATEWAY_URL")
	if url == "" {
		url = defaultGatewayURL
	}
	root := &cobra.Command{
		Use:   "gateway",
		Short: "Manage a running gateway through its admin API",
		Long: "gateway NOUN VERB [ARGS] talks to a running gateway's admin API with an admin key.\n" +
			"`gateway` alone, `gateway serve` or `gateway --flags` serves (see `gateway serve --help`).",
		Example:       "  export GATEWAY_API_KEY=gw-...\n  gateway keys list\n  gateway providers add --slug s --provider openai --api-key sk-...\n  gateway keys list --json",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&c.url, "url", url, "the gateway's address (env GATEWAY_URL)")
	pf.StringVar(&c.key, "key", getenv("GATEWAY_API_KEY"), "an admin API key (env GATEWAY_API_KEY)")
	pf.BoolVar(&c.asJSON, "json", false, "print the API's JSON as it came")
	root.CompletionOptions.DisableDefaultCmd = true
	for _, n := range nouns() {
		root.AddCommand(n.command(c))
	}
	return root
}

// printAnswer prints an answer: as it came with --json, else a list as a table, an object as fields.
func (c *client) printAnswer(body []byte, cols []string) error {
	if c.asJSON {
		_, err := c.stdout.Write(append(bytes.TrimRight(body, "\n"), '\n'))
		return err
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		_, err := c.stdout.Write(body) // not an object: as it came
		return err
	}
	if v["object"] == "list" {
		items, _ := v["data"].([]any)
		return printTable(c.stdout, cols, items)
	}
	if v["deleted"] == true {
		name := v["id"]
		if name == nil {
			name = v["slug"] // providers are named by slug
		}
		_, err := fmt.Fprintf(c.stdout, "deleted %s\n", cell(name))
		return err
	}
	return printFields(c.stdout, v)
}
