package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/ollama"
)

// chat is one memory-augmented conversation with an Ollama model.
type chat struct {
	store     api.Ops // the store here, or the server that holds it
	client    *ollama.Client
	extractor *ollama.Extractor
	model     string
	session   string
	k         int
	out       io.Writer
}

func (c *chat) modelName() string {
	if c.model == "" {
		return ollama.DefaultChatModel
	}
	return c.model
}

// turn answers one user message: recall -> build prompt -> stream the
// answer -> remember the turn -> add both turns to short-term memory (which
// compresses the oldest ones when over budget).
func (c *chat) turn(ctx context.Context, user string) error {
	conv, err := c.store.Context(ctx, c.session)
	if err != nil {
		return err
	}
	// Recall for where the conversation is: the new message, with the recent turns behind it.
	resp, err := c.store.Recall(ctx, api.RecallRequest{Query: user, Session: c.session, K: c.k, Turns: recentTurns(conv.Turns)})
	if err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	msgs, err := chatMessages(user, results(resp), conv)
	if err != nil {
		return err
	}
	answered, err := c.client.Chat(ctx, ollama.ChatRequest{Model: c.model, Messages: msgs}, func(delta string) error {
		_, err := io.WriteString(c.out, delta)
		return err
	})
	fmt.Fprintln(c.out)
	if err != nil {
		return err
	}
	answer := answered.Message.Content
	if err := c.remember(ctx, user, answer, recentTurns(conv.Turns)); err != nil {
		return err
	}
	for _, t := range []memory.Turn{{Role: "user", Text: user}, {Role: "assistant", Text: answer}} {
		if _, err := c.store.AddTurn(ctx, c.session, t); err != nil {
			return fmt.Errorf("short-term memory: %w", err)
		}
	}
	return nil
}

// remember stores what the turn taught: the facts the extractor picks, or
// the user's message itself when there is no extractor.
func (c *chat) remember(ctx context.Context, user, answer string, before []memory.Turn) error {
	facts := []string{user}
	if c.extractor != nil {
		var err error
		if facts, err = c.extractor.Extract(ctx, user, answer); err != nil {
			return err
		}
	}
	// The exchange around a fact is its context: keyword recall then finds "yes, every
	// morning" by the question it answered.
	var around []string
	for _, t := range before {
		around = append(around, t.Text)
	}
	for _, f := range facts {
		ctxt := append(slices.Clone(around), answer)
		if f != user {
			ctxt = append(ctxt, user)
		}
		req := api.RememberRequest{Session: c.session, Text: f, Source: "chat", Context: strings.ToValidUTF8(strings.ReplaceAll(strings.Join(ctxt, "\n"), "\x1e", " "), "")}
		if len(f)+len(req.Context) >= memory.DefaultMaxTextBytes {
			req.Context = ""
		}
		if _, err := c.store.Remember(ctx, req); err != nil {
			return fmt.Errorf("remember: %w", err)
		}
	}
	return nil
}

// recentTurns is the part of the short-term conversation a recall or a remembered fact reads
// along: its last two turns.
func recentTurns(ts []memory.Turn) []memory.Turn {
	return ts[max(0, len(ts)-2):]
}

// chatMessages builds the model's input: a system message with the recalled
// memories and the conversation summary, then the recent turns verbatim,
// then the new message.
func chatMessages(user string, recalled []memory.Result, conv memory.Conversation) ([]ollama.Message, error) {
	var sys strings.Builder
	sys.WriteString("You are a helpful assistant with a long-term memory of this user. ")
	sys.WriteString("Use the memories below when they are relevant; do not mention them otherwise.\n\n")
	if len(recalled) > 0 {
		p, err := memory.BuildPrompt(user, recalled, memory.PromptOptions{})
		if err != nil {
			return nil, err
		}
		sys.WriteString(p.Text)
		sys.WriteString("\n")
	}
	if conv.Summary != "" {
		fmt.Fprintf(&sys, "\nSummary of the earlier conversation:\n%s\n", conv.Summary)
	}
	msgs := []ollama.Message{{Role: "system", Content: sys.String()}}
	for _, t := range conv.Turns {
		msgs = append(msgs, ollama.Message{Role: t.Role, Content: t.Text})
	}
	return append(msgs, ollama.Message{Role: "user", Content: user}), nil
}
