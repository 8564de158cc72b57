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

// Remember a chat's messages the way mem0's add(messages) does: with Infer, only what the user
// states about themselves becomes memories; without it, every message is stored verbatim.
func ExampleStore_RememberMessages() {
	dir, err := os.MkdirTemp("", "engram-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := memory.Open(filepath.Join(dir, "store"), memory.OpenOptions{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	msgs := []memory.Turn{
		{Role: "user", Text: "Hi! I'm Alex. I work night shifts at St. Mary's, and my manager is Ms. Alvarez.", Time: at},
		{Role: "assistant", Text: "Nice to meet you, Alex! I'll remember that.", Time: at.Add(time.Minute)},
		{Role: "user", Text: "haha ok. Can you suggest a quiet café?", Time: at.Add(2 * time.Minute)},
		{Role: "user", Text: "Actually, I'm allergic to peanuts, so no satay please.", Time: at.Add(3 * time.Minute)},
	}
	res, err := s.RememberMessages(context.Background(), "alex", msgs, memory.MessagesOptions{Infer: true})
	if err != nil {
		panic(err)
	}
	for _, e := range res.Events {
		fmt.Println(e.Event, e.Time.Format("15:04"), e.Text)
	}
	// Output:
	// add 09:00 I'm Alex.
	// add 09:00 I work night shifts at St. Mary's, and my manager is Ms. Alvarez.
	// add 09:03 Actually, I'm allergic to peanuts, so no satay please.
}
