package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
)

// quickstartMemories is the built-in demo set: two users' memories in
// Chinese and English, so recall can be seen to stay inside a session.
var quickstartMemories = []struct{ session, source, text string }{
	{"alice", "chat", "Alice prefers green tea in the morning and never drinks coffee after 3 pm."},
	{"alice", "chat", "Alice is preparing a talk about vector databases for the Berlin meetup in June."},
	{"alice", "chat", "Alice 的女儿叫小雨，今年九月开始上小学。"},
	{"alice", "calendar", "Dentist appointment for Alice on Friday at 10:00."},
	{"bob", "chat", "Bob 喜欢喝咖啡，尤其是手冲的埃塞俄比亚豆子。"},
	{"bob", "chat", "Bob 下个月要去上海出差，需要预订靠近陆家嘴的酒店。"},
	{"bob", "chat", "Bob is allergic to peanuts."},
	{"bob", "doc", "Bob's team migrates the billing service to Go by the end of the quarter."},
}

var quickstartQueries = []struct{ session, query string }{
	{"alice", "what does Alice like to drink?"},
	{"bob", "咖啡"},
	{"bob", "出差 酒店"},
	{"alice", "女儿 上学"},
}

// quickstartDir is where quickstart keeps its demo store unless --dir or
// ENGRAM_DIR names one: beside the default store (~/.local/share/engram-quickstart),
// never inside it, so the default store's commands work before and after it.
func quickstartDir() string { return defaultDataDir() + "-quickstart" }

// legacyQuickstartHint explains why the default store directory is no store
// when an older quickstart put its demo store inside it, and how to move
// that out; "" for any other directory.
func legacyQuickstartHint(dir string) string {
	if dir != defaultDataDir() {
		return ""
	}
	old := filepath.Join(dir, "quickstart")
	for _, name := range []string{"CURRENT", "MANIFEST"} {
		if _, err := os.Stat(filepath.Join(old, name)); err == nil {
			return fmt.Sprintf("; %s is the demo store an older `memctl quickstart` made inside the default store: move it out of the way with `mv %s %s`",
				old, old, quickstartDir())
		}
	}
	return ""
}

func (a *app) quickstartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart",
		Short: "Create a demo store, remember a few memories and recall them (no server, no downloads)",
		Long: "quickstart creates a demo store (in " + quickstartDir() + ", beside the default store, unless --dir\n" +
			"or ENGRAM_DIR names one), remembers a small built-in set of Chinese and English memories in two\n" +
			"sessions, and runs a few recalls showing why each memory came back. It uses the built-in lexical\n" +
			"embedder, so it works right after `git clone`.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("dir") && os.Getenv(envName("dir")) == "" {
				// Not the default store, nor a store the config file
				// names: the demo forgets sessions alice and bob.
				a.dir = quickstartDir()
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			// Start from the demo set alone, so reruns show the same thing:
			// in the demo's own store the old demo memories are purged; in a
			// store the user named they are only forgotten (the trash keeps them).
			demo := memory.In(memory.FieldSession, "alice", "bob")
			clear := s.ForgetWhere
			if a.dir == quickstartDir() {
				clear = s.PurgeWhere
			}
			if _, err := clear(ctx, demo); err != nil {
				return err
			}
			for _, m := range quickstartMemories {
				if _, err := s.Remember(ctx, m.session, m.text, memory.RememberOptions{Source: m.source}); err != nil {
					return err
				}
			}
			// Compact before recalling: BM25 counts deleted documents until
			// compaction drops them (as Lucene does), so without it the scores
			// shown here would depend on whether a background compaction had
			// run yet, and a later recall could score differently.
			if err := s.Compact(ctx); err != nil && !errors.Is(err, memory.ErrUnsupported) {
				return err
			}
			out := a.stdout
			fmt.Fprintf(out, "Remembered %d memories in sessions alice and bob (embedder: %s).\n", len(quickstartMemories), s.Embedder().Fingerprint())
			for _, q := range quickstartQueries {
				res, err := s.Recall(ctx, q.query, memory.RecallOptions{Session: q.session, K: 3})
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "\nrecall --session %s --explain %q\n", q.session, q.query)
				printResults(out, res, true)
			}
			fmt.Fprintf(out, "\nThe store is in %s. Try:\n", a.dir)
			fmt.Fprintf(out, "  go run ./cmd/memctl recall --dir %s --session alice --explain \"meetup talk\"\n", a.dir)
			fmt.Fprintf(out, "  go run ./cmd/memctl remember --dir %s --session bob \"Bob 的生日是十月三号\"\n", a.dir)
			if memory.IsLexical(s.Embedder()) {
				fmt.Fprintf(out, "\n%s\n", memory.LexicalNote)
			}
			return nil
		},
	}
}
