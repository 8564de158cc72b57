package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/engramdb/engram/memory"
)

// Open a store (engine backend, built-in lexical embedder), remember a few facts, recall.
func Example() {
	dir, err := os.MkdirTemp("", "engram-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	s, err := memory.Open(filepath.Join(dir, "store"), memory.OpenOptions{
		Options: memory.Options{Clock: func() time.Time { return now }}, // a fixed clock keeps the output stable
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	ctx := context.Background()
	for _, fact := range []string{
		"Alice's daughter is called Mia and she is seven.",
		"Alice is allergic to peanuts.",
		"Alice prefers meetings after 10am.",
	} {
		if _, err := s.Remember(ctx, "alice", fact, memory.RememberOptions{Source: "chat"}); err != nil {
			panic(err)
		}
	}
	// A memory of another session never comes back for alice.
	if _, err := s.Remember(ctx, "bob", "Bob is allergic to cats.", memory.RememberOptions{}); err != nil {
		panic(err)
	}

	results, err := s.Recall(ctx, "what is Alice allergic to?", memory.RecallOptions{Session: "alice", K: 2})
	if err != nil {
		panic(err)
	}
	// Only the answer: "Alice prefers meetings after 10am." shares nothing with the question but
	// the name, scores under a fifth of the best (RecallOptions.MinRelative) and is left out.
	for _, r := range results {
		fmt.Println(r.Text)
	}
	p, err := memory.BuildPrompt("what is Alice allergic to?", results[:1], memory.PromptOptions{NoScores: true})
	if err != nil {
		panic(err)
	}
	fmt.Print(p.Text)
	// Output:
	// Alice is allergic to peanuts.
	// <memories>
	// Memories relevant to "what is Alice allergic to?", most relevant first:
	// [1] date=2026-11-01 source=chat
	// Alice is allergic to peanuts.
	// </memories>
}
