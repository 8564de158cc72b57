package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

func (a *app) initCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a store in --dir (opening an existing one is fine)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"dir": a.dir, "embedder": s.Embedder().Fingerprint()})
			}
			fmt.Fprintf(a.stdout, "store ready at %s (embedder %s)\n", a.dir, s.Embedder().Fingerprint())
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.encrypt, "encrypt", false, "create the store encrypted (docs/format/encryption.md); the passphrase or key file as for every command")
	return cmd
}

func (a *app) rememberCommand() *cobra.Command {
	var (
		session, source string
		metadata        string
		tags, files     []string
		importance      float64
	)
	cmd := &cobra.Command{
		Use:   "remember [TEXT...]",
		Short: "Remember text from arguments, --file or stdin (-); long text is chunked",
		Example: `  memctl remember --session alice "Alice prefers green tea"
  memctl remember --session docs --source handbook --file handbook.md
  echo "我下个月去北京出差" | memctl remember --session alice -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if session == "" && !cmd.Flags().Changed("session") {
				return usagef("remember needs --session (or a default: ENGRAM_SESSION, or \"session\" in the config file); --session \"\" writes to the default session")
			}
			var md map[string]any
			if metadata != "" {
				if err := json.Unmarshal([]byte(metadata), &md); err != nil || md == nil {
					return usagef("--metadata must be a JSON object of strings, numbers and booleans: %v", err)
				}
			}
			texts, err := a.gatherTexts(args, files)
			if err != nil {
				return err
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			opts := memory.RememberOptions{Source: source, Tags: tags, Importance: importance, Metadata: md}
			var all []rememberOutput
			for _, t := range texts {
				var res memory.RememberResult
				if c != nil {
					res, err = c.remember(cmd.Context(), session, t.text, opts)
				} else {
					res, err = s.Remember(cmd.Context(), session, t.text, opts)
				}
				if err != nil {
					return fmt.Errorf("remembering %s: %w", t.origin, err)
				}
				for i, id := range res.IDs {
					all = append(all, rememberOutput{ID: id, Merged: res.Merged[i], Superseded: res.Superseded[i], Older: res.Older[i], Origin: t.origin})
				}
			}
			if a.jsonOut {
				return a.printJSON(all)
			}
			for _, o := range all {
				verb := "remembered"
				switch {
				case o.Older:
					verb = "older than, kept in the history of"
				case o.Superseded:
					verb = "superseded (old version in history)"
				case o.Merged:
					verb = "merged into"
				}
				fmt.Fprintf(a.stdout, "%s %s\n", verb, o.ID)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&session, "session", "s", "", "session (namespace) the memories belong to")
	f.StringVar(&source, "source", "", "where the text came from, e.g. chat or doc:handbook.md")
	f.StringSliceVar(&tags, "tag", nil, "tags (repeatable)")
	f.Float64Var(&importance, "importance", 0, "importance in (0, 1]; 0 means the default")
	f.StringSliceVarP(&files, "file", "f", nil, "read text from files (repeatable)")
	f.StringVar(&metadata, "metadata", "", `your own attributes as a JSON object, e.g. '{"project": "apollo", "confidence": 0.9}'`)
	return cmd
}

type rememberOutput struct {
	ID         string `json:"id"`
	Merged     bool   `json:"merged"`
	Superseded bool   `json:"superseded"`
	Older      bool   `json:"older"`
	Origin     string `json:"origin"`
}

type sourcedText struct{ origin, text string }

// gatherTexts collects what to remember: each argument is one text ("-"
// reads stdin), and each file one text.
func (a *app) gatherTexts(args, files []string) ([]sourcedText, error) {
	var out []sourcedText
	for i, arg := range args {
		if arg == "-" {
			data, err := io.ReadAll(a.stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			out = append(out, sourcedText{"stdin", string(data)})
			continue
		}
		out = append(out, sourcedText{fmt.Sprintf("argument %d", i+1), arg})
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, sourcedText{f, string(data)})
	}
	if len(out) == 0 {
		return nil, usagef("nothing to remember: give text arguments, --file, or - for stdin")
	}
	for _, t := range out {
		if !utf8.ValidString(t.text) {
			return nil, fmt.Errorf("%s is not valid UTF-8 text", t.origin)
		}
	}
	return out, nil
}

func (a *app) recallCommand() *cobra.Command {
	var (
		ro               memory.RecallOptions
		explain, noTouch bool
		mode, fusion     string
		prompt           bool
		promptTokens     int
		turns            []string
		ff               filterFlags
	)
	cmd := &cobra.Command{
		Use:   "recall [QUERY]",
		Short: "Recall the memories that best match QUERY (or the conversation given with --turn)",
		Example: `  memctl recall --session alice "what does Alice drink?"
  memctl recall --session alice --explain --k 3 "出差"
  memctl recall --all-sessions --json "tea"
  memctl recall --session alice --turn "I'm flying to Osaka on Friday" --turn "what should I pack?"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(turns) > 0 {
				return nil
			}
			return exactArgs(1, "recall takes one QUERY (quote it), or --turn")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			query := ""
			if len(args) > 0 {
				query = args[0]
			}
			for _, t := range turns {
				ro.Turns = append(ro.Turns, memory.Turn{Text: t})
			}
			if ro.Mode, err = parseMode(mode); err != nil {
				return err
			}
			if ro.Fusion, err = parseFusion(fusion); err != nil {
				return err
			}
			ro.NoTouch = noTouch
			if ro.Filter, err = ff.filter(cmd, time.Now()); err != nil {
				return err
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var results []memory.Result
			sessionEmpty := false
			if c != nil {
				results, sessionEmpty, err = c.recall(cmd.Context(), server.RecallRequest{
					Query: query, Session: ro.Session, AllSessions: ro.AllSessions, K: ro.K, Mode: mode, Fusion: fusion,
					MinScore: ro.MinScore, NoTouch: ro.NoTouch, Turns: ro.Turns, Filter: ro.Filter,
				})
			} else {
				results, err = s.Recall(cmd.Context(), query, ro)
			}
			if err != nil {
				return err
			}
			// An empty answer from a session without memories says so (nothing about others).
			if c == nil && len(results) == 0 && !ro.AllSessions {
				n, err := s.Count(cmd.Context(), memory.Eq(memory.FieldSession, ro.Session))
				if err != nil {
					return err
				}
				sessionEmpty = n == 0
			}
			if prompt {
				p, err := memory.BuildPrompt(query, results, memory.PromptOptions{TokenBudget: promptTokens})
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(p)
				}
				fmt.Fprintln(a.stdout, p.Text)
				return nil
			}
			if a.jsonOut {
				return a.printJSON(recallOutput{Results: toRecallJSON(results), SessionEmpty: sessionEmpty})
			}
			if sessionEmpty {
				fmt.Fprintf(a.stdout, "(no memories: session %q holds none)\n", sanitize(ro.Session))
				return nil
			}
			printResults(a.stdout, results, explain)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&ro.Session, "session", "s", "", "session to recall from")
	f.BoolVar(&ro.AllSessions, "all-sessions", false, "recall from every session")
	f.IntVarP(&ro.K, "k", "k", memory.DefaultK, "number of memories to return")
	f.BoolVar(&explain, "explain", false, "show the score parts (vector, keyword, fused, decay, weight)")
	f.StringVar(&mode, "mode", "hybrid", "candidate sources: hybrid, vector or keyword")
	f.StringVar(&fusion, "fusion", "weighted", "hybrid fusion: weighted (scores in [0, 1] that --min-score can cut) or rrf")
	f.Float64Var(&ro.MinScore, "min-score", 0, "drop results whose final score (0 to 1) is below this")
	f.BoolVar(&noTouch, "no-touch", false, "do not count this recall as an access")
	f.StringArrayVar(&turns, "turn", nil, "a turn of the recent conversation, oldest first (repeat); the latest weigh most")
	f.BoolVar(&prompt, "prompt", false, "print the memory block to paste into a model prompt")
	f.IntVar(&promptTokens, "prompt-tokens", memory.DefaultPromptTokens, "token budget of --prompt")
	ff.add(f)
	return cmd
}

func parseMode(s string) (memory.Mode, error) {
	switch s {
	case "hybrid", "":
		return memory.ModeHybrid, nil
	case "vector":
		return memory.ModeVector, nil
	case "keyword", "bm25":
		return memory.ModeKeyword, nil
	}
	return 0, usagef("unknown --mode %q (want hybrid, vector or keyword)", s)
}

func parseFusion(s string) (memory.Fusion, error) {
	switch s {
	case "weighted", "":
		return memory.FusionWeighted, nil
	case "rrf":
		return memory.FusionRRF, nil
	}
	return 0, usagef("unknown --fusion %q (want weighted or rrf)", s)
}

// recallJSON is a recall result in the one JSON form of a memory, with its score.
type recallJSON = memory.ResultJSON

// recallOutput is what recall --json prints, as POST /v1/recall answers.
type recallOutput struct {
	Results []recallJSON `json:"results"`
	// SessionEmpty: the session recalled from holds no memories at all.
	SessionEmpty bool `json:"session_empty,omitempty"`
}

func toRecallJSON(rs []memory.Result) []recallJSON {
	out := make([]recallJSON, 0, len(rs))
	for i := range rs {
		out = append(out, memory.ResultToJSON(&rs[i]))
	}
	return out
}

const timeLayout = "2006-01-02T15:04:05Z"

func printResults(w io.Writer, rs []memory.Result, explain bool) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "(no memories)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if explain {
		// KEYWORD is BM25 on the 0-1 scale fusion uses (over the query's best); BM25 is the raw score.
		fmt.Fprintln(tw, "#\tFINAL\tVECTOR\tKEYWORD\tBM25\tFUSED\tDECAY\tWEIGHT\tSESSION\tTEXT")
	} else {
		fmt.Fprintln(tw, "#\tSCORE\tSESSION\tTEXT")
	}
	for i, r := range rs {
		text := oneLine(r.Text, 80)
		if explain {
			s := r.Score
			fmt.Fprintf(tw, "%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.3f\t%.3f\t%s\t%s\n", i+1, s.Final, s.Vector, s.KeywordNorm, s.Keyword, s.Fused, s.Decay, s.Weight, sanitize(r.Session), text)
		} else {
			fmt.Fprintf(tw, "%d\t%.4f\t%s\t%s\n", i+1, r.Score.Final, sanitize(r.Session), text)
		}
	}
	tw.Flush()
}

// oneLine flattens whitespace and cuts s to at most n runes for a table cell.
// oneLine shortens s to n runes on one line, with whitespace collapsed and
// control characters escaped (sanitize).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return sanitize(s)
	}
	r := []rune(s)
	return sanitize(string(r[:n-1])) + "…"
}

func (a *app) forgetCommand() *cobra.Command {
	var session string
	var allOfSession, allSessions, purge bool
	var ff filterFlags
	cmd := &cobra.Command{
		Use:   "forget [ID...]",
		Short: "Forget memories by ID (all must exist), every memory of a session (--session S --all), or those a filter selects",
		Long: "Forget memories by ID (all must exist), every memory of a session (--session S --all), or those a filter selects.\n" +
			"Forgotten memories stay restorable (`memctl restore ID`, `memctl forgotten`) for --forget-retention (30 days by\n" +
			"default), then are deleted for good; --purge deletes them for good now, with their copies in the trash and the\n" +
			"archive and their history (`memctl compact` then drops the bytes from the store's files).",
		Example: `  memctl forget 3f9c... 81ab...
  memctl forget --session alice --all
  memctl forget --session alice --tag scratch --until 30d
  memctl forget --purge 3f9c...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ff.filter(cmd, time.Now())
			if err != nil {
				return err
			}
			hasSession := cmd.Flags().Changed("session")
			switch {
			case len(args) > 0 && (allOfSession || f != nil || allSessions):
				return usagef("give either IDs, or --all / filter flags, not both")
			case len(args) == 0 && !allOfSession && f == nil:
				return usagef("forget needs memory IDs, --session S --all, or filter flags (--tag, --source, --since, --until, --where) with --session S or --all-sessions")
			case allOfSession && f != nil:
				return usagef("--all forgets the whole session; drop it to forget what the filter selects")
			case allOfSession && !hasSession:
				return usagef("--all needs --session (use --session \"\" for the default session)")
			case f != nil && hasSession == allSessions:
				return usagef("a filter needs --session S or --all-sessions")
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var resp server.ForgetResponse
			if c != nil {
				req := server.ForgetRequest{IDs: args, All: allOfSession, Filter: f, Purge: purge}
				if hasSession {
					req.Session = &session
				}
				if err := c.do(cmd.Context(), http.MethodPost, "/v1/forget", req, &resp); err != nil {
					return err
				}
			} else {
				var n int
				switch {
				case len(args) > 0 && purge:
					// All or nothing, as without --purge, but an ID may be only forgotten or archived.
					if err = a.checkPurgeIDs(cmd.Context(), s, args); err == nil {
						n, err = s.Purge(cmd.Context(), args...)
					}
				case len(args) > 0:
					// All or nothing: an unknown ID fails the command, naming it, and deletes nothing.
					if err = s.Delete(cmd.Context(), args...); err == nil {
						n = len(dedupe(args))
					}
				default:
					if allOfSession {
						f = memory.Eq(memory.FieldSession, session)
					} else if hasSession {
						f = memory.AllOf(memory.Eq(memory.FieldSession, session), f)
					}
					if purge {
						n, err = s.PurgeWhere(cmd.Context(), f)
					} else {
						n, err = s.ForgetWhere(cmd.Context(), f)
					}
				}
				if err != nil {
					return err
				}
				resp = server.ForgetResponse{Forgotten: n, Purged: purge}
				if ret := s.ForgetRetention(); ret > 0 && !purge {
					resp.Restorable, resp.PurgeAfter = true, time.Now().UTC().Add(ret).Truncate(time.Second)
				}
			}
			if a.jsonOut {
				return a.printJSON(resp)
			}
			switch {
			case resp.Purged:
				fmt.Fprintf(a.stdout, "purged %d memories for good\n", resp.Forgotten)
			case resp.Restorable && resp.Forgotten > 0:
				fmt.Fprintf(a.stdout, "forgot %d memories (restorable with `memctl restore ID` until %s; --purge deletes for good)\n",
					resp.Forgotten, resp.PurgeAfter.Format("2006-01-02"))
			default:
				fmt.Fprintf(a.stdout, "forgot %d memories\n", resp.Forgotten)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&session, "session", "s", "", "session whose memories --all or the filter deletes")
	cmd.Flags().BoolVar(&allOfSession, "all", false, "forget every memory of --session")
	cmd.Flags().BoolVar(&allSessions, "all-sessions", false, "apply the filter to every session")
	cmd.Flags().BoolVar(&purge, "purge", false, "delete for good now (also from the trash and the archive), not restorably")
	ff.add(cmd.Flags())
	return cmd
}

// checkPurgeIDs fails with a *memory.NotFoundError naming the IDs that are neither live,
// forgotten nor archived.
func (a *app) checkPurgeIDs(ctx context.Context, s *memory.Store, ids []string) error {
	ids = dedupe(ids)
	found := map[string]bool{}
	live, err := s.Get(ctx, ids...)
	if err != nil {
		return err
	}
	for _, m := range live {
		found[m.ID] = true
	}
	fs, err := s.Forgotten(ctx, ids...)
	if err != nil {
		return err
	}
	for _, m := range fs {
		found[m.ID] = true
	}
	arch, err := s.Archived(ctx)
	if err != nil {
		return err
	}
	for _, m := range arch {
		found[m.ID] = true
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return &memory.NotFoundError{IDs: missing}
	}
	return nil
}

func dedupe(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected arguments %q", args)
	}
	return nil
}

func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s", msg)
		}
		return nil
	}
}
