package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// The commands on single memories (get, list, update, history, revert), the filter flags
// that recall, list, forget, cleanup and export share, and the store-exists check.

// filterFlags are the common filter flags; every one given is ANDed.
type filterFlags struct {
	tags         []string
	source       string
	since, until string
	where        string
}

func (ff *filterFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&ff.tags, "tag", nil, "only memories carrying this tag (repeatable: every one)")
	f.StringVar(&ff.source, "source", "", "only memories from this source")
	f.StringVar(&ff.since, "since", "", "only memories created at or after this: RFC 3339, YYYY-MM-DD, or an age (7d, 12h)")
	f.StringVar(&ff.until, "until", "", "only memories created at or before this (same forms as --since)")
	f.StringVar(&ff.where, "where", "", `a filter in engram's JSON filter language, e.g. '{"importance": {"range": {"gte": 0.5}}}'`)
}

// scopeFlags are mem0's user_id, agent_id and run_id (api.ScopeIDs), which remember, recall,
// list and forget take besides or instead of --session.
type scopeFlags struct{ ids api.ScopeIDs }

func (sf *scopeFlags) add(f *pflag.FlagSet) {
	f.StringVar(&sf.ids.UserID, "user-id", "", "mem0's user_id: another name for --session")
	f.StringVar(&sf.ids.AgentID, "agent-id", "", "mem0's agent_id: the session when neither --session nor --user-id is given, else only this agent's memories")
	f.StringVar(&sf.ids.RunID, "run-id", "", "mem0's run_id (a conversation or task): the session when nothing else names one, else only this run's memories")
}

// given reports whether a scope ID was given.
func (sf *scopeFlags) given() bool { return sf.ids != api.ScopeIDs{} }

// apply lets the scope IDs name the session: with one given and no --session on the command
// line, a default session (ENGRAM_SESSION, the config file) is dropped.
func (sf *scopeFlags) apply(cmd *cobra.Command, session *string) {
	if sf.given() && !cmd.Flags().Changed("session") {
		*session = ""
	}
}

// filter builds the flags' filter (nil when none is given); bad values are usage errors.
func (ff *filterFlags) filter(cmd *cobra.Command, now time.Time) (*memory.Filter, error) {
	var where *memory.Filter
	if ff.where != "" {
		f, err := memory.ParseFilter([]byte(ff.where))
		if err != nil {
			return nil, usagef("--where: %v", err)
		}
		where = f
	}
	sel := api.Selection{Tags: ff.tags, Since: ff.since, Until: ff.until}
	if cmd.Flags().Changed("source") {
		sel.Source = &ff.source
	}
	f, err := sel.Filter(where, now)
	if err != nil {
		return nil, usagef("--%s", strings.TrimPrefix(err.Error(), api.ErrBadRequest.Error()+": "))
	}
	return f, nil
}

// storeCreators are the commands that may create a store in a directory that holds none.
// Writes of short-term and working memory ("context add", "tasks start") create one too.
var storeCreators = map[string]bool{"init": true, "remember": true, "import": true, "quickstart": true, "serve": true, "mcp": true,
	"chat": true, "context add": true, "tasks start": true}

// checkStoreDir refuses to open a local directory that holds no store, unless the command
// creates one: a mistyped --dir must not silently answer from a new, empty store.
func (a *app) checkStoreDir() error {
	if isRemote(a.dir) || a.cmd == nil || storeCreators[a.cmd.Name()] || (a.cmd.HasParent() && storeCreators[a.cmd.Parent().Name()+" "+a.cmd.Name()]) {
		return nil
	}
	// A store holds its manifest (CURRENT and numbered manifests, or a first-release MANIFEST),
	// wal/ or seg/; with any of them the engine opens it or explains what is wrong.
	for _, name := range []string{"CURRENT", "MANIFEST", "wal", "seg"} {
		if _, err := os.Stat(filepath.Join(a.dir, name)); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("%s is not an engram store (create one with `memctl --dir %s init`, or point --dir or ENGRAM_DIR at an existing store)", a.dir, a.dir)
}

func (a *app) getCommand() *cobra.Command {
	var vector bool
	cmd := &cobra.Command{
		Use:   "get ID...",
		Short: "Print memories by ID (all must exist)",
		Args:  minArgs(1, "get takes one or more memory IDs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			// Every ID is looked up; the missing ones fail the command together.
			var ms []memory.MemoryJSON
			var missing []string
			for i, id := range args {
				if slices.Contains(args[:i], id) {
					continue
				}
				m, err := ops.Get(cmd.Context(), api.GetRequest{ID: id, Vector: vector})
				switch {
				case isNotFound(err):
					missing = append(missing, id)
				case err != nil:
					return err
				default:
					ms = append(ms, m)
				}
			}
			if len(missing) > 0 {
				return &memory.NotFoundError{IDs: missing}
			}
			if a.jsonOut {
				if len(ms) == 1 {
					return a.printJSON(ms[0])
				}
				return a.printJSON(ms)
			}
			for i := range ms {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				m := ms[i].Memory()
				printMemory(a, &m)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&vector, "vector", false, "with --json: include the vector")
	return cmd
}

func printMemory(a *app, m *memory.Memory) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", sanitize(m.ID))
	fmt.Fprintf(tw, "session\t%s\n", sanitize(m.Session))
	fmt.Fprintf(tw, "text\t%s\n", oneLine(m.Text, 1000))
	if m.Source != "" {
		fmt.Fprintf(tw, "source\t%s\n", sanitize(m.Source))
	}
	if len(m.Tags) > 0 {
		fmt.Fprintf(tw, "tags\t%s\n", sanitize(strings.Join(m.Tags, ", ")))
	}
	if len(m.Metadata) > 0 {
		b, _ := json.Marshal(m.Metadata)
		fmt.Fprintf(tw, "metadata\t%s\n", sanitize(string(b)))
	}
	fmt.Fprintf(tw, "importance\t%g\n", m.Importance)
	fmt.Fprintf(tw, "created\t%s\n", m.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "updated\t%s\n", m.Updated.UTC().Format(time.RFC3339))
	if !m.LastAccess.IsZero() {
		fmt.Fprintf(tw, "last access\t%s (%d accesses)\n", m.LastAccess.UTC().Format(time.RFC3339), m.AccessCount)
	}
	tw.Flush()
}

func (a *app) listCommand() *cobra.Command {
	var (
		ff          filterFlags
		sf          scopeFlags
		session     string
		allSessions bool
		limit       int
		cursor      string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a session's memories (or every session's), newest first, filtered",
		Example: `  memctl list --session alice --tag travel --since 7d
  memctl list --all-sessions --where '{"metadata.project": "apollo"}' --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sf.apply(cmd, &session)
			if (cmd.Flags().Changed("session") || sf.given()) == allSessions {
				return usagef("list needs --session S (or --user-id, --agent-id, --run-id) or --all-sessions")
			}
			f, err := ff.filter(cmd, time.Now())
			if err != nil {
				return err
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			req := api.ListRequest{ScopeIDs: sf.ids, Filter: f, Limit: limit, Cursor: cursor}
			if cmd.Flags().Changed("session") {
				req.Session = &session
			}
			page, err := ops.List(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(page)
			}
			if len(page.Memories) == 0 {
				fmt.Fprintln(a.stdout, "(no memories)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tSESSION\tTEXT")
			for _, m := range page.Memories {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize(m.ID), m.Created.UTC().Format("2006-01-02 15:04"), sanitize(m.Session), oneLine(m.Text, 70))
			}
			tw.Flush()
			if page.NextCursor != "" {
				fmt.Fprintf(a.stdout, "more: --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&session, "session", "s", "", "the session to list")
	f.BoolVar(&allSessions, "all-sessions", false, "list every session")
	f.IntVar(&limit, "limit", memory.DefaultListLimit, fmt.Sprintf("page size (at most %d)", memory.MaxListLimit))
	f.StringVar(&cursor, "cursor", "", "continue after the page that printed it")
	ff.add(f)
	sf.add(f)
	return cmd
}

func (a *app) updateCommand() *cobra.Command {
	var (
		text, source, metadata string
		tags                   []string
		importance             float64
	)
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a memory's text (re-embedded), source, tags, importance or metadata; the old version goes to its history",
		Example: `  memctl update 3f9c... --text "Alice now prefers oolong tea."
  memctl update 3f9c... --tag drinks --tag morning --metadata '{"confidence": 0.9}'`,
		Args: exactArgs(1, "update takes one memory ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var o api.UpdateRequest
			fl := cmd.Flags()
			if fl.Changed("text") {
				if text == "-" {
					b, err := readAll(a)
					if err != nil {
						return err
					}
					text = string(b)
				}
				o.Text = &text
			}
			if fl.Changed("source") {
				o.Source = &source
			}
			if fl.Changed("tag") {
				o.Tags = &tags
			}
			if fl.Changed("importance") {
				o.Importance = &importance
			}
			if fl.Changed("metadata") {
				var md map[string]any
				if err := json.Unmarshal([]byte(metadata), &md); err != nil || md == nil {
					return usagef("--metadata must be a JSON object: %v", err)
				}
				o.Metadata = &md
			}
			if o == (api.UpdateRequest{}) {
				return usagef("update needs --text, --source, --tag, --importance or --metadata")
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			m, err := ops.Update(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(m)
			}
			fmt.Fprintf(a.stdout, "updated %s\n", sanitize(m.ID))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&text, "text", "", "the new text (- reads stdin)")
	f.StringVar(&source, "source", "", "the new source")
	f.StringArrayVar(&tags, "tag", nil, "the new tags (repeatable; replaces all)")
	f.Float64Var(&importance, "importance", 0, "the new importance in (0, 1]")
	f.StringVar(&metadata, "metadata", "", "the new metadata, a JSON object of strings, numbers and booleans (replaces all)")
	return cmd
}

func (a *app) historyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show the earlier versions of a memory (what merges, updates and superseding facts replaced)",
		Args:  exactArgs(1, "history takes one memory ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			h, err := ops.History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(h)
			}
			vs := h.Versions
			if len(vs) == 0 {
				fmt.Fprintln(a.stdout, "(no earlier versions)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tREPLACED\tBY\tTEXT")
			for _, v := range vs {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.Version, v.At.UTC().Format("2006-01-02 15:04:05"), v.Change, oneLine(v.Memory.Text, 70))
			}
			tw.Flush()
			return nil
		},
	}
	revert := &cobra.Command{
		Use:   "revert ID VERSION",
		Short: "Bring an earlier version of a memory back (the current one goes to its history)",
		Args:  exactArgs(2, "history revert takes a memory ID and a version number"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 {
				return usagef("version %q is not a positive number", args[1])
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			m, err := ops.Revert(cmd.Context(), args[0], api.RevertRequest{Version: n})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(m)
			}
			fmt.Fprintf(a.stdout, "reverted %s to version %d\n", sanitize(m.ID), n)
			return nil
		},
	}
	cmd.AddCommand(revert)
	return cmd
}

func minArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s", msg)
		}
		return nil
	}
}

func readAll(a *app) ([]byte, error) { return io.ReadAll(a.stdin) }
