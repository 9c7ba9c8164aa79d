package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// pluginKVNoun is the plugins' key-value store (/v1/plugin-kv): list and get as the other nouns; set takes
// the value from the command line or a file, which is what a deny list of a thousand lines needs.
func pluginKVNoun() *noun {
	return &noun{name: "plugin-kv", short: "The plugins' key-value store, read by plugins with kv_get (values are not secrets)",
		path: "/v1/plugin-kv", arg: "KEY", cols: []string{"key", "size", "updated_at"}, list: true, get: true,
		extra: pluginKVCommands}
}

func pluginKVCommands(c *client, n *noun) []*cobra.Command {
	var file string
	set := &cobra.Command{Use: "set KEY [VALUE]", Short: "Set a key's value (PUT /v1/plugin-kv/{key})", Args: cobra.RangeArgs(1, 2),
		Example: "  gateway plugin-kv set banned 'apollo'\n  gateway plugin-kv set banned --file banned.txt   # - for stdin",
		RunE: func(cmd *cobra.Command, args []string) error {
			var value string
			switch {
			case len(args) == 2 && file != "":
				return errors.New("give the value or --file, not both")
			case len(args) == 2:
				value = args[1]
			case file != "":
				raw, err := readInput(c.stdin, file)
				if err != nil {
					return err
				}
				if !utf8.Valid(raw) {
					return fmt.Errorf("%s: the value must be UTF-8 text", file)
				}
				value = string(raw)
			default:
				return errors.New("give the value, or --file with it")
			}
			body, err := json.Marshal(map[string]string{"value": value})
			if err != nil {
				return err
			}
			out, err := c.do(cmd.Context(), "PUT", n.item(args[0]), bytes.NewReader(body), "application/json")
			if err != nil {
				return err
			}
			return c.printAnswer(out, n.cols)
		}}
	set.Flags().StringVarP(&file, "file", "f", "", "the value is this file's content (- for stdin)")
	del := &cobra.Command{Use: "delete KEY", Short: "Delete a key", Args: cobra.ExactArgs(1),
		Example: "  gateway plugin-kv delete banned",
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.do(cmd.Context(), "DELETE", n.item(args[0]), nil, "")
			if err != nil {
				return err
			}
			if c.asJSON {
				return c.printAnswer(out, n.cols)
			}
			_, err = fmt.Fprintf(c.stdout, "deleted %s\n", args[0])
			return err
		}}
	return []*cobra.Command{set, del}
}
