package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/ollama"
)

// shortTermOptions fills the short-term settings of opts from --short-term-tokens,
// --summarizer (extractive, the built-in one, or ollama:MODEL) and --distiller (rules, the
// built-in one, or ollama:MODEL), unless the command set them.
func (a *app) shortTermOptions(opts memory.Options) (memory.Options, error) {
	if opts.ShortTermTokens == 0 {
		if a.shortTermTokens < 0 {
			return opts, usagef("--short-term-tokens must be positive (0 means the default %d)", memory.DefaultShortTermTokens)
		}
		opts.ShortTermTokens = a.shortTermTokens
	}
	model, useOllama, err := builtinOrOllama("--summarizer", a.summarizer, "extractive")
	if err != nil {
		return opts, err
	}
	if useOllama && opts.Summarizer == nil {
		c, err := ollama.New(ollama.Config{BaseURL: a.ollamaURL})
		if err != nil {
			return opts, err
		}
		opts.Summarizer = &ollama.Summarizer{Client: c, Model: model}
	}
	if model, useOllama, err = builtinOrOllama("--distiller", a.distiller, "rules"); err != nil {
		return opts, err
	}
	if useOllama && opts.Distiller == nil {
		c, err := ollama.New(ollama.Config{BaseURL: a.ollamaURL})
		if err != nil {
			return opts, err
		}
		opts.Distiller = &ollama.Distiller{Client: c, Model: model}
	}
	return opts, nil
}

// builtinOrOllama reads a flag that names a built-in implementation or ollama:MODEL: it
// returns the model and true for the latter, a usage error for anything else.
func builtinOrOllama(flag, value, builtin string) (string, bool, error) {
	kind, arg, _ := strings.Cut(value, ":")
	switch kind {
	case "", builtin:
		if arg != "" {
			return "", false, usagef("%s %s takes no argument", flag, builtin)
		}
		return "", false, nil
	case "ollama":
		return arg, true, nil
	}
	return "", false, usagef("unknown %s %q (want %s or ollama:MODEL)", flag, value, builtin)
}

func (a *app) contextCommand() *cobra.Command {
	var session string
	needSession := func(cmd *cobra.Command) error {
		if !cmd.Flags().Changed("session") {
			return usagef("%s needs --session", cmd.CommandPath())
		}
		return nil
	}
	show := func(cmd *cobra.Command, _ []string) error {
		if err := needSession(cmd); err != nil {
			return err
		}
		ops, err := a.dataOps(cmd.Context())
		if err != nil {
			return err
		}
		c, err := ops.Context(cmd.Context(), session)
		if err != nil {
			return err
		}
		return a.printConversation(c)
	}
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Short-term memory: a session's recent turns and the summary of older ones",
		Long: "context shows, extends, distills and clears a session's conversation buffer. Past its budget\n" +
			"(--short-term-tokens) the oldest turns are compressed into a summary by --summarizer, and what the user\n" +
			"states about themselves in them becomes long-term memories; context distill does that for the turns still there.",
		Args: noArgs, RunE: show,
	}
	cmd.PersistentFlags().StringVarP(&session, "session", "s", "", "the session (required)")
	showCmd := &cobra.Command{Use: "show", Short: "Print the summary and the recent turns", Args: noArgs, RunE: show}
	var role string
	add := &cobra.Command{Use: "add [TEXT...]", Short: "Append a turn (TEXT, or - for stdin)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("context add needs the turn's text (or - for stdin)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needSession(cmd); err != nil {
				return err
			}
			text := strings.Join(args, " ")
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(a.stdin, memory.DefaultMaxTextBytes+1))
				if err != nil {
					return err
				}
				text = string(b)
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			c, err := ops.AddTurn(cmd.Context(), session, memory.Turn{Role: role, Text: text})
			switch {
			case err != nil:
				return err
			case a.jsonOut:
				return a.printJSON(c)
			case c.Receipt: // a key that may not read the conversation
				fmt.Fprintf(a.stdout, "added a turn to the conversation of session %s\n", sanitize(c.Session))
				return nil
			}
			return a.printConversation(c.Conversation)
		}}
	add.Flags().StringVar(&role, "role", "user", "who spoke: user, assistant, ...")
	// onSession runs op on the session named by --session and prints its answer: JSON with
	// --json, else what text prints.
	onSession := func(op func(api.Ops, context.Context, string) (any, error), text func(any)) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			if err := needSession(cmd); err != nil {
				return err
			}
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			res, err := op(ops, cmd.Context(), session)
			switch {
			case err != nil:
				return err
			case a.jsonOut:
				return a.printJSON(res)
			}
			text(res)
			return nil
		}
	}
	clearCmd := &cobra.Command{Use: "clear", Short: "Delete the session's turns and summary", Args: noArgs,
		RunE: onSession(func(ops api.Ops, ctx context.Context, s string) (any, error) { return ops.ClearContext(ctx, s) },
			func(any) { fmt.Fprintf(a.stdout, "cleared the conversation of session %s\n", sanitize(session)) })}
	distill := &cobra.Command{Use: "distill", Short: "Turn the session's turns not yet distilled into long-term memories",
		Long: "distill reads the session's turns that no distillation has read (turns leaving the buffer are distilled by\n" +
			"themselves) and remembers what the user states about themselves: facts, plans, preferences, corrections.\n" +
			"Distilling again stores nothing new.",
		Args: noArgs,
		RunE: onSession(func(ops api.Ops, ctx context.Context, s string) (any, error) { return ops.Distill(ctx, s) },
			func(res any) { a.printDistilled(res.(memory.DistillResult)) })}
	cmd.AddCommand(showCmd, add, distill, clearCmd)
	return cmd
}

func (a *app) printConversation(c memory.Conversation) error {
	if a.jsonOut {
		return a.printJSON(c)
	}
	if c.Summary == "" && len(c.Turns) == 0 {
		fmt.Fprintf(a.stdout, "(no conversation in session %s)\n", sanitize(c.Session))
		return nil
	}
	if c.Summary != "" {
		fmt.Fprintf(a.stdout, "summary of %d earlier turns:\n", c.Compressed)
		for _, l := range strings.Split(c.Summary, "\n") {
			fmt.Fprintf(a.stdout, "  %s\n", sanitize(l))
		}
	}
	for _, t := range c.Turns {
		fmt.Fprintf(a.stdout, "%s %s: %s\n", t.Time.UTC().Format(timeLayout), sanitize(t.Role), sanitize(t.Text))
	}
	return nil
}
