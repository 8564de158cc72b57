package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/server"
)

// defaultKeysPath is the key file serve reads when it exists and --keys is
// not given, and the one the keys commands manage.
func defaultKeysPath() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "engram", "keys.json")
	}
	return ""
}

func (a *app) keysCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage the API keys of `memctl serve`: each with a name, the sessions it may use and its rights",
		Long: "keys manages the key file `memctl serve --keys FILE` reads (default " + defaultKeysPath() + ").\n" +
			"A key has a name, session patterns (exact names, or globs: team-* is every session starting with\n" +
			"team-, * is every session) and rights: read, write, admin. The file stores only SHA-256 hashes of\n" +
			"the keys; `keys add` prints a new key once. A running server picks up changes within a second, and\n" +
			"one started before the default key file existed enforces it as soon as `keys add` creates it.\n" +
			"memctl commands send a key from ENGRAM_TOKEN or --server-token.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.listKeys(path) },
	}
	cmd.PersistentFlags().StringVar(&path, "keys", defaultKeysPath(), "key file")

	var sessions []string
	var rights string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a key and print it (once: only its hash is stored)",
		Args:  exactArgs(1, "add takes the key's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := server.ParseRights(rights)
			if err != nil {
				return usagef("--rights: %v", err)
			}
			if len(sessions) == 0 {
				return usagef("keys add needs --sessions (exact names or globs; * for all)")
			}
			if err := server.ValidateScope(sessions); err != nil {
				return usagef("--sessions: %v", err)
			}
			secret, err := server.AddKey(path, args[0], sessions, rs)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"name": args[0], "key": secret, "sessions": sessions, "rights": rs, "file": path})
			}
			fmt.Fprintf(a.stdout, "%s\n", secret)
			fmt.Fprintf(a.stderr, "added key %s (sessions %s; rights %s) to %s.\n"+
				"This is the only time the key is shown; clients send it as `Authorization: Bearer KEY`, memctl from ENGRAM_TOKEN.\n"+
				"A running `memctl serve` that reads this file (its default, or --keys) enforces it at once.\n",
				sanitize(args[0]), sanitize(strings.Join(sessions, ", ")), rs, sanitize(path))
			return nil
		},
	}
	add.Flags().StringSliceVar(&sessions, "sessions", nil, "session patterns the key may use (exact names or globs; * for all); required")
	add.Flags().StringVar(&rights, "rights", "read", "comma-separated rights: read, write, admin")

	list := &cobra.Command{Use: "list", Short: "List keys (names, sessions, rights; never the keys)", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.listKeys(path) }}
	revoke := &cobra.Command{Use: "revoke NAME", Short: "Remove a key; a running server refuses it within a second",
		Args: exactArgs(1, "revoke takes the key's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := server.RevokeKey(path, args[0]); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"revoked": args[0]})
			}
			fmt.Fprintf(a.stdout, "revoked key %s\n", sanitize(args[0]))
			return nil
		}}
	cmd.AddCommand(add, list, revoke)
	return cmd
}

// keyJSON is a key as `keys list --json` prints it: the hash is left out.
type keyJSON struct {
	Name     string       `json:"name"`
	Sessions server.Scope `json:"sessions"`
	Rights   server.Right `json:"rights"`
	Created  time.Time    `json:"created"`
}

func (a *app) listKeys(path string) error {
	kf, err := server.ReadKeyFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if a.jsonOut {
		out := make([]keyJSON, 0, len(kf.Keys))
		for _, k := range kf.Keys {
			out = append(out, keyJSON{Name: k.Name, Sessions: k.Sessions, Rights: k.Rights, Created: k.Created})
		}
		return a.printJSON(map[string]any{"keys": out})
	}
	if len(kf.Keys) == 0 {
		fmt.Fprintf(a.stdout, "(no keys in %s)\n", sanitize(path))
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSESSIONS\tRIGHTS\tCREATED")
	for _, k := range kf.Keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize(k.Name), sanitize(strings.Join(k.Sessions, ",")), k.Rights, k.Created.Format(time.DateOnly))
	}
	return tw.Flush()
}
