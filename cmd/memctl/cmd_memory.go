package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
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
			if a.encrypt {
				// Said on every init --encrypt until segment files are sealed too.
				fmt.Fprintln(a.stderr, "warning: encryption covers the WAL and the key file only; flushed segment files, the manifest and backups are still plaintext (docs/format/encryption.md, Status)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.encrypt, "encrypt", false, "create the store encrypted (partial for now: the WAL only, see docs/format/encryption.md); the passphrase or key file as for every command")
	return cmd
}

func (a *app) rememberCommand() *cobra.Command {
	var (
		session, source string
		metadata        string
		ctxText, at     string
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
			var when time.Time
			if at != "" {
				var err error
				if when, err = api.ParseWhen(at, time.Now(), false); err != nil {
					return usagef("--time: %v", err)
				}
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
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			var all []rememberOutput
			for _, t := range texts {
				res, err := ops.Remember(cmd.Context(), api.RememberRequest{Session: session, Text: t.text, Context: ctxText,
					Source: source, Tags: tags, Importance: importance, Time: when, Metadata: md})
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
	f.StringVar(&ctxText, "context", "", "text around the memory (a conversation's neighbouring turns) that keyword search matches it by at a third of the weight")
	f.StringVar(&at, "time", "", "when the text was said or written: RFC 3339, YYYY-MM-DD, or an age (3d); default now")
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
		req          api.RecallRequest
		explain      bool
		prompt       bool
		promptTokens int
		turns        []string
		ff           filterFlags
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
			if len(args) > 0 {
				req.Query = args[0]
			}
			for _, t := range turns {
				req.Turns = append(req.Turns, memory.Turn{Text: t})
			}
			if _, err := api.ParseMode(req.Mode); err != nil {
				return usagef("unknown --mode %q (want hybrid, vector or keyword)", req.Mode)
			}
			if _, err := api.ParseFusion(req.Fusion); err != nil {
				return usagef("unknown --fusion %q (want weighted or rrf)", req.Fusion)
			}
			if req.Filter, err = ff.filter(cmd, time.Now()); err != nil {
				return err
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := ops.Recall(cmd.Context(), req)
			if err != nil {
				return err
			}
			rs := results(resp)
			if prompt {
				p, err := memory.BuildPrompt(req.Query, rs, memory.PromptOptions{TokenBudget: promptTokens})
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
				return a.printJSON(resp)
			}
			// An empty answer from a session without memories says so (nothing about others).
			if resp.SessionEmpty {
				fmt.Fprintf(a.stdout, "(no memories: session %q holds none)\n", sanitize(req.Session))
				return nil
			}
			printResults(a.stdout, rs, explain)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&req.Session, "session", "s", "", "session to recall from")
	f.BoolVar(&req.AllSessions, "all-sessions", false, "recall from every session")
	f.IntVarP(&req.K, "k", "k", memory.DefaultK, "number of memories to return")
	f.BoolVar(&explain, "explain", false, "show the score parts (vector, keyword, fused, decay, weight)")
	f.StringVar(&req.Mode, "mode", "hybrid", "candidate sources: hybrid, vector or keyword")
	f.StringVar(&req.Fusion, "fusion", "weighted", "hybrid fusion: weighted (scores in [0, 1] that --min-score can cut) or rrf")
	f.Float64Var(&req.VectorWeight, "vector-weight", 0, "weight of the vector score in weighted fusion (0 with --keyword-weight 0: the store's default)")
	f.Float64Var(&req.KeywordWeight, "keyword-weight", 0, "weight of the keyword score in weighted fusion")
	f.Float64Var(&req.MinScore, "min-score", 0, "drop results whose final score (0 to 1) is below this")
	f.BoolVar(&req.NoDecay, "no-decay", false, "rank without the time decay")
	f.BoolVar(&req.NoTouch, "no-touch", false, "do not count this recall as an access")
	f.StringArrayVar(&turns, "turn", nil, "a turn of the recent conversation, oldest first (repeat); the latest weigh most")
	f.BoolVar(&prompt, "prompt", false, "print the memory block to paste into a model prompt")
	f.IntVar(&promptTokens, "prompt-tokens", memory.DefaultPromptTokens, "token budget of --prompt")
	ff.add(f)
	return cmd
}

// results converts a recall's answer back to the results memory.BuildPrompt and printResults take.
func results(resp api.RecallResponse) []memory.Result {
	out := make([]memory.Result, len(resp.Results))
	for i := range resp.Results {
		out[i] = memory.Result{Memory: resp.Results[i].Memory(), Score: resp.Results[i].Score}
	}
	return out
}

// recallOutput is what recall --json prints: the answer of POST /v1/recall.
type recallOutput = api.RecallResponse

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
			req := api.ForgetRequest{IDs: args, All: allOfSession, Filter: f, Purge: purge}
			if hasSession {
				req.Session = &session
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := ops.Forget(cmd.Context(), req)
			if err != nil {
				return err
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
