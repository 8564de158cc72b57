package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func TestRememberRecall(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, _ := newTestStoreOn(t, mk(t), Options{})
		mustRemember(t, s, "u1", "The user's dog is called Biscuit.", RememberOptions{Source: "chat", Tags: []string{"pets"}})
		mustRemember(t, s, "u1", "The user works as a nurse in Lyon.", RememberOptions{})
		mustRemember(t, s, "u1", "Project deadline is the third of March.", RememberOptions{})
		for _, mode := range []Mode{ModeHybrid, ModeVector, ModeKeyword} {
			rs, err := s.Recall(ctx, "what is the dog called", RecallOptions{Session: "u1", Mode: mode, NoTouch: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || !strings.Contains(rs[0].Text, "Biscuit") {
				t.Fatalf("mode %d: got %q", mode, texts(rs))
			}
			if rs[0].Source != "chat" || !slices.Equal(rs[0].Tags, []string{"pets"}) || rs[0].Vector != nil {
				t.Fatalf("mode %d: metadata %+v", mode, rs[0].Memory)
			}
			sc := rs[0].Score
			if sc.Final != sc.Fused*sc.Decay*sc.Weight {
				t.Fatalf("score parts do not multiply: %+v", sc)
			}
		}
	})
}

func TestRecallTouchesResults(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, clk := newTestStoreOn(t, mk(t), Options{})
		r := mustRemember(t, s, "a", "apples are red", RememberOptions{})
		mustRemember(t, s, "a", "bananas are yellow", RememberOptions{})
		clk.Advance(time.Hour)
		rs, err := s.Recall(ctx, "apples", RecallOptions{Session: "a", K: 1})
		if err != nil || len(rs) != 1 || rs[0].ID != r.IDs[0] {
			t.Fatalf("recall: %v %q", err, texts(rs))
		}
		if rs[0].AccessCount != 0 {
			t.Fatalf("result should show the access count before this recall, got %d", rs[0].AccessCount)
		}
		ms, _ := s.Get(ctx, r.IDs[0])
		if ms[0].AccessCount != 1 || !ms[0].LastAccess.Equal(clk.Now()) {
			t.Fatalf("access not recorded: count %d last %v", ms[0].AccessCount, ms[0].LastAccess)
		}
		if _, err := s.Recall(ctx, "apples", RecallOptions{Session: "a", K: 1, NoTouch: true}); err != nil {
			t.Fatal(err)
		}
		ms, _ = s.Get(ctx, r.IDs[0])
		if ms[0].AccessCount != 1 {
			t.Fatalf("NoTouch recorded an access")
		}
	})
}

// TestNoCrossSessionLeakage: over random sessions, memories and queries, a session-scoped
// recall only ever returns that session's memories, in every mode and fusion.
func TestNoCrossSessionLeakage(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		rng := rand.New(rand.NewPCG(1, 2))
		vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau 苹果 香蕉 北京 上海 咖啡")
		phrase := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = vocab[rng.IntN(len(vocab))]
			}
			return strings.Join(ws, " ")
		}
		s, _ := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1})
		sessions := []string{"", "s1", "s2", "s3", "会话"}
		count := map[string]int{}
		for range 150 {
			sess := sessions[rng.IntN(len(sessions)-1)] // the last session stays empty
			mustRemember(t, s, sess, phrase(3+rng.IntN(6)), RememberOptions{})
			count[sess]++
		}
		for q := range 60 {
			query := phrase(1 + rng.IntN(3))
			sess := sessions[rng.IntN(len(sessions))]
			o := RecallOptions{Session: sess, K: 1 + rng.IntN(20), Mode: Mode(q % 3), Fusion: Fusion(q / 3 % 2), NoTouch: q%2 == 0}
			rs, err := s.Recall(ctx, query, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Session != sess {
					t.Fatalf("query %q in session %q returned a memory of session %q", query, sess, r.Session)
				}
			}
			if count[sess] == 0 && len(rs) != 0 {
				t.Fatalf("unknown session %q returned %d results", sess, len(rs))
			}
			if len(rs) > min(o.K, count[sess]) {
				t.Fatalf("recall in %q: %d results, more than K=%d or the session's %d", sess, len(rs), o.K, count[sess])
			}
		}
		// AllSessions does cross sessions.
		rs, err := s.Recall(ctx, phrase(2), RecallOptions{AllSessions: true, K: 100, Mode: ModeVector})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range rs {
			seen[r.Session] = true
		}
		if len(seen) < 2 {
			t.Fatalf("AllSessions recall saw sessions %v", seen)
		}
	})
}

func TestDecayOrdering(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, clk := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1})
		start := clk.Now()
		old := mustRemember(t, s, "d", "meeting notes about the budget", RememberOptions{Time: start.Add(-10 * day)})
		fresh := mustRemember(t, s, "d", "meeting notes about the budget", RememberOptions{Time: start.Add(-1 * day)})
		o := RecallOptions{Session: "d", Mode: ModeKeyword, NoTouch: true}

		rs, err := s.Recall(ctx, "budget meeting", o)
		if err != nil || len(rs) != 2 {
			t.Fatalf("%v %d", err, len(rs))
		}
		if rs[0].ID != fresh.IDs[0] || rs[1].ID != old.IDs[0] {
			t.Fatalf("newer memory should rank first")
		}
		if want := math.Pow(0.9, 10); math.Abs(rs[1].Score.Decay-want) > 1e-12 {
			t.Fatalf("decay after 10 days = %v, want %v", rs[1].Score.Decay, want)
		}
		if rs[0].Score.Fused != rs[1].Score.Fused {
			t.Fatalf("identical texts should fuse equally: %+v %+v", rs[0].Score, rs[1].Score)
		}

		o.Decay = Decay{HalfLife: 5 * day}
		rs, _ = s.Recall(ctx, "budget meeting", o)
		if math.Abs(rs[1].Score.Decay-0.25) > 1e-12 || math.Abs(rs[0].Score.Decay-math.Exp2(-0.2)) > 1e-12 {
			t.Fatalf("half-life decay: %v %v", rs[0].Score.Decay, rs[1].Score.Decay)
		}

		// Recalling the old memory refreshes it under DecayLastAccess, not under DecayCreated.
		if _, err := s.Recall(ctx, "budget", RecallOptions{Session: "d", Filter: Eq(FieldSession, "d"), K: 1, Decay: Decay{Off: true}, Mode: ModeKeyword}); err != nil {
			t.Fatal(err)
		}
		// Ties (Decay off) break by ID; touch whichever came first, then make sure it is the old one.
		ms, _ := s.Get(ctx, old.IDs[0], fresh.IDs[0])
		touched := ms[0]
		if ms[1].AccessCount > 0 {
			touched = ms[1]
		}
		clk.Advance(2 * day)
		rs, _ = s.Recall(ctx, "budget meeting", RecallOptions{Session: "d", Mode: ModeKeyword, NoTouch: true})
		if rs[0].ID != touched.ID || math.Abs(rs[0].Score.Decay-0.81) > 1e-12 {
			t.Fatalf("last-access basis: first %s decay %v, want %s decay 0.81", rs[0].ID, rs[0].Score.Decay, touched.ID)
		}
		rs, _ = s.Recall(ctx, "budget meeting", RecallOptions{Session: "d", Mode: ModeKeyword, NoTouch: true, Decay: Decay{Basis: DecayCreated}})
		if rs[0].ID != fresh.IDs[0] || math.Abs(rs[0].Score.Decay-math.Pow(0.9, 3)) > 1e-12 {
			t.Fatalf("created basis: first %s decay %v", rs[0].ID, rs[0].Score.Decay)
		}
	})
}

func TestFusionAndWeights(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, _ := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1})
		mustRemember(t, s, "f", "rust borrow checker lifetimes", RememberOptions{Source: "docs", Importance: 1})
		mustRemember(t, s, "f", "go garbage collector pauses", RememberOptions{Source: "chat", Importance: 0.1})
		mustRemember(t, s, "f", "borrow a book from the library", RememberOptions{Source: "chat"})
		rs, err := s.Recall(ctx, "borrow checker", RecallOptions{Session: "f", K: 3, NoTouch: true, Fusion: FusionRRF, Decay: Decay{Off: true}, ImportanceWeight: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			want := 0.0
			vr, kr := rankIn(t, s, "borrow checker", r.ID, ModeVector), rankIn(t, s, "borrow checker", r.ID, ModeKeyword)
			if vr > 0 {
				want += 1 / (60 + float64(vr))
			}
			if kr > 0 {
				want += 1 / (60 + float64(kr))
			}
			if math.Abs(r.Score.Fused-want) > 1e-12 || r.Score.Weight != 1 || r.Score.Final != r.Score.Fused {
				t.Fatalf("RRF of %q: %+v, want fused %v", r.Text, r.Score, want)
			}
		}
		rs, _ = s.Recall(ctx, "borrow checker", RecallOptions{Session: "f", K: 3, NoTouch: true, Fusion: FusionWeighted,
			VectorWeight: 0.3, KeywordWeight: 0.7, Decay: Decay{Off: true}, ImportanceWeight: -1})
		top := rs[0]
		if top.Score.Keyword == 0 || math.Abs(top.Score.Fused-(0.3*top.Score.Vector+0.7*1)) > 1e-9 {
			t.Fatalf("weighted fusion of the best keyword hit: %+v", top.Score)
		}
		// Source weights and importance.
		rs, _ = s.Recall(ctx, "borrow", RecallOptions{Session: "f", K: 3, NoTouch: true, Decay: Decay{Off: true},
			SourceWeights: map[string]float64{"chat": 0}, ImportanceWeight: 2})
		for _, r := range rs {
			wantW := 1 + 2*(r.Importance-0.5)
			if r.Source == "chat" {
				wantW = 0
			}
			if math.Abs(r.Score.Weight-wantW) > 1e-12 {
				t.Fatalf("%q weight %v want %v", r.Text, r.Score.Weight, wantW)
			}
		}
		if rs[0].Source != "docs" {
			t.Fatalf("zero-weighted source ranked first: %q", texts(rs))
		}
		rs, _ = s.Recall(ctx, "borrow", RecallOptions{Session: "f", K: 3, NoTouch: true, MinScore: 1e-9,
			SourceWeights: map[string]float64{"chat": 0}})
		for _, r := range rs {
			if r.Source == "chat" {
				t.Fatalf("MinScore kept a zero-score result")
			}
		}
	})
}

func rankIn(t *testing.T, s *Store, q, id string, mode Mode) int {
	t.Helper()
	rs, err := s.Recall(ctx, q, RecallOptions{Session: "f", K: 50, Mode: mode, NoTouch: true, Decay: Decay{Off: true}, ImportanceWeight: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.ID == id && (mode != ModeKeyword || r.Score.Keyword > 0) {
			return i + 1
		}
	}
	return 0
}

// TestNoMatchNoResult: a memory sharing nothing with the query (cosine <= 0, BM25 0) is not
// returned, whatever the mode or fusion, although K asks for more results than match.
func TestNoMatchNoResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, _ := newTestStoreOn(t, mk(t), Options{})
		mustRemember(t, s, "n", "zebra quagga okapi", RememberOptions{})
		mustRemember(t, s, "n", "violin cello viola", RememberOptions{})
		for _, o := range []RecallOptions{{Fusion: FusionRRF}, {Fusion: FusionWeighted}, {Mode: ModeVector}, {Mode: ModeKeyword}} {
			o.Session, o.K, o.NoTouch = "n", 5, true
			rs, err := s.Recall(ctx, "zebra", o)
			if err != nil || len(rs) != 1 || rs[0].Text != "zebra quagga okapi" {
				t.Fatalf("%+v: %v %q", o, err, texts(rs))
			}
			if rs, _ := s.Recall(ctx, "trombone", o); len(rs) != 0 {
				t.Fatalf("%+v: unrelated query returned %q", o, texts(rs))
			}
		}
	})
}

func TestFilterAndForget(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, clk := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1})
		a := mustRemember(t, s, "x", "cats sleep a lot", RememberOptions{Tags: []string{"pets", "cats"}, Source: "web"})
		mustRemember(t, s, "x", "dogs sleep less", RememberOptions{Tags: []string{"pets"}, Importance: 0.9})
		clk.Advance(day)
		mustRemember(t, s, "x", "sleep hygiene tips", RememberOptions{})
		cases := []struct {
			f    *Filter
			want int
		}{
			{Eq(FieldTag, "pets"), 2},
			{In(FieldTag, "cats", "none"), 1},
			{Range(FieldImportance, 0.8, 1), 1},
			{TimeRange(FieldCreated, clk.Now(), time.Time{}), 1},
			{Not(Exists(FieldTag)), 1},
			{Or(Eq(FieldSource, "web"), Range(FieldImportance, 0.85, math.Inf(1))), 2},
			{And(Eq(FieldTag, "pets"), Not(Eq(FieldSource, "web"))), 1},
			{Exists(FieldLastAccess), 0},
		}
		for i, c := range cases {
			rs, err := s.Recall(ctx, "sleep", RecallOptions{Session: "x", K: 10, Filter: c.f, NoTouch: true, Mode: ModeVector})
			if err != nil || len(rs) != c.want {
				t.Fatalf("case %d: %v, %d results, want %d", i, err, len(rs), c.want)
			}
			if n, _ := s.Count(ctx, And(Eq(FieldSession, "x"), c.f)); n != c.want {
				t.Fatalf("case %d: Count %d", i, n)
			}
		}
		if n, err := s.Forget(ctx, a.IDs[0], "missing"); err != nil || n != 1 {
			t.Fatalf("Forget: %d %v", n, err)
		}
		if n, err := s.ForgetWhere(ctx, Eq(FieldTag, "pets")); err != nil || n != 1 {
			t.Fatalf("ForgetWhere: %d %v", n, err)
		}
		if _, err := s.ForgetWhere(ctx, nil); !errors.Is(err, ErrInvalidFilter) {
			t.Fatalf("ForgetWhere(nil): %v", err)
		}
		if n, _ := s.Count(ctx, nil); n != 1 {
			t.Fatalf("%d memories left, want 1", n)
		}
	})
}

func TestBadInput(t *testing.T) {
	s, _ := newTestStore(t, Options{MaxTextBytes: 1000})
	mustRemember(t, s, "s", "a real memory", RememberOptions{})
	rememberCases := []struct {
		name, session, text string
		o                   RememberOptions
	}{
		{"empty", "s", "", RememberOptions{}},
		{"whitespace", "s", " \n\t\u3000 ", RememberOptions{}},
		{"too long", "s", strings.Repeat("x", 1001), RememberOptions{}},
		{"invalid utf8", "s", "abc\xff", RememberOptions{}},
		{"long session", strings.Repeat("s", MaxSessionBytes+1), "text", RememberOptions{}},
		{"importance", "s", "text", RememberOptions{Importance: 1.5}},
		{"nan importance", "s", "text", RememberOptions{Importance: math.NaN()}},
		{"empty tag", "s", "text", RememberOptions{Tags: []string{""}}},
		{"too many tags", "s", "text", RememberOptions{Tags: make([]string, MaxTags+1)}},
	}
	for _, c := range rememberCases {
		if _, err := s.Remember(ctx, c.session, c.text, c.o); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: got %v, want ErrInvalidInput", c.name, err)
		}
	}
	recallCases := []struct {
		name  string
		query string
		o     RecallOptions
	}{
		{"empty query", " ", RecallOptions{}},
		{"negative k", "q", RecallOptions{K: -1}},
		{"huge k", "q", RecallOptions{K: MaxK + 1}},
		{"negative weight", "q", RecallOptions{VectorWeight: -1}},
		{"nan weight", "q", RecallOptions{KeywordWeight: math.NaN()}},
		{"inf weight", "q", RecallOptions{KeywordWeight: math.Inf(1)}},
		{"decay rate", "q", RecallOptions{Decay: Decay{PerDay: 1}}},
		{"half-life", "q", RecallOptions{Decay: Decay{HalfLife: -time.Hour}}},
		{"mode", "q", RecallOptions{Mode: 7}},
		{"fusion", "q", RecallOptions{Fusion: 2}},
		{"source weight", "q", RecallOptions{SourceWeights: map[string]float64{"x": -2}}},
		{"importance weight", "q", RecallOptions{ImportanceWeight: 3}},
		{"candidates", "q", RecallOptions{K: 10, Candidates: 5}},
		{"rrf k", "q", RecallOptions{RRFK: -1}},
	}
	for _, c := range recallCases {
		if _, err := s.Recall(ctx, c.query, c.o); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: got %v, want ErrInvalidInput", c.name, err)
		}
	}
	if _, err := s.Recall(ctx, "q", RecallOptions{Filter: &Filter{Op: OpEq, Field: "nope", Values: []string{"x"}}}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("bad filter: %v", err)
	}
	if _, err := s.Recall(ctx, "q", RecallOptions{Filter: Not(nil)}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("Not(nil): %v", err)
	}
	rs, err := s.Recall(ctx, "real memory", RecallOptions{Session: "nobody"})
	if err != nil || len(rs) != 0 {
		t.Errorf("unknown session: %v %d", err, len(rs))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Remember(cctx, "s", "another memory", RememberOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Remember: %v", err)
	}
	if _, err := s.Recall(cctx, "real", RecallOptions{Session: "s"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Recall: %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 1 {
		t.Errorf("bad input changed the store: %d memories", n)
	}
	if _, err := New(ctx, NewMemBackend(), Options{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("New without embedder: %v", err)
	}
	s.Close()
	if _, err := s.Recall(ctx, "real", RecallOptions{Session: "s"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// failingBackend wraps a backend and fails writes on demand.
type failingBackend struct {
	Backend
	failDelete, failUpsert bool
}

type failingColl struct {
	Collection
	b *failingBackend
}

var errInjected = errors.New("injected failure")

func (f *failingBackend) Collection(ctx context.Context, name string) (Collection, error) {
	c, err := f.Backend.Collection(ctx, name)
	if err != nil {
		return nil, err
	}
	return failingColl{c, f}, nil
}

func (f *failingBackend) CreateCollection(ctx context.Context, spec CollectionSpec) (Collection, error) {
	c, err := f.Backend.CreateCollection(ctx, spec)
	if err != nil {
		return nil, err
	}
	return failingColl{c, f}, nil
}

func (c failingColl) Delete(ctx context.Context, ids []string) (int, error) {
	if c.b.failDelete {
		return 0, errInjected
	}
	return c.Collection.Delete(ctx, ids)
}

func (c failingColl) Upsert(ctx context.Context, ms []Memory) error {
	if c.b.failUpsert {
		return errInjected
	}
	return c.Collection.Upsert(ctx, ms)
}

func TestRememberWriteFailureChangesNothing(t *testing.T) {
	fb := &failingBackend{Backend: NewMemBackend()}
	s, err := New(ctx, fb, Options{Embedder: newHashEmbedder(64, "h")})
	if err != nil {
		t.Fatal(err)
	}
	fb.failUpsert = true
	if _, err := s.Remember(ctx, "s", "one\n\ntwo", RememberOptions{}); !errors.Is(err, errInjected) {
		t.Fatalf("got %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 0 {
		t.Fatalf("failed write left %d memories", n)
	}
}

func TestEmbedderBatching(t *testing.T) {
	e := newHashEmbedder(32, "h")
	s, _ := newTestStore(t, Options{Embedder: e, EmbedBatch: 2, DedupThreshold: -1})
	var paras []string
	for i := range 5 {
		paras = append(paras, fmt.Sprintf("paragraph number %d talks about topic %d", i, i*7))
	}
	before := e.calls.Load()
	r := mustRemember(t, s, "s", strings.Join(paras, "\n\n"), RememberOptions{})
	if len(r.IDs) != 5 {
		t.Fatalf("%d chunks, want 5", len(r.IDs))
	}
	if calls := e.calls.Load() - before; calls != 3 {
		t.Fatalf("%d embed calls for 5 chunks in batches of 2, want 3", calls)
	}
}
