package memory

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// conversationFixture is a recorded conversation under testdata/conversations: its turns, the
// memories the built-in distiller must extract (exactly, in order, with their turns) and
// substrings no memory may contain.
type conversationFixture struct {
	Description string `json:"description"`
	Turns       []Turn `json:"turns"`
	Memories    []struct {
		Turn int    `json:"turn"`
		Text string `json:"text"`
	} `json:"memories"`
	Not []string `json:"not"`
}

// fixtureEpoch is the time of a fixture's first turn; turn i is i minutes later.
var fixtureEpoch = time.Date(2026, 3, 2, 18, 0, 0, 0, time.UTC)

func loadConversation(t *testing.T, name string) conversationFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "conversations", name))
	if err != nil {
		t.Fatal(err)
	}
	var fx conversationFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	for i := range fx.Turns {
		fx.Turns[i].Time = fixtureEpoch.Add(time.Duration(i) * time.Minute)
	}
	return fx
}

// TestRuleDistillerFixtures: on recorded conversations (English and Chinese) the built-in
// distiller extracts exactly the user's self-statements, plans, preferences and corrections,
// and nothing of the small talk, questions and assistant boilerplate around them.
func TestRuleDistillerFixtures(t *testing.T) {
	for _, name := range []string{"en_alex.json", "zh_liwei.json"} {
		t.Run(name, func(t *testing.T) {
			fx := loadConversation(t, name)
			props, err := RuleDistiller{}.Distill(context.Background(), DistillInput{Session: "s", Turns: fx.Turns})
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, p := range props {
				if p.Event != EventAdd || p.ID != "" {
					t.Errorf("proposal %+v: the built-in distiller only adds", p)
				}
				got = append(got, fmt.Sprintf("%d %s", p.Turn, p.Text))
			}
			for _, m := range fx.Memories {
				want = append(want, fmt.Sprintf("%d %s", m.Turn, m.Text))
			}
			if !slices.Equal(got, want) {
				t.Errorf("memories\n got %q\nwant %q", got, want)
			}
			for _, p := range props {
				for _, n := range fx.Not {
					if strings.Contains(p.Text, n) {
						t.Errorf("memory %q contains %q", p.Text, n)
					}
				}
			}
		})
	}
}

// TestSelfStatements: which sentences of a user's turn the built-in distiller keeps.
func TestSelfStatements(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"haha ok", nil},
		{"lol", nil},
		{"thanks!", nil},
		{"I think so.", nil},
		{"I'm not sure, I guess.", nil},
		{"I hope you have a great weekend!", nil},
		{"I love your idea.", nil},
		{"Your words mean a lot to me.", nil},
		{"Can you recommend a good dentist? Something close to where I work.", nil},
		{"do you know any vegan bakeries near me", nil},
		{"Give me a recipe for dinner.", nil},
		{"No doubts, Caroline.", nil},
		{"I mixed up the dates.", nil},
		{"Haha ok, so I'm a nurse.", []string{"I'm a nurse."}},
		{"lol I'm terrible at cooking", []string{"I'm terrible at cooking"}},
		{"I'm Sam, by the way.", []string{"I'm Sam."}},
		{"Big news: I got the job at Stripe!", []string{"I got the job at Stripe!"}},
		{"Call me Sam.", []string{"Call me Sam."}},
		{"What a day! My daughter Mia turned 7 today. She wants a cat.", []string{"My daughter Mia turned 7 today. She wants a cat."}},
		{"Can you help? I'm on a budget of 300 euros.", []string{"I'm on a budget of 300 euros."}},
		{"No, it's on Thursday, not Wednesday.", []string{"It's on Thursday, not Wednesday."}},
		{"Actually, the meeting moved to 3.30 p.m.", []string{"Actually, the meeting moved to 3.30 p.m."}},
		{"I no longer eat meat.", []string{"I no longer eat meat."}},
		{"We moved to the U.S. in 2019. It was a big change.", []string{"We moved to the U.S. in 2019. It was a big change."}},
		{"哈哈，好的，我叫王芳。", []string{"我叫王芳。"}},
		{"我也是", nil},
		{"我知道了。", nil},
		{"你喜欢猫吗？我喜欢狗。", []string{"我喜欢狗。"}},
		{"不对，会议改到周五下午三点了。", []string{"不对，会议改到周五下午三点了。"}},
		{"上次说错了。", nil},
	} {
		if got := selfStatements(c.in, map[string]bool{}); !slices.Equal(got, c.want) {
			t.Errorf("selfStatements(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestRuleDistillerRoles: assistant, system and tool turns never make memories; a named speaker
// (a multi-party chat) is named in the memory; a text already stored is not proposed again.
func TestRuleDistillerRoles(t *testing.T) {
	in := DistillInput{
		Turns: []Turn{
			{Role: "assistant", Text: "I'm Claude and I live in the cloud."},
			{Role: "system", Text: "I am the system prompt and I prefer JSON."},
			{Role: "tool", Text: "My result is 42."},
			{Role: "Caroline", Text: "I went to a support group yesterday."},
			{Role: "Human", Text: "I play the cello."},
			{Role: "user", Text: "I have two cats."},
		},
		Existing: []Memory{{ID: "m1", Text: "I have two cats."}},
	}
	props, err := RuleDistiller{}.Distill(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range props {
		got = append(got, fmt.Sprintf("%d %s", p.Turn, p.Text))
	}
	want := []string{"3 Caroline: I went to a support group yesterday.", "4 I play the cello."}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestEightyTurnsBecomeMemories is the case: 80 turns added to a session's short-term
// memory through the store's defaults (engine backend, lexical embedder). The turns that left
// the window are memories of the session, which a recall finds (session_empty was true before);
// Distill adds those still in the window; distilling again stores nothing new, also after the
// store is reopened; the memories carry source "conversation" and their turn's time; no small
// talk or boilerplate became a memory; and the summary is compact, without small talk or
// repeats, within its budget (golden).
func TestEightyTurnsBecomeMemories(t *testing.T) {
	fx := loadConversation(t, "en_alex.json")
	dir := filepath.Join(t.TempDir(), "store")
	now := fixtureEpoch
	open := func() *Store {
		s, err := Open(dir, OpenOptions{Options: Options{Clock: func() time.Time { return now }}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	ctx := context.Background()
	var conv Conversation
	var err error
	for _, turn := range fx.Turns {
		now = turn.Time
		if conv, err = s.AddTurn(ctx, "alex", turn); err != nil {
			t.Fatal(err)
		}
	}
	if conv.Compressed == 0 || conv.Distilled != conv.Compressed {
		t.Fatalf("after 80 turns: %d compressed, %d distilled", conv.Compressed, conv.Distilled)
	}
	n, err := s.Count(ctx, Eq(FieldSession, "alex"))
	if err != nil || n == 0 {
		t.Fatalf("the session holds %d memories after 80 turns (%v)", n, err)
	}
	t.Logf("%d turns compressed, %d memories distilled from them, summary %d lines, %d characters, %d tokens",
		conv.Compressed, n, strings.Count(conv.Summary, "\n")+1, len([]rune(conv.Summary)), EstimateTokens(conv.Summary))
	find := func(query, want string) {
		t.Helper()
		rs, err := s.Recall(ctx, query, RecallOptions{Session: "alex", NoTouch: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if strings.Contains(r.Text, want) {
				return
			}
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.Text)
		}
		t.Errorf("recall %q: no result with %q in %q", query, want, got)
	}
	find("Who is my manager?", "Ms. Alvarez")
	find("what am I allergic to", "peanuts")
	find("what is the name of my golden retriever", "Biscuit")
	find("when is the flight to Lisbon", "May 14")

	res, err := s.Distill(ctx, "alex")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != len(conv.Turns) || len(res.Events) == 0 || res.Fallback != "" {
		t.Fatalf("Distill of the %d turns in the window: %+v", len(conv.Turns), res)
	}
	find("how much is my budget for the condo", "450,000")

	// What the memories are: exactly the fixture's, with their provenance.
	when := map[string]time.Time{}
	var want []string
	for _, m := range fx.Memories {
		when[m.Text] = fx.Turns[m.Turn].Time
		want = append(want, m.Text)
	}
	var got []string
	err = s.coll.Scan(ctx, Eq(FieldSession, "alex"), func(m Memory) error {
		got = append(got, m.Text)
		if m.Source != DistillSource {
			t.Errorf("memory %q: source %q", m.Text, m.Source)
		}
		if at, ok := when[m.Text]; ok && !m.Created.Equal(at) {
			t.Errorf("memory %q: created %v, its turn was at %v", m.Text, m.Created, at)
		}
		for _, n := range fx.Not {
			if strings.Contains(m.Text, n) {
				t.Errorf("memory %q contains %q", m.Text, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the session's memories\n got %q\nwant %q", got, want)
	}

	// Idempotent: nothing new from a second Distill, nor after a reopen.
	before, _ := s.Count(ctx, nil)
	if res, err := s.Distill(ctx, "alex"); err != nil || len(res.Events) != 0 || res.Turns != 0 {
		t.Fatalf("second Distill: %+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	if res, err := s.Distill(ctx, "alex"); err != nil || len(res.Events) != 0 {
		t.Fatalf("Distill after reopening: %+v %v", res, err)
	}
	if after, _ := s.Count(ctx, nil); after != before {
		t.Fatalf("%d memories before, %d after distilling again", before, after)
	}

	// The summary: compact, no small talk, no repeats, "Ms. Alvarez" whole, within budget.
	if n := EstimateTokens(conv.Summary); n > DefaultShortTermTokens/2 {
		t.Errorf("summary of %d tokens, budget %d", n, DefaultShortTermTokens/2)
	}
	for _, small := range []string{"haha", "lol", "remember that", "Nice to meet you"} {
		if strings.Contains(conv.Summary, small) {
			t.Errorf("summary keeps %q", small)
		}
	}
	if !strings.Contains(conv.Summary, "Ms. Alvarez") {
		t.Errorf("summary lost or cut Ms. Alvarez")
	}
	golden(t, "summary/en_alex.golden", conv.Summary)
}

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(string(b), "\n"); got != want {
		t.Errorf("%s differs (run with -update to rewrite):\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestSummaryGoldens: the extractive summary of the recorded conversations: small talk and
// boilerplate gone, repeated assistant sentences once, consecutive turns merged into lines,
// "Ms." and "p.m." not taken for sentence ends.
func TestSummaryGoldens(t *testing.T) {
	for _, name := range []string{"en_alex", "zh_liwei"} {
		fx := loadConversation(t, name+".json")
		got, err := ExtractiveSummarizer{}.Summarize(context.Background(), "", fx.Turns)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d turns -> %d lines, %d characters", name, len(fx.Turns), strings.Count(got, "\n")+1, len([]rune(got)))
		golden(t, "summary/"+name+"_full.golden", got)
	}
}

// TestSummaryBudget: whatever the budget, the summary of a long conversation, folded again and
// again as turns keep coming, never exceeds it, and the previous summary is carried over.
func TestSummaryBudget(t *testing.T) {
	ctx := context.Background()
	en, zh := loadConversation(t, "en_alex.json"), loadConversation(t, "zh_liwei.json")
	turns := append(slices.Clone(en.Turns), zh.Turns...)
	for _, budget := range []int{1, 3, 8, 20, 50, 100, 300, 1000} {
		sum := ""
		for i := 0; i < len(turns); i += 7 {
			var err error
			sum, err = summarizeWithin(ctx, ExtractiveSummarizer{}, sum, turns[i:min(i+7, len(turns))], budget)
			if err != nil {
				t.Fatal(err)
			}
			if n := EstimateTokens(sum); n > budget {
				t.Fatalf("budget %d, after turn %d: %d tokens:\n%s", budget, i, n, sum)
			}
		}
		if budget >= 1000 && !strings.Contains(sum, "Alvarez") {
			t.Errorf("budget %d: the first turns' names are gone:\n%s", budget, sum)
		}
	}
}

// TestSummaryDedup: a sentence repeated by the assistant is kept once, but a repeat that
// changes a number or date is news and stays.
func TestSummaryDedup(t *testing.T) {
	turns := []Turn{
		{Role: "assistant", Text: "Your table at Nopa is booked for 7 pm on Friday."},
		{Role: "assistant", Text: "Your table at Nopa is booked for 7 pm on Friday!"},
		{Role: "assistant", Text: "Your table at Nopa is booked for 8 pm on Friday."},
	}
	got, _ := ExtractiveSummarizer{}.Summarize(context.Background(), "assistant: Your table at Nopa is booked for 7 pm on Friday.", turns)
	want := "assistant: Your table at Nopa is booked for 7 pm on Friday. Your table at Nopa is booked for 8 pm on Friday."
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// scriptedDistiller answers with fixed proposals or an error, and records what it was shown.
type scriptedDistiller struct {
	props []Proposal
	err   error
	seen  *DistillInput
}

func (d scriptedDistiller) Distill(_ context.Context, in DistillInput) ([]Proposal, error) {
	if d.seen != nil {
		*d.seen = in
	}
	return d.props, d.err
}

// TestDistillerProposals: a distiller's add, update and delete are carried out against the
// memories it was shown; an error or any invalid proposal (unknown event, an ID it was not
// shown, an empty text, a turn out of range, the same memory changed twice) makes the built-in
// distiller stand in, and the result says why.
func TestDistillerProposals(t *testing.T) {
	ctx := context.Background()
	setup := func(d Distiller) (*Store, string) {
		t.Helper()
		s, err := New(ctx, NewMemBackend(), Options{Embedder: lexicalEmbedder(t), Distiller: d, Clock: func() time.Time { return fixtureEpoch },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Remember(ctx, "u", "I live in Boston and work at a bakery.", RememberOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s, r.IDs[0]
	}
	msgs := []Turn{{Role: "user", Text: "I moved from Boston to Denver, and I no longer work at the bakery.", Time: fixtureEpoch.Add(time.Hour)}}

	var seen DistillInput
	s, id := setup(scriptedDistiller{seen: &seen})
	s.opts.Distiller = scriptedDistiller{seen: &seen, props: []Proposal{
		{Event: EventUpdate, ID: id, Text: "I live in Denver.", Turn: 0},
		{Event: EventAdd, Text: "I no longer work at the bakery.", Turn: -1},
	}}
	res, err := s.RememberMessages(ctx, "u", msgs, MessagesOptions{Infer: true})
	if err != nil || res.Fallback != "" || len(res.Events) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if len(seen.Existing) != 1 || seen.Existing[0].ID != id || seen.Existing[0].Vector != nil {
		t.Fatalf("the distiller was shown %+v", seen.Existing)
	}
	if e := res.Events[0]; e.Event != EventUpdate || e.ID != id || e.Text != "I live in Denver." || e.Previous != "I live in Boston and work at a bakery." {
		t.Fatalf("update event %+v", e)
	}
	if e := res.Events[1]; e.Event != EventAdd || !e.Time.Equal(msgs[0].Time) {
		t.Fatalf("add event %+v", e)
	}
	if h, _ := s.History(ctx, id); len(h) != 1 || h[0].Memory.Text != "I live in Boston and work at a bakery." {
		t.Fatalf("history of the update: %+v", h)
	}
	s.opts.Distiller = scriptedDistiller{props: []Proposal{{Event: EventDelete, ID: id}}}
	if res, err := s.RememberMessages(ctx, "u", []Turn{{Role: "user", Text: "Forget where I live."}}, MessagesOptions{Infer: true}); err != nil ||
		len(res.Events) != 1 || res.Events[0].Event != EventDelete || res.Events[0].Text != "I live in Denver." {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if ms, _ := s.Get(ctx, id); len(ms) != 0 {
		t.Fatal("deleted memory still there")
	}

	// Nothing to remember is an answer, not a failure.
	s.opts.Distiller = scriptedDistiller{}
	if res, err := s.RememberMessages(ctx, "u", msgs, MessagesOptions{Infer: true}); err != nil || res.Fallback != "" || len(res.Events) != 0 {
		t.Fatalf("a distiller proposing nothing: %+v %v", res, err)
	}

	for name, d := range map[string]scriptedDistiller{
		"error":         {err: errors.New("model not found")},
		"unknown event": {props: []Proposal{{Event: "upsert", Text: "x"}}},
		"unknown ID":    {props: []Proposal{{Event: EventUpdate, ID: "not-shown", Text: "x"}}},
		"add with ID":   {props: []Proposal{{Event: EventAdd, ID: "x", Text: "x"}}},
		"empty text":    {props: []Proposal{{Event: EventAdd, Text: "  "}}},
		"turn range":    {props: []Proposal{{Event: EventAdd, Text: "x", Turn: 5}}},
		"twice":         {props: []Proposal{{Event: EventDelete, ID: "ID"}, {Event: EventUpdate, ID: "ID", Text: "x"}}},
	} {
		t.Run(name, func(t *testing.T) {
			s, id := setup(nil)
			for i := range d.props {
				if d.props[i].ID == "ID" {
					d.props[i].ID = id
				}
			}
			s.opts.Distiller = d
			res, err := s.RememberMessages(ctx, "u", msgs, MessagesOptions{Infer: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Fallback == "" || len(res.Events) != 1 || res.Events[0].Event != EventAdd || res.Events[0].Text != msgs[0].Text {
				t.Fatalf("%+v", res)
			}
			if ms, _ := s.Get(ctx, id); len(ms) != 1 || ms[0].Text != "I live in Boston and work at a bakery." {
				t.Fatalf("the existing memory changed: %+v", ms)
			}
		})
	}
}

// TestRememberMessages: with Infer off every message but system ones is stored verbatim (today's
// facade), with Infer on only what the user states; bad input changes nothing.
func TestRememberMessages(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, NewMemBackend(), Options{Embedder: lexicalEmbedder(t), Clock: func() time.Time { return fixtureEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Turn{
		{Role: "system", Text: "You are a helpful assistant."},
		{Role: "user", Text: "Hi! I'm Alex and I'm allergic to peanuts."},
		{Role: "assistant", Text: "Nice to meet you, Alex! I'll remember that."},
		{Role: "user", Text: "   "},
	}
	res, err := s.RememberMessages(ctx, "verbatim", msgs, MessagesOptions{RememberOptions: RememberOptions{Tags: []string{"t"}}})
	if err != nil || res.Turns != 2 || len(res.Events) != 2 || res.Events[1].Text != msgs[2].Text {
		t.Fatalf("verbatim: %+v %v", res, err)
	}
	res, err = s.RememberMessages(ctx, "infer", msgs, MessagesOptions{Infer: true})
	if err != nil || len(res.Events) != 1 || res.Events[0].Text != "I'm Alex and I'm allergic to peanuts." {
		t.Fatalf("infer: %+v %v", res, err)
	}
	ms, err := s.Get(ctx, res.Events[0].ID)
	if err != nil || len(ms) != 1 || ms[0].Source != DistillSource || !ms[0].Created.Equal(fixtureEpoch) || !strings.Contains(ms[0].Context, "Hi! I'm Alex") {
		t.Fatalf("distilled memory %+v %v", ms, err)
	}
	before, _ := s.Count(ctx, nil)
	for name, bad := range map[string][]Turn{
		"none":      nil,
		"utf8":      {{Role: "user", Text: "I like \xff"}},
		"time":      {{Role: "user", Text: "I like tea", Time: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"too many":  make([]Turn, MaxTurns+1),
		"separator": {{Role: "user", Text: "I like tea\x1e"}},
	} {
		for _, infer := range []bool{false, true} {
			if _, err := s.RememberMessages(ctx, "x", bad, MessagesOptions{Infer: infer}); !errors.Is(err, ErrInvalidInput) {
				t.Errorf("%s (infer %v): %v", name, infer, err)
			}
		}
	}
	if after, _ := s.Count(ctx, nil); after != before {
		t.Fatalf("bad input wrote %d memories", after-before)
	}
}

// TestAutoDistillOptions: NoAutoDistill keeps compressed turns out of long-term memory; a
// conversation imported with a watermark out of range is refused.
func TestAutoDistillOptions(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, NewMemBackend(), Options{Embedder: lexicalEmbedder(t), ShortTermTokens: 60, NoAutoDistill: true})
	if err != nil {
		t.Fatal(err)
	}
	var c Conversation
	for i := range 10 {
		if c, err = s.AddTurn(ctx, "s", Turn{Role: "user", Text: fmt.Sprintf("I have %d apples in my kitchen.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Count(ctx, nil); c.Compressed == 0 || n != 0 || c.Distilled != 0 {
		t.Fatalf("NoAutoDistill: %d compressed, %d distilled, %d memories", c.Compressed, c.Distilled, n)
	}
	res, err := s.Distill(ctx, "s")
	if err != nil || res.Turns != len(c.Turns) {
		t.Fatalf("Distill reads only the turns in the window: %+v %v", res, err)
	}
	c.Session, c.Distilled = "t", c.Compressed+len(c.Turns)+1
	if err := s.ImportConversation(ctx, c); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("import with distilled past the turns: %v", err)
	}
	if res, err := s.Distill(ctx, "nobody"); err != nil || res.Turns != 0 || res.Events == nil {
		t.Fatalf("Distill of a session without turns: %+v %v", res, err)
	}
}

// TestDistillLocomo is a sanity check on real conversations, run by hand:
// ENGRAM_LOCOMO=.../locomo-dev/corpus.jsonl go test ./memory -run TestDistillLocomo -v
// (one line per turn, "Speaker: text", with its session). It logs how many memories each
// conversation yields and a sample of the first.
func TestDistillLocomo(t *testing.T) {
	path := os.Getenv("ENGRAM_LOCOMO")
	if path == "" {
		t.Skip("ENGRAM_LOCOMO not set")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	convs := map[string][]Turn{}
	var order []string
	for dec := json.NewDecoder(f); dec.More(); {
		var r struct{ Text, Session string }
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		role, text, _ := strings.Cut(r.Text, ": ")
		if _, ok := convs[r.Session]; !ok {
			order = append(order, r.Session)
		}
		convs[r.Session] = append(convs[r.Session], Turn{Role: role, Text: text})
	}
	for i, name := range order {
		props, err := RuleDistiller{}.Distill(context.Background(), DistillInput{Turns: convs[name]})
		if err != nil {
			t.Fatal(err)
		}
		from := map[int]bool{}
		for _, p := range props {
			from[p.Turn] = true
		}
		t.Logf("%s: %d turns, %d memories from %d turns", name, len(convs[name]), len(props), len(from))
		for _, p := range props[:min(len(props), 15)] {
			if i == 0 {
				t.Logf("  turn %d: %s", p.Turn, p.Text)
			}
		}
	}
}

// flakyEmbedder fails while fail is set.
type flakyEmbedder struct {
	Embedder
	fail *bool
}

func (e flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if *e.fail {
		return nil, errors.New("embedder down")
	}
	return e.Embedder.Embed(ctx, texts)
}

// TestAutoDistillFailure: when the distilled memories cannot be written, AddTurn fails and the
// conversation stays as it was; the next AddTurn distills the same turns.
func TestAutoDistillFailure(t *testing.T) {
	ctx := context.Background()
	fail := false
	s, err := New(ctx, NewMemBackend(), Options{Embedder: flakyEmbedder{lexicalEmbedder(t), &fail}, ShortTermTokens: 60})
	if err != nil {
		t.Fatal(err)
	}
	add := func(i int) (Conversation, error) {
		return s.AddTurn(ctx, "s", Turn{Role: "user", Text: fmt.Sprintf("I keep %d bikes in my garage in Lyon.", i)})
	}
	var c Conversation
	for i := 0; c.Compressed == 0; i++ {
		before := c
		fail = true
		if got, err := add(i); err == nil { // no compression yet: nothing to embed
			c = got
			continue
		}
		if got, _ := s.Context(ctx, "s"); len(got.Turns) != len(before.Turns) || got.Compressed != before.Compressed {
			t.Fatalf("a failed AddTurn changed the conversation: %+v", got)
		}
		fail = false
		if c, err = add(i); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Count(ctx, nil); n != c.Compressed || c.Distilled != c.Compressed {
		t.Fatalf("%d memories, %d compressed, %d distilled", n, c.Compressed, c.Distilled)
	}
}
