package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/engramdb/engram/memory"
)

// deterministic asks for greedy decoding, so the same input gives the same
// summary (the memory layer expects a Summarizer to be deterministic).
var deterministic = map[string]any{"temperature": 0, "seed": 42}

// Summarizer compresses conversation turns through a chat model; it
// implements memory.Summarizer.
type Summarizer struct {
	Client *Client
	// Model is the chat model; "" means DefaultChatModel.
	Model string
	// MaxWords bounds the summary's length in the instruction; 0 means 150.
	MaxWords int
}

// Summarize returns a summary covering previous and turns, oldest first.
func (s *Summarizer) Summarize(ctx context.Context, previous string, turns []memory.Turn) (string, error) {
	if s.Client == nil {
		return "", errors.New("ollama: summarizer has no client")
	}
	words := s.MaxWords
	if words <= 0 {
		words = 150
	}
	var b strings.Builder
	if previous != "" {
		fmt.Fprintf(&b, "Summary so far:\n%s\n\n", previous)
	}
	b.WriteString("New turns:\n")
	for _, t := range turns {
		fmt.Fprintf(&b, "%s: %s\n", t.Role, t.Text)
	}
	resp, err := s.Client.Chat(ctx, ChatRequest{
		Model: s.Model,
		Messages: []Message{
			{Role: "system", Content: fmt.Sprintf("You maintain the running summary of a conversation for an assistant's memory. "+
				"Merge the summary so far with the new turns into one summary of at most %d words. Keep names, facts, "+
				"preferences, decisions and open questions; drop small talk. Write in the conversation's language. "+
				"Answer with the summary only.", words)},
			{Role: "user", Content: b.String()},
		},
		Options: deterministic,
	}, nil)
	if err != nil {
		return "", fmt.Errorf("ollama: summarize: %w", err)
	}
	return strings.TrimSpace(resp.Message.Content), nil
}

// Extractor asks a chat model which facts in a conversation turn are worth
// remembering long-term, before they are passed to memory.Store.Remember.
type Extractor struct {
	Client *Client
	// Model is the chat model; "" means DefaultChatModel.
	Model string
}

// Extract returns the facts worth remembering from one exchange (possibly
// none), each a short self-contained sentence.
func (e *Extractor) Extract(ctx context.Context, user, assistant string) ([]string, error) {
	if e.Client == nil {
		return nil, errors.New("ollama: extractor has no client")
	}
	resp, err := e.Client.Chat(ctx, ChatRequest{
		Model: e.Model,
		Messages: []Message{
			{Role: "system", Content: "You pick what an assistant should remember about its user long-term: stable facts, " +
				"preferences, plans, names, decisions. Ignore questions, greetings and anything only relevant now. " +
				"Answer with a JSON array of short self-contained sentences in the user's language, or [] if nothing qualifies."},
			{Role: "user", Content: "User: " + user + "\nAssistant: " + assistant},
		},
		Options: deterministic,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("ollama: extract: %w", err)
	}
	return parseFacts(resp.Message.Content)
}

// parseFacts reads the JSON array of an extraction answer, tolerating the
// code fences and prose models like to wrap around it.
func parseFacts(answer string) ([]string, error) {
	start, end := strings.Index(answer, "["), strings.LastIndex(answer, "]")
	if start < 0 || end < start {
		return nil, fmt.Errorf("ollama: extract: answer has no JSON array: %.80q", answer)
	}
	var facts []string
	if err := json.Unmarshal([]byte(answer[start:end+1]), &facts); err != nil {
		return nil, fmt.Errorf("ollama: extract: answer is not a JSON array of strings: %w", err)
	}
	out := facts[:0]
	for _, f := range facts {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}
