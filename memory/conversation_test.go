package memory_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
	"github.com/engramdb/engram/memory/memorytest"
)

func forBackends(t *testing.T, fn func(t *testing.T, b memory.Backend)) {
	t.Run("mem", func(t *testing.T) { fn(t, memory.NewMemBackend()) })
	t.Run("engine", func(t *testing.T) { fn(t, newEngineBackend(t)) })
}

func lexicalStore(t *testing.T, b memory.Backend) *memory.Store {
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := memorytest.NewStore(t, b, memory.Options{Embedder: emb, DedupThreshold: -1,
		VectorWeight: memory.LexicalVectorWeight, KeywordWeight: memory.LexicalKeywordWeight})
	return s
}

var concert = []memory.Turn{
	{Role: "Mel", Text: "Hey Caroline, good to see you!"},
	{Role: "Mel", Text: "How was the Coldplay concert in Lisbon on Saturday?"},
	{Role: "Caroline", Text: "Yes! It was amazing, I cried during the last song."},
	{Role: "Mel", Text: "I adopted a puppy called Biscuit last week."},
	{Role: "Caroline", Text: "Lovely, send me pictures of the dog."},
	{Role: "Mel", Text: "My sister starts her new job at the bakery tomorrow."},
	{Role: "Caroline", Text: "Tell her good luck with the croissants."},
}

// TestRememberConversation: each turn is a memory whose text is the turn alone and whose context
// (its neighbours) lets keyword search find an answer phrased in other words, on every backend.
func TestRememberConversation(t *testing.T) {
	forBackends(t, func(t *testing.T, b memory.Backend) {
		s := lexicalStore(t, b)
		res, err := s.RememberConversation(ctx, "c", concert, memory.RememberOptions{Source: "chat"})
		if err != nil || len(res.IDs) != len(concert) {
			t.Fatalf("%v %v", err, res)
		}
		ms, err := s.Get(ctx, res.IDs[2])
		if err != nil || len(ms) != 1 {
			t.Fatal(err)
		}
		m := ms[0]
		if m.Text != "Caroline: Yes! It was amazing, I cried during the last song." || m.Source != "chat" {
			t.Fatalf("stored text %q source %q", m.Text, m.Source)
		}
		for _, want := range []string{"Mel: Hey Caroline", "Coldplay", "Biscuit", "Caroline: Lovely"} {
			if !strings.Contains(m.Context, want) {
				t.Fatalf("context lacks %q: %q", want, m.Context)
			}
		}
		if strings.Contains(m.Context, "sister") || strings.Contains(m.Context, "amazing") {
			t.Fatalf("context reaches past two turns or holds the turn itself: %q", m.Context)
		}
		// "Did Caroline enjoy the Lisbon concert?" is answered by a turn that names neither.
		for _, mode := range []memory.Mode{memory.ModeKeyword, memory.ModeHybrid} {
			rs, err := s.Recall(ctx, "Did Caroline enjoy the Lisbon concert?", memory.RecallOptions{Session: "c", K: 3, Mode: mode, NoTouch: true})
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, r := range rs {
				ids = append(ids, r.ID)
				if strings.Contains(r.Text, "\x1e") || r.Context != "" && strings.Contains(r.Text, r.Context) {
					t.Fatalf("a result's text carries its context: %q", r.Text)
				}
			}
			if !strings.Contains(strings.Join(ids, " "), res.IDs[2]) {
				t.Fatalf("mode %d: the answer turn is not in the top 3: %q", mode, memorytest.Texts(rs))
			}
		}
		// A prompt shows texts, never contexts.
		rs, _ := s.Recall(ctx, "Biscuit puppy", memory.RecallOptions{Session: "c", K: 1, NoTouch: true})
		p, err := memory.BuildPrompt("q", rs, memory.PromptOptions{})
		if err != nil || strings.Contains(p.Text, "Coldplay") || !strings.Contains(p.Text, "Biscuit") {
			t.Fatalf("prompt %q %v", p.Text, err)
		}
		// The separator cannot come from the caller.
		for _, o := range []struct {
			text string
			opts memory.RememberOptions
		}{{"a\x1eb", memory.RememberOptions{}}, {"a", memory.RememberOptions{Context: "x\x1ey"}}, {"a", memory.RememberOptions{Context: "\xff"}}} {
			if _, err := s.Remember(ctx, "c", o.text, o.opts); !errors.Is(err, memory.ErrInvalidInput) {
				t.Fatalf("Remember(%q, %+v): %v", o.text, o.opts, err)
			}
		}
		if _, err := s.RememberConversation(ctx, "c", []memory.Turn{{Text: "fine"}, {Text: " "}}, memory.RememberOptions{}); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("an empty turn: %v", err)
		}
		if _, err := s.RememberConversation(ctx, "c", nil, memory.RememberOptions{}); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("no turns: %v", err)
		}
		if n, _ := s.Count(ctx, nil); n != len(concert) {
			t.Fatalf("bad input wrote something: %d memories", n)
		}
		// Context survives the JSON form (export, history) and Scan/Import (migrate).
		j := memory.ToJSON(&m, false)
		if back := j.Memory(); back.Context != m.Context || back.Text != m.Text {
			t.Fatalf("JSON round trip: %+v", back)
		}
		var all []memory.Memory
		if err := s.Scan(ctx, nil, func(m memory.Memory) error { all = append(all, m); return nil }); err != nil {
			t.Fatal(err)
		}
		s2 := lexicalStore(t, memory.NewMemBackend())
		if err := s2.Import(ctx, all); err != nil {
			t.Fatal(err)
		}
		if ms, _ := s2.Get(ctx, res.IDs[2]); len(ms) != 1 || ms[0].Context != m.Context || ms[0].Text != m.Text {
			t.Fatalf("imported %+v", ms)
		}
	})
}

// TestRecallTurns: a recall can take the recent conversation instead of (or with) a query; the
// latest turns with content count, small talk does not.
func TestRecallTurns(t *testing.T) {
	forBackends(t, func(t *testing.T, b memory.Backend) {
		s := lexicalStore(t, b)
		for _, text := range []string{
			"Alice is allergic to peanuts.",
			"Alice's flight to Osaka leaves on Friday at 9.",
			"Bob repaired the bicycle brakes.",
		} {
			memorytest.Remember(t, s, "a", text, memory.RememberOptions{})
		}
		turns := []memory.Turn{
			{Role: "user", Text: "My brother Bob fixed my bicycle brakes yesterday."},
			{Role: "assistant", Text: "Nice of him."},
			{Role: "user", Text: "Anyway, I have to pack for the Osaka flight."},
			{Role: "assistant", Text: "Sure, ok!"},
		}
		rs, err := s.Recall(ctx, "", memory.RecallOptions{Session: "a", K: 2, NoTouch: true, Turns: turns})
		if err != nil || len(rs) == 0 || !strings.Contains(rs[0].Text, "Osaka") {
			t.Fatalf("latest turn with content should lead: %v %q", err, memorytest.Texts(rs))
		}
		// With a query, the query leads and the turns add what they share.
		rs, err = s.Recall(ctx, "what can't she eat?", memory.RecallOptions{Session: "a", K: 3, NoTouch: true, Turns: turns})
		if err != nil || len(rs) == 0 {
			t.Fatal(err)
		}
		// A dialogue passed as the query (three lines or more) reads the same way.
		rs2, err := s.Recall(ctx, "user: My brother Bob fixed my bicycle brakes yesterday.\nassistant: Nice of him.\nuser: Anyway, I have to pack for the Osaka flight.\nassistant: Sure, ok!",
			memory.RecallOptions{Session: "a", K: 2, NoTouch: true})
		if err != nil || len(rs2) == 0 || !strings.Contains(rs2[0].Text, "Osaka") {
			t.Fatalf("dialogue query: %v %q", err, memorytest.Texts(rs2))
		}
		for _, o := range []memory.RecallOptions{
			{Session: "a"},
			{Session: "a", Turns: []memory.Turn{{Text: " "}}},
			{Session: "a", Turns: []memory.Turn{{Text: "\xff"}}},
			{Session: "a", Turns: make([]memory.Turn, memory.MaxTurns+1)},
		} {
			if _, err := s.Recall(ctx, "", o); !errors.Is(err, memory.ErrInvalidInput) {
				t.Fatalf("Recall with %d turns: %v", len(o.Turns), err)
			}
		}
	})
}
