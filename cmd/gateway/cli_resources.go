package main

import (
	"bytes"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// nouns are the resources of the admin API the CLI manages, in the order `gateway --help` lists them. Paths
// and bodies are the routes' (routes/server.go); logs is read-only (cli_logs.go).
func nouns() []*noun {
	return []*noun{
		{name: "workspaces", short: "Workspaces (organisation admin)", path: "/v1/workspaces", arg: "ID-OR-SLUG",
			cols: []string{"id", "slug", "name", "organisation_id"}, list: true, get: true, del: true,
			delQuery: []query{{name: "force", usage: "delete it with everything it holds", flag: true}},
			writes: []write{
				{verb: "create", fields: []field{{"slug", kString, "the workspace's slug"}, {"id", kString, "its ID (a UUID; default: a new one)"},
					{"organisation_id", kString, "its organisation's ID"}, {"name", kString, "a display name"}},
					example: "  gateway workspaces create --slug team"},
				{verb: "put", one: true, fields: []field{{"slug", kString, "a new slug"}, {"name", kString, "a new display name"}},
					example: "  gateway workspaces put team --slug team-b"},
			}},
		{name: "keys", short: "API keys of the workspace", path: "/v1/api-keys", arg: "ID",
			cols: []string{"id", "name", "admin", "hint", "created_at"}, list: true, get: true, del: true,
			writes: []write{{verb: "create", fields: []field{{"name", kString, "a display name"}, {"admin", kBool, "an admin key"},
				{"workspace", kString, "the workspace (ID or slug; organisation admins)"},
				{"organisation_admin", kBool, "an organisation admin key (organisation admins)"}},
				example: "  gateway keys create --name ci\n  gateway keys create --name ops --admin"}}},
		{name: "providers", short: "Stored providers (virtual keys)", path: "/v1/providers", arg: "SLUG",
			cols: []string{"slug", "provider", "name", "custom_host", "api_key"}, list: true, get: true, del: true,
			delQuery: []query{{name: "force", usage: "delete it although configs or prompts name it", flag: true}},
			writes: []write{
				{verb: "add", fields: providerFields(true),
					example: "  gateway providers add --slug s --provider openai --api-key sk-... --custom-host https://api.example.com/v1\n  gateway providers add -f provider.json"},
				{verb: "put", one: true, fields: providerFields(false),
					example: "  gateway providers put s -f provider.json"},
			}},
		{name: "mcp-servers", short: "Upstream MCP servers (the registry; header values are never shown)", path: "/v1/mcp-servers", arg: "ID",
			cols: []string{"id", "url", "headers", "allow_tools", "deny_tools", "updated_at"}, list: true, get: true, del: true,
			writes: []write{
				{verb: "create", fields: mcpServerFields(true),
					example: "  gateway mcp-servers create --id docs --url https://mcp.example.com/mcp --headers '{\"Authorization\": \"Bearer ...\"}'\n  gateway mcp-servers create -f server.json"},
				{verb: "put", one: true, fields: mcpServerFields(false),
					example: "  gateway mcp-servers put docs -f server.json   # a header sent back as it reads (\"…abcd\") keeps its value"},
			}},
		{name: "configs", short: "Saved configs", path: "/v1/configs", arg: "ID",
			cols: []string{"id", "workspace_id", "updated_at"}, list: true, get: true, del: true,
			writes: []write{
				{verb: "create", fields: []field{{"id", kString, "the config's ID"}, {"config", kJSON, "the config (JSON)"}},
					example: `  gateway configs create --id cfg-a --config '{"retry": {"attempts": 2}}'`},
				{verb: "put", one: true, fields: []field{{"config", kJSON, "the config (JSON)"}},
					example: `  gateway configs put cfg-a --config '{"cache": {"mode": "simple"}}'`},
			}},
		{name: "guardrails", short: "Saved guardrails", path: "/v1/guardrails", arg: "ID",
			cols: []string{"id", "workspace_id", "updated_at"}, list: true, get: true, del: true,
			writes: []write{{verb: "put", one: true,
				example: "  gateway guardrails put no-emails -f guardrail.json   # a guardrail object"}}},
		{name: "plugins", short: "Wasm plugins", path: "/v1/plugins", arg: "ID",
			cols: []string{"id", "size", "sha256", "load_error", "updated_at"}, list: true, get: true, del: true,
			extra: pluginCommands},
		{name: "prompts", short: "Prompt templates", path: "/v1/prompts", arg: "ID",
			cols: []string{"id", "name", "published_version", "latest_version", "updated_at"}, list: true, get: true, del: true,
			writes: []write{{verb: "create", fields: []field{{"id", kString, "the prompt's ID"}, {"name", kString, "a display name"},
				{"template", kJSON, "the template (JSON)"}},
				example: `  gateway prompts create --id welcome --template '{"model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}]}'`}},
			extra: promptCommands},
		{name: "policies", short: "Rate-limit policies", path: "/v1/policies/rate-limits", arg: "ID",
			cols: []string{"id", "name", "type", "unit", "value", "status"}, list: true, get: true, del: true,
			listQuery: []query{{name: "status", usage: "active (default) or archived"}, {name: "type", usage: "requests or tokens"}, {name: "unit", usage: "rpm, rph or rpd"}},
			writes: []write{
				{verb: "create", fields: policyFields(), example: "  gateway policies create --type requests --unit rpm --value 60 --group-by '[{\"key\": \"api_key\"}]'"},
				{verb: "put", one: true, fields: append(policyFields(), field{"status", kString, "active or archived"}),
					example: "  gateway policies put ID --value 10\n  gateway policies put ID --status archived"},
			}},
		{name: "usage-limits", short: "Usage-limit policies (budgets)", path: "/v1/policies/usage-limits", arg: "ID",
			cols: []string{"id", "name", "type", "credit_limit", "current_usage", "periodic_reset", "status"}, list: true, get: true, del: true,
			listQuery: []query{{name: "status", usage: "active, exhausted or archived (default: all but archived)"}, {name: "type", usage: "cost or tokens"}},
			writes: []write{
				{verb: "create", fields: usageLimitFields(), example: "  gateway usage-limits create --type cost --credit-limit 100 --periodic-reset monthly --group-by '[{\"key\": \"api_key\"}]'"},
				{verb: "update", one: true, fields: append(usageLimitFields(), field{"status", kString, "active or archived"}),
					example: "  gateway usage-limits update ID --credit-limit 200\n  gateway usage-limits update ID --status archived"},
			}},
		{name: "files", short: "Files (batch input and results)", path: "/v1/files", arg: "ID", virtualKey: true,
			cols: []string{"id", "filename", "purpose", "bytes", "created_at"}, list: true, get: true, del: true,
			listQuery: []query{{name: "purpose", usage: "only files of this purpose"}, {name: "order", usage: "asc or desc"}},
			extra:     fileCommands},
		{name: "batches", short: "Batches", path: "/v1/batches", arg: "ID", virtualKey: true,
			cols: []string{"id", "status", "endpoint", "input_file_id", "output_file_id", "request_counts.completed", "request_counts.total"},
			list: true, get: true,
			writes: []write{{verb: "create", fields: []field{{"input_file_id", kString, "the input file's ID"},
				{"endpoint", kString, "/v1/chat/completions, /v1/embeddings, ..."}, {"completion_window", kString, "24h, or immediate"},
				{"metadata", kJSON, "metadata (a JSON object of strings)"}},
				example: "  gateway batches create --input-file-id file-... --endpoint /v1/chat/completions --completion-window 24h"}},
			extra: batchCommands},
		pluginKVNoun(), // cli_pluginkv.go
		logsNoun(),
	}
}

func providerFields(withSlug bool) []field {
	fs := []field{{"provider", kString, "the provider (openai, anthropic, azure-openai, ...)"}, {"api_key", kString, "its API key"},
		{"custom_host", kString, "its base URL"}, {"name", kString, "a display name"}}
	if withSlug {
		fs = append([]field{{"slug", kString, "the slug callers name it by"}}, fs...)
	}
	return fs
}

func mcpServerFields(withID bool) []field {
	fs := []field{{"url", kString, "its Streamable HTTP endpoint"},
		{"headers", kJSON, `headers sent to it (JSON), e.g. {"Authorization": "Bearer ..."}`},
		{"allow_tools", kJSON, `only these tools (JSON), e.g. ["search"]`}, {"deny_tools", kJSON, `never these tools (JSON)`},
		{"cost_per_call", kNumber, "USD each forwarded tool call costs the cost budgets naming mcp_server or tool (default 0)"}}
	if withID {
		fs = append([]field{{"id", kString, "the server's ID"}}, fs...)
	}
	return fs
}

func policyFields() []field {
	return []field{{"id", kString, "its ID (a UUID; default: a new one)"}, {"name", kString, "a display name"},
		{"type", kString, "requests or tokens"}, {"unit", kString, "rpm, rph or rpd"}, {"value", kNumber, "the limit"},
		{"conditions", kJSON, `conditions (JSON), e.g. [{"key": "model", "value": "gpt-4o"}]`},
		{"group_by", kJSON, `groups (JSON), e.g. [{"key": "api_key"}]`}}
}

func usageLimitFields() []field {
	return []field{{"id", kString, "its ID (a UUID; default: a new one)"}, {"name", kString, "a display name"},
		{"type", kString, "cost (USD) or tokens"}, {"credit_limit", kNumber, "the limit, in USD or tokens"},
		{"alert_threshold", kNumber, "warn once a period when the spend reaches this"},
		{"periodic_reset", kString, "monthly or weekly (default: never)"},
		{"conditions", kJSON, `conditions (JSON), e.g. [{"key": "model", "value": "gpt-4o"}]`},
		{"group_by", kJSON, `groups (JSON), e.g. [{"key": "api_key"}]`}}
}

func pluginCommands(c *client, n *noun) []*cobra.Command {
	var id string
	push := &cobra.Command{Use: "push FILE", Short: "Upload a wasm module as a plugin (PUT /v1/plugins/{id})", Args: cobra.ExactArgs(1),
		Example: "  gateway plugins push pii.wasm --id pii",
		RunE: func(cmd *cobra.Command, args []string) error {
			wasm, err := readInput(c.stdin, args[0])
			if err != nil {
				return err
			}
			out, err := c.do(cmd.Context(), "PUT", n.item(id), bytes.NewReader(wasm), "application/wasm")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	push.Flags().StringVar(&id, "id", "", "the plugin's ID")
	push.MarkFlagRequired("id")
	return []*cobra.Command{push}
}

func promptCommands(c *client, n *noun) []*cobra.Command {
	var file string
	strs := map[string]*string{}
	bools := map[string]*bool{}
	fields := []field{{"template", kJSON, "the template (JSON)"}, {"publish", kBool, "publish the new version"}}
	version := &cobra.Command{Use: "add-version ID", Short: "Add a version to a prompt", Args: cobra.ExactArgs(1),
		Example: `  gateway prompts add-version welcome --template '{"messages": [{"role": "user", "content": "Hello {{name}}"}]}' --publish`,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := buildBody(cmd, c.stdin, file, fields, strs, bools)
			if err != nil {
				return err
			}
			out, err := c.do(cmd.Context(), "POST", n.item(args[0])+"/versions", bytes.NewReader(body), "application/json")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	version.Flags().StringVarP(&file, "file", "f", "", "the JSON body from this file (- for stdin); flags override its fields")
	strs["template"] = version.Flags().String("template", "", fields[0].usage)
	bools["publish"] = version.Flags().Bool("publish", false, fields[1].usage)
	publish := &cobra.Command{Use: "publish ID VERSION", Short: "Publish a version of a prompt", Args: cobra.ExactArgs(2),
		Example: "  gateway prompts publish welcome 2",
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.do(cmd.Context(), "POST", n.item(args[0])+"/versions/"+args[1]+"/publish", nil, "")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	return []*cobra.Command{version, publish}
}

func fileCommands(c *client, n *noun) []*cobra.Command {
	var purpose string
	upload := &cobra.Command{Use: "upload FILE", Short: "Upload a file", Args: cobra.ExactArgs(1),
		Example: "  gateway files upload requests.jsonl --purpose batch",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			// The form streams from the file, so a large upload is never held in memory.
			pr, pw := io.Pipe()
			form := multipart.NewWriter(pw)
			go func() {
				err := form.WriteField("purpose", purpose)
				if err == nil {
					var part io.Writer
					if part, err = form.CreateFormFile("file", filepath.Base(args[0])); err == nil {
						if _, err = io.Copy(part, f); err == nil {
							err = form.Close()
						}
					}
				}
				pw.CloseWithError(err)
			}()
			out, err := c.do(cmd.Context(), "POST", n.path, pr, form.FormDataContentType())
			pr.Close()
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	upload.Flags().StringVar(&purpose, "purpose", "", "the file's purpose (batch, fine-tune, ...)")
	upload.MarkFlagRequired("purpose")
	content := &cobra.Command{Use: "content ID", Short: "Print a file's content", Args: cobra.ExactArgs(1),
		Example: "  gateway files content file-... > results.jsonl",
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.do(cmd.Context(), "GET", n.item(args[0])+"/content", nil, "")
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(out)
			return err
		}}
	return []*cobra.Command{upload, content}
}

func batchCommands(c *client, n *noun) []*cobra.Command {
	return []*cobra.Command{{Use: "cancel ID", Short: "Cancel a batch", Args: cobra.ExactArgs(1),
		Example: "  gateway batches cancel batch_...",
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.do(cmd.Context(), "POST", n.item(args[0])+"/cancel", nil, "")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}}
}
