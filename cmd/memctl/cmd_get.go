package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// filter builds the flags' filter (nil when none is given); bad values are usage errors.
func (ff *filterFlags) filter(cmd *cobra.Command, now time.Time) (*memory.Filter, error) {
	var fs []*memory.Filter
	if ff.where != "" {
		f, err := memory.ParseFilter([]byte(ff.where))
		if err != nil {
			return nil, usagef("--where: %v", err)
		}
		fs = append(fs, f)
	}
	for _, t := range ff.tags {
		fs = append(fs, memory.Eq(memory.FieldTag, t))
	}
	if cmd.Flags().Changed("source") {
		fs = append(fs, memory.Eq(memory.FieldSource, ff.source))
	}
	var since, until time.Time
	var err error
	if ff.since != "" {
		if since, err = parseWhen(ff.since, now, false); err != nil {
			return nil, usagef("--since: %v", err)
		}
	}
	if ff.until != "" {
		if until, err = parseWhen(ff.until, now, true); err != nil {
			return nil, usagef("--until: %v", err)
		}
	}
	if !since.IsZero() || !until.IsZero() {
		fs = append(fs, memory.TimeRange(memory.FieldCreated, since, until))
	}
	var f *memory.Filter
	switch len(fs) {
	case 0:
		return nil, nil
	case 1:
		f = fs[0]
	default:
		f = memory.And(fs...)
	}
	if err := f.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return f, nil
}

// parseWhen reads a time: RFC 3339, a date (its start, or its end for endOfDay, in UTC), or an
// age before now (7d, 36h, 90m).
func parseWhen(s string, now time.Time, endOfDay bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if endOfDay {
			t = t.Add(24*time.Hour - time.Nanosecond)
		}
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.ParseFloat(n, 64); err == nil && days >= 0 && days < 1e5 {
			return now.Add(-time.Duration(days * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, YYYY-MM-DD, or an age such as 7d or 12h)", s)
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
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var ms []memory.Memory
			if c != nil {
				ms, err = c.get(cmd.Context(), args, vector)
			} else {
				ms, err = s.Get(cmd.Context(), args...)
			}
			if err != nil {
				return err
			}
			if missing := missingIDs(args, ms); len(missing) > 0 {
				return &memory.NotFoundError{IDs: missing}
			}
			if a.jsonOut {
				out := make([]memory.MemoryJSON, len(ms))
				for i := range ms {
					out[i] = memory.ToJSON(&ms[i], vector)
				}
				if len(out) == 1 {
					return a.printJSON(out[0])
				}
				return a.printJSON(out)
			}
			for i, m := range ms {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				printMemory(a, &m)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&vector, "vector", false, "with --json: include the vector")
	return cmd
}

func missingIDs(ids []string, ms []memory.Memory) []string {
	have := map[string]bool{}
	for _, m := range ms {
		have[m.ID] = true
	}
	var out []string
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
			have[id] = true
		}
	}
	return out
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
			if cmd.Flags().Changed("session") == allSessions {
				return usagef("list needs --session S or --all-sessions")
			}
			f, err := ff.filter(cmd, time.Now())
			if err != nil {
				return err
			}
			if !allSessions {
				f = memory.AllOf(memory.Eq(memory.FieldSession, session), f)
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			lo := memory.ListOptions{Filter: f, Limit: limit, Cursor: cursor}
			var page memory.ListPage
			if c != nil {
				page, err = c.list(cmd.Context(), lo)
			} else {
				page, err = s.List(cmd.Context(), lo)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := struct {
					Memories   []memory.MemoryJSON `json:"memories"`
					NextCursor string              `json:"next_cursor,omitempty"`
				}{Memories: make([]memory.MemoryJSON, 0, len(page.Memories)), NextCursor: page.Next}
				for i := range page.Memories {
					out.Memories = append(out.Memories, memory.ToJSON(&page.Memories[i], false))
				}
				return a.printJSON(out)
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
			if page.Next != "" {
				fmt.Fprintf(a.stdout, "more: --cursor %s\n", page.Next)
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
			var o memory.UpdateOptions
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
			if o == (memory.UpdateOptions{}) {
				return usagef("update needs --text, --source, --tag, --importance or --metadata")
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var m memory.Memory
			if c != nil {
				m, err = c.update(cmd.Context(), args[0], o)
			} else {
				m, err = s.Update(cmd.Context(), args[0], o)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(memory.ToJSON(&m, false))
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
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var vs []memory.VersionJSON
			if c != nil {
				vs, err = c.history(cmd.Context(), args[0])
			} else {
				var local []memory.Version
				local, err = s.History(cmd.Context(), args[0])
				for i := range local {
					vs = append(vs, memory.VersionToJSON(&local[i]))
				}
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := struct {
					ID       string               `json:"id"`
					Versions []memory.VersionJSON `json:"versions"`
				}{ID: args[0], Versions: append([]memory.VersionJSON{}, vs...)}
				return a.printJSON(out)
			}
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
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var m memory.Memory
			if c != nil {
				m, err = c.revert(cmd.Context(), args[0], n)
			} else {
				m, err = s.Revert(cmd.Context(), args[0], n)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(memory.ToJSON(&m, false))
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
