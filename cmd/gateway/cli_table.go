package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// printTable prints items (JSON objects) as aligned columns, one row per item, headed by cols (their last
// dotted part) in upper case.
func printTable(w io.Writer, cols []string, items []any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = strings.ToUpper(c[strings.LastIndex(c, ".")+1:]) // request_counts.total → TOTAL
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, it := range items {
		m, _ := it.(map[string]any)
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = cell(lookup(m, c))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// printFields prints one object as aligned "field value" lines, in the order of the field names.
func printFields(w io.Writer, m map[string]any) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range names {
		fmt.Fprintf(tw, "%s\t%s\n", k, cell(m[k]))
	}
	return tw.Flush()
}

// lookup reads a column: a field name, or a dotted path into nested objects (request_counts.total).
func lookup(m map[string]any, col string) any {
	var v any = m
	for _, part := range strings.Split(col, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[part]
	}
	return v
}

// cell renders one value for a table: strings as they are, null as "-", anything nested as compact JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return strings.NewReplacer("\t", " ", "\n", " ").Replace(x)
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}
