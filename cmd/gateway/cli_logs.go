package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// The logs noun: `gateway logs list|get|tail` over GET /v1/logs (routes/logs.go). list and tail take the
// API's filters as flags; tail polls and prints each new entry once, oldest first.

// logCols are the columns of a log entry in tables.
var logCols = []string{"created_at", "id", "status", "provider", "model", "latency_ms", "usage.input_tokens", "usage.output_tokens",
	"cost_usd", "cache_status", "trace_id"}

func logsNoun() *noun {
	return &noun{name: "logs", short: "Stored request logs (admin keys: the workspace's; organisation admins: every workspace's)",
		path: "/v1/logs", arg: "ID", cols: logCols, get: true, extra: logCommands}
}

// logFilters are the flags of the API's filters that list and tail share.
type logFilters struct {
	traceID, status, provider, model, from, to, workspace string
	metadata                                              []string
}

func (f *logFilters) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.traceID, "trace-id", "", "only the request of this trace ID")
	fl.StringVar(&f.status, "status", "", "only answers of this HTTP status")
	fl.StringVar(&f.provider, "provider", "", "only requests answered by this provider")
	fl.StringVar(&f.model, "model", "", "only requests for this model")
	fl.StringVar(&f.from, "from", "", "only requests made at or after this time: Unix seconds or RFC 3339")
	fl.StringVar(&f.to, "to", "", "only requests made at or before this time: Unix seconds or RFC 3339")
	fl.StringArrayVar(&f.metadata, "metadata", nil, "only requests whose metadata has KEY=VALUE (repeatable; all must match)")
	fl.StringVar(&f.workspace, "workspace-id", "", "only this workspace's requests (organisation admins; ID or slug)")
}

// query is the filters as a query string's values.
func (f *logFilters) query() (url.Values, error) {
	q := url.Values{}
	for name, v := range map[string]string{"trace_id": f.traceID, "status": f.status, "provider": f.provider, "model": f.model,
		"workspace_id": f.workspace} {
		if v != "" {
			q.Set(name, v)
		}
	}
	for name, v := range map[string]string{"from": f.from, "to": f.to} {
		if v == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			v = strconv.FormatInt(t.Unix(), 10)
		}
		q.Set(name, v) // else as given: the API checks it
	}
	for _, kv := range f.metadata {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--metadata %q: want KEY=VALUE", kv)
		}
		q.Add("metadata."+k, v)
	}
	return q, nil
}

func logCommands(c *client, n *noun) []*cobra.Command {
	var lf logFilters
	var limit, after string
	list := &cobra.Command{Use: "list", Short: "List request logs, newest first", Args: cobra.NoArgs,
		Example: "  gateway logs list --status 500 --limit 50\n  gateway logs list --metadata team=red --from 2026-01-02T00:00:00Z --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := lf.query()
			if err != nil {
				return err
			}
			if limit != "" {
				q.Set("limit", limit)
			}
			if after != "" {
				q.Set("after", after)
			}
			body, err := c.do(cmd.Context(), "GET", n.path+"?"+q.Encode(), nil, "")
			if err != nil {
				return err
			}
			if c.asJSON {
				return c.printAnswer(body, nil)
			}
			page, err := decodeLogPage(body)
			if err != nil {
				return err
			}
			if err := printLogTable(c.stdout, page.items); err != nil {
				return err
			}
			if page.HasMore {
				_, err = fmt.Fprintf(c.stdout, "more: repeat with --after %s\n", page.NextAfter)
			}
			return err
		}}
	lf.register(list)
	list.Flags().StringVar(&limit, "limit", "", "at most this many entries (1 to 100; default 20)")
	list.Flags().StringVar(&after, "after", "", "the entries older than this log ID")

	var tf logFilters
	var interval time.Duration
	tail := &cobra.Command{Use: "tail", Short: "Print request logs as they come, oldest first, until interrupted", Args: cobra.NoArgs,
		Example: "  gateway logs tail\n  gateway logs tail --status 429 --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return fmt.Errorf("--interval must be positive, not %v", interval)
			}
			q, err := tf.query()
			if err != nil {
				return err
			}
			return c.tailLogs(cmd, n.path, q, interval)
		}}
	tf.register(tail)
	tail.Flags().DurationVar(&interval, "interval", time.Second, "how often to ask for new entries")
	return []*cobra.Command{list, tail}
}

// logPage is an answer of GET /v1/logs, each entry kept as it came.
type logPage struct {
	Data      []json.RawMessage `json:"data"`
	HasMore   bool              `json:"has_more"`
	NextAfter string            `json:"next_after"`
	items     []map[string]any  // Data decoded
}

func decodeLogPage(body []byte) (*logPage, error) {
	var p logPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("the answer is not a list of logs: %w", err)
	}
	for _, raw := range p.Data {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("the answer is not a list of logs: %w", err)
		}
		p.items = append(p.items, m)
	}
	return &p, nil
}

// printLogTable prints entries as a table, created_at as a UTC time.
func printLogTable(w io.Writer, items []map[string]any) error {
	rows := make([]any, len(items))
	for i, m := range items {
		rows[i] = readableLog(m)
	}
	return printTable(w, logCols, rows)
}

// readableLog is m with created_at (Unix seconds) as an RFC 3339 time.
func readableLog(m map[string]any) map[string]any {
	if n, ok := m["created_at"].(json.Number); ok {
		if sec, err := n.Int64(); err == nil {
			m = maps.Clone(m)
			m["created_at"] = time.Unix(sec, 0).UTC().Format(time.RFC3339)
		}
	}
	return m
}

// maxTailPages bounds the pages one poll of tail reads to reach the entries it printed before.
const maxTailPages = 10

// tailLogs polls path every interval and prints the entries it has not printed yet, oldest first: in table mode
// one aligned row each (a header first), with --json one JSON object per line. It returns when the command's
// context ends (SIGINT or SIGTERM).
func (c *client) tailLogs(cmd *cobra.Command, path string, q url.Values, interval time.Duration) error {
	ctx := cmd.Context()
	q.Set("limit", "100")
	// seen holds the IDs of the newest entries of the last poll: an entry that drops out of them never comes
	// back (newer ones push it down), so the set stays as small as one poll's pages.
	seen := map[string]bool{}
	first := true
	var tw *tabwriter.Writer
	if !c.asJSON {
		tw = tabwriter.NewWriter(c.stdout, 22, 0, 2, ' ', 0)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var fresh []json.RawMessage
		var freshItems []map[string]any
		now := map[string]bool{}
		pq := q
		for range maxTailPages {
			body, err := c.do(ctx, "GET", path+"?"+pq.Encode(), nil, "")
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			page, err := decodeLogPage(body)
			if err != nil {
				return err
			}
			caughtUp := false
			for i, m := range page.items {
				id, _ := m["id"].(string)
				now[id] = true
				if seen[id] {
					caughtUp = true
					continue
				}
				fresh, freshItems = append(fresh, page.Data[i]), append(freshItems, m)
			}
			// The first poll prints only the newest page, as tail prints the end of a file.
			if caughtUp || first || !page.HasMore {
				break
			}
			pq = maps.Clone(q)
			pq.Set("after", page.NextAfter)
		}
		seen = now
		slices.Reverse(fresh)
		slices.Reverse(freshItems)
		if err := c.printTail(tw, first, fresh, freshItems); err != nil {
			return err
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (c *client) printTail(tw *tabwriter.Writer, header bool, raw []json.RawMessage, items []map[string]any) error {
	if tw == nil {
		for _, r := range raw {
			if _, err := c.stdout.Write(append(bytes.Clone(r), '\n')); err != nil {
				return err
			}
		}
		return nil
	}
	if header {
		head := make([]string, len(logCols))
		for i, col := range logCols {
			head[i] = strings.ToUpper(col[strings.LastIndex(col, ".")+1:])
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
	}
	for _, m := range items {
		m = readableLog(m)
		row := make([]string, len(logCols))
		for i, col := range logCols {
			row[i] = cell(lookup(m, col))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}
