package memorytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// Run runs the memory layer's behavioural suite against backends made by newBackend: every
// subtest calls it for a fresh, empty backend (and may call it more than once). The suite
// asserts orderings, counts and exact round trips, and scores only where the memory layer
// computes them from ranks, timestamps and weights, so a correct backend passes whatever its
// internal scoring precision.
func Run(t *testing.T, newBackend func(t *testing.T) memory.Backend) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T) memory.Backend)
	}{
		{"RememberRecall", testRememberRecall},
		{"DedupGolden", testDedupGolden},
		{"RecallTouchesResults", testRecallTouchesResults},
		{"NoCrossSessionLeakage", testNoCrossSessionLeakage},
		{"DecayOrdering", testDecayOrdering},
		{"OldExactMatchOutranksFreshUnrelated", testOldExactMatchOutranksFreshUnrelated},
		{"FusionAndWeights", testFusionAndWeights},
		{"NoMatchNoResult", testNoMatchNoResult},
		{"TieBreak", testTieBreak},
		{"FilterAndForget", testFilterAndForget},
		{"BadInput", testBadInput},
		{"RememberWriteFailureChangesNothing", testRememberWriteFailureChangesNothing},
		{"EmbedderBatching", testEmbedderBatching},
		{"CleanupArchiveRestoreRoundTrip", testCleanupArchiveRestoreRoundTrip},
		{"CleanupCrashBetweenArchiveAndDelete", testCleanupCrashBetweenArchiveAndDelete},
		{"RestoreAfterModelChangeReembeds", testRestoreAfterModelChangeReembeds},
		{"ModelLockAndReembed", testModelLockAndReembed},
		{"ShortTermOverflowSummarizes", testShortTermOverflowSummarizes},
		{"SummarizerFailureChangesNothing", testSummarizerFailureChangesNothing},
		{"Concurrent", testConcurrent},
		{"WorkingMemory", testWorkingMemory},
		{"SessionsScanImportStats", testSessionsScanImportStats},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newBackend) })
	}
	for _, tc := range apiCases { // history.go
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newBackend) })
	}
	for _, tc := range currentCases { // current.go
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newBackend) })
	}
}

func testRememberRecall(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{})
	Remember(t, s, "u1", "The user's dog is called Biscuit.", memory.RememberOptions{Source: "chat", Tags: []string{"pets"}})
	Remember(t, s, "u1", "The user works as a nurse in Lyon.", memory.RememberOptions{})
	Remember(t, s, "u1", "Project deadline is the third of March.", memory.RememberOptions{})
	for _, mode := range []memory.Mode{memory.ModeHybrid, memory.ModeVector, memory.ModeKeyword} {
		rs, err := s.Recall(ctx, "what is the dog called", memory.RecallOptions{Session: "u1", Mode: mode, NoTouch: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || !strings.Contains(rs[0].Text, "Biscuit") {
			t.Fatalf("mode %d: got %q", mode, Texts(rs))
		}
		if rs[0].Source != "chat" || !slices.Equal(rs[0].Tags, []string{"pets"}) || rs[0].Vector != nil {
			t.Fatalf("mode %d: metadata %+v", mode, rs[0].Memory)
		}
		sc := rs[0].Score
		if sc.Final != sc.Fused*sc.Decay*sc.Weight {
			t.Fatalf("score parts do not multiply: %+v", sc)
		}
	}
}

func testRecallTouchesResults(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{})
	r := Remember(t, s, "a", "apples are red", memory.RememberOptions{})
	Remember(t, s, "a", "bananas are yellow", memory.RememberOptions{})
	clk.Advance(time.Hour)
	rs, err := s.Recall(ctx, "apples", memory.RecallOptions{Session: "a", K: 1})
	if err != nil || len(rs) != 1 || rs[0].ID != r.IDs[0] {
		t.Fatalf("recall: %v %q", err, Texts(rs))
	}
	if rs[0].AccessCount != 0 {
		t.Fatalf("result should show the access count before this recall, got %d", rs[0].AccessCount)
	}
	ms, _ := s.Get(ctx, r.IDs[0])
	if ms[0].AccessCount != 1 || !ms[0].LastAccess.Equal(clk.Now()) {
		t.Fatalf("access not recorded: count %d last %v", ms[0].AccessCount, ms[0].LastAccess)
	}
	if _, err := s.Recall(ctx, "apples", memory.RecallOptions{Session: "a", K: 1, NoTouch: true}); err != nil {
		t.Fatal(err)
	}
	ms, _ = s.Get(ctx, r.IDs[0])
	if ms[0].AccessCount != 1 {
		t.Fatalf("NoTouch recorded an access")
	}
}

// TestNoCrossSessionLeakage: over random sessions, memories and queries, a session-scoped
// recall only ever returns that session's memories, in every mode and fusion.
func testNoCrossSessionLeakage(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau 苹果 香蕉 北京 上海 咖啡")
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	s, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	sessions := []string{"", "s1", "s2", "s3", "会话"}
	count := map[string]int{}
	for range 150 {
		sess := sessions[rng.IntN(len(sessions)-1)] // the last session stays empty
		Remember(t, s, sess, phrase(3+rng.IntN(6)), memory.RememberOptions{})
		count[sess]++
	}
	for q := range 60 {
		query := phrase(1 + rng.IntN(3))
		sess := sessions[rng.IntN(len(sessions))]
		o := memory.RecallOptions{Session: sess, K: 1 + rng.IntN(20), Mode: memory.Mode(q % 3), Fusion: memory.Fusion(q / 3 % 2), NoTouch: q%2 == 0}
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
	rs, err := s.Recall(ctx, phrase(2), memory.RecallOptions{AllSessions: true, K: 100, Mode: memory.ModeVector})
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
}

func testDecayOrdering(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	start := clk.Now()
	old := Remember(t, s, "d", "meeting notes about the budget", memory.RememberOptions{Time: start.Add(-10 * day)})
	fresh := Remember(t, s, "d", "meeting notes about the budget", memory.RememberOptions{Time: start.Add(-1 * day)})
	o := memory.RecallOptions{Session: "d", Mode: memory.ModeKeyword, NoTouch: true}

	rs, err := s.Recall(ctx, "budget meeting", o)
	if err != nil || len(rs) != 2 {
		t.Fatalf("%v %d", err, len(rs))
	}
	if rs[0].ID != fresh.IDs[0] || rs[1].ID != old.IDs[0] {
		t.Fatalf("newer memory should rank first")
	}
	// The default: above a floor of 0.5, a fast part (0.9 per day) and a slow part (a fifth,
	// halving every 365 days).
	slow := func(days float64) float64 { return math.Exp2(-days / 365) }
	if want := 0.5 + 0.5*(0.8*math.Pow(0.9, 10)+0.2*slow(10)); math.Abs(rs[1].Score.Decay-want) > 1e-12 {
		t.Fatalf("decay after 10 days = %v, want %v", rs[1].Score.Decay, want)
	}
	if rs[0].Score.Fused != rs[1].Score.Fused || rs[0].Score.Fused != 1 {
		t.Fatalf("identical texts should fuse equally, at 1 in keyword mode: %+v %+v", rs[0].Score, rs[1].Score)
	}
	// No floor and no slow part: the seed's pure exponential decay.
	o.Decay = memory.Decay{Floor: -1, Slow: -1}
	rs, _ = s.Recall(ctx, "budget meeting", o)
	if want := math.Pow(0.9, 10); math.Abs(rs[1].Score.Decay-want) > 1e-12 {
		t.Fatalf("decay after 10 days without a floor = %v, want %v", rs[1].Score.Decay, want)
	}
	// A configurable rate and floor; the factor never goes below the floor.
	o.Decay = memory.Decay{PerDay: 0.5, Floor: 0.2, Slow: -1}
	rs, _ = s.Recall(ctx, "budget meeting", o)
	if want := 0.2 + 0.8*math.Pow(0.5, 10); math.Abs(rs[1].Score.Decay-want) > 1e-12 {
		t.Fatalf("decay 0.5/day floor 0.2 after 10 days = %v, want %v", rs[1].Score.Decay, want)
	}
	o.Decay = memory.Decay{HalfLife: 5 * day, Floor: -1, Slow: -1}
	rs, _ = s.Recall(ctx, "budget meeting", o)
	if math.Abs(rs[1].Score.Decay-0.25) > 1e-12 || math.Abs(rs[0].Score.Decay-math.Exp2(-0.2)) > 1e-12 {
		t.Fatalf("half-life decay: %v %v", rs[0].Score.Decay, rs[1].Score.Decay)
	}
	// A configurable slow part.
	o.Decay = memory.Decay{Floor: -1, Slow: 1, SlowHalfLife: 10 * day}
	rs, _ = s.Recall(ctx, "budget meeting", o)
	if math.Abs(rs[1].Score.Decay-0.5) > 1e-12 {
		t.Fatalf("slow decay with a half-life of 10 days after 10 days = %v, want 0.5", rs[1].Score.Decay)
	}

	// Recalling the old memory refreshes it under memory.DecayLastAccess, not by default (age
	// from the last write).
	if _, err := s.Recall(ctx, "budget", memory.RecallOptions{Session: "d", Filter: memory.Eq(memory.FieldSession, "d"), K: 1, Decay: memory.Decay{Off: true}, Mode: memory.ModeKeyword}); err != nil {
		t.Fatal(err)
	}
	// Ties (memory.Decay off) break by ID; touch whichever came first, then make sure it is the old one.
	ms, _ := s.Get(ctx, old.IDs[0], fresh.IDs[0])
	touched := ms[0]
	if ms[1].AccessCount > 0 {
		touched = ms[1]
	}
	clk.Advance(2 * day)
	rs, _ = s.Recall(ctx, "budget meeting", memory.RecallOptions{Session: "d", Mode: memory.ModeKeyword, NoTouch: true, Decay: memory.Decay{Basis: memory.DecayLastAccess, Floor: -1, Slow: -1}})
	if rs[0].ID != touched.ID || math.Abs(rs[0].Score.Decay-0.81) > 1e-12 {
		t.Fatalf("last-access basis: first %s decay %v, want %s decay 0.81", rs[0].ID, rs[0].Score.Decay, touched.ID)
	}
	rs, _ = s.Recall(ctx, "budget meeting", memory.RecallOptions{Session: "d", Mode: memory.ModeKeyword, NoTouch: true})
	if rs[0].ID != fresh.IDs[0] || math.Abs(rs[0].Score.Decay-(0.5+0.5*(0.8*math.Pow(0.9, 3)+0.2*slow(3)))) > 1e-12 {
		t.Fatalf("default (written) basis: first %s decay %v", rs[0].ID, rs[0].Score.Decay)
	}
}

// testOldExactMatchOutranksFreshUnrelated is the ranking policy against burying strong matches
// (docs of memory.Decay): with the store defaults, a 250-day-old memory that answers the query
// ranks above fresh memories that merely share a word with it, and every score is in [0, 1].
func testOldExactMatchOutranksFreshUnrelated(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1, Embedder: emb,
		VectorWeight: memory.LexicalVectorWeight, KeywordWeight: memory.LexicalKeywordWeight})
	now := clk.Now()
	old := Remember(t, s, "r", "Ran the marathon in Porto in four hours", memory.RememberOptions{Time: now.Add(-250 * day)})
	for i, text := range []string{
		"Booked a dentist appointment for Tuesday",
		"Bought running shoes for the gym",
		"The team lunch is at noon on Friday",
		"Porto wine was served at the wedding",
	} {
		Remember(t, s, "r", text, memory.RememberOptions{Time: now.Add(-time.Duration(i) * time.Hour)})
	}
	for _, o := range []memory.RecallOptions{{}, {Mode: memory.ModeKeyword}, {Mode: memory.ModeVector}, {Fusion: memory.FusionRRF}} {
		o.Session, o.K, o.NoTouch = "r", 3, true
		rs, err := s.Recall(ctx, "marathon Porto", o)
		if err != nil || len(rs) == 0 {
			t.Fatalf("%+v: %v %q", o, err, Texts(rs))
		}
		// Above the old exact match, at most a fresh memory sharing one of its two words, and only
		// where the cosine alone ranks (it gives that memory more than half the exact match's
		// relevance, and decay can at most halve a score) or RRF (second in both lists is almost
		// as good as first); with the default fusion and in keyword mode it is first.
		for _, r := range rs {
			if r.ID == old.IDs[0] {
				break
			}
			if (o.Mode != memory.ModeVector && o.Fusion != memory.FusionRRF) || !strings.Contains(r.Text, "Porto") {
				t.Fatalf("%+v: the old exact match is not first: %q", o, Texts(rs))
			}
		}
		if !slices.ContainsFunc(rs, func(r memory.Result) bool { return r.ID == old.IDs[0] }) {
			t.Fatalf("%+v: the old exact match is missing: %q", o, Texts(rs))
		}
		for _, r := range rs {
			sc := r.Score
			for _, x := range []float64{sc.Fused, sc.Decay, sc.Final} {
				if !(x >= 0 && x <= 1) {
					t.Fatalf("%+v: score outside [0, 1]: %+v", o, sc)
				}
			}
		}
		if o.Fusion == memory.FusionRRF {
			continue // RRF scores ranks, not relevance
		}
		// The minimum score means something: the exact match keeps more than 0.35 after 250 days,
		// memories sharing no word with the query score below 0.1.
		if o.Mode != memory.ModeVector && rs[0].Score.Final < 0.35 {
			t.Fatalf("%+v: old exact match scores %+v", o, rs[0].Score)
		}
		for _, r := range rs[1:] {
			if !strings.Contains(r.Text, "Porto") && r.Score.Final >= 0.1 {
				t.Fatalf("%+v: %q shares no word with the query and scores %+v", o, r.Text, r.Score)
			}
		}
	}
	// Without the floor, the old memory is buried, as the seed's pure exponential did.
	rs, _ := s.Recall(ctx, "marathon Porto", memory.RecallOptions{Session: "r", K: 3, NoTouch: true, Decay: memory.Decay{Floor: -1}})
	if len(rs) > 0 && rs[0].ID == old.IDs[0] {
		t.Fatalf("without a floor, 0.9^250 should bury the old match: %q", Texts(rs))
	}
}

func testFusionAndWeights(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	Remember(t, s, "f", "rust borrow checker lifetimes", memory.RememberOptions{Source: "docs", Importance: 1})
	Remember(t, s, "f", "go garbage collector pauses", memory.RememberOptions{Source: "chat", Importance: 0.1})
	Remember(t, s, "f", "borrow a book from the library", memory.RememberOptions{Source: "chat"})
	rs, err := s.Recall(ctx, "borrow checker", memory.RecallOptions{Session: "f", K: 3, NoTouch: true, Fusion: memory.FusionRRF,
		VectorWeight: 1, KeywordWeight: 1, Decay: memory.Decay{Off: true}, ImportanceWeight: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		want := 0.0
		vr, kr := rankIn(t, s, "borrow checker", r.ID, memory.ModeVector), rankIn(t, s, "borrow checker", r.ID, memory.ModeKeyword)
		if vr > 0 {
			want += 1 / (60 + float64(vr))
		}
		if kr > 0 {
			want += 1 / (60 + float64(kr))
		}
		want *= 61.0 / 2 // scaled so that first in both lists is 1
		if math.Abs(r.Score.Fused-want) > 1e-12 || r.Score.Weight != 1 || r.Score.Final != r.Score.Fused {
			t.Fatalf("RRF of %q: %+v, want fused %v", r.Text, r.Score, want)
		}
	}
	rs, _ = s.Recall(ctx, "borrow checker", memory.RecallOptions{Session: "f", K: 3, NoTouch: true, Fusion: memory.FusionWeighted,
		VectorWeight: 0.3, KeywordWeight: 0.7, Decay: memory.Decay{Off: true}, ImportanceWeight: -1})
	top := rs[0]
	if top.Score.Keyword == 0 || top.Score.KeywordNorm != 1 || math.Abs(top.Score.Fused-(0.3*top.Score.Vector+0.7*1)) > 1e-9 {
		t.Fatalf("weighted fusion of the best keyword hit: %+v", top.Score)
	}
	// keyword_norm is BM25 over the best: in [0, 1] for every result, whatever raw BM25 is.
	for _, r := range rs {
		if want := r.Score.Keyword / top.Score.Keyword; r.Score.KeywordNorm < 0 || r.Score.KeywordNorm > 1 || math.Abs(r.Score.KeywordNorm-want) > 1e-12 {
			t.Fatalf("keyword_norm of %q: %+v, want %v", r.Text, r.Score, want)
		}
	}
	// The store's default weights apply when a recall sets none.
	s2, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1, VectorWeight: 0.2, KeywordWeight: 0.8})
	Remember(t, s2, "f", "rust borrow checker lifetimes", memory.RememberOptions{})
	Remember(t, s2, "f", "borrow a book from the library", memory.RememberOptions{})
	rs2, err := s2.Recall(ctx, "borrow checker", memory.RecallOptions{Session: "f", NoTouch: true, Decay: memory.Decay{Off: true}})
	if err != nil || len(rs2) == 0 {
		t.Fatal(err)
	}
	if top := rs2[0].Score; math.Abs(top.Fused-(0.2*top.Vector+0.8)) > 1e-9 {
		t.Fatalf("store default weights 0.2/0.8 not applied: %+v", top)
	}
	if _, err := memory.New(ctx, newBackend(t), memory.Options{Embedder: NewHashEmbedder(8, "x"), VectorWeight: -1}); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("negative store weight: %v", err)
	}
	// Source weights and importance.
	rs, _ = s.Recall(ctx, "borrow", memory.RecallOptions{Session: "f", K: 3, NoTouch: true, Decay: memory.Decay{Off: true},
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
		t.Fatalf("zero-weighted source ranked first: %q", Texts(rs))
	}
	rs, _ = s.Recall(ctx, "borrow", memory.RecallOptions{Session: "f", K: 3, NoTouch: true, MinScore: 1e-9,
		SourceWeights: map[string]float64{"chat": 0}})
	for _, r := range rs {
		if r.Source == "chat" {
			t.Fatalf("MinScore kept a zero-score result")
		}
	}
}

func rankIn(t *testing.T, s *memory.Store, q, id string, mode memory.Mode) int {
	t.Helper()
	rs, err := s.Recall(ctx, q, memory.RecallOptions{Session: "f", K: 50, Mode: mode, NoTouch: true, Decay: memory.Decay{Off: true}, ImportanceWeight: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.ID == id && (mode != memory.ModeKeyword || r.Score.Keyword > 0) {
			return i + 1
		}
	}
	return 0
}

// TestNoMatchNoResult: a memory sharing nothing with the query (cosine <= 0, BM25 0) is not
// returned, whatever the mode or fusion, although K asks for more results than match.
func testNoMatchNoResult(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{})
	Remember(t, s, "n", "zebra quagga okapi", memory.RememberOptions{})
	Remember(t, s, "n", "violin cello viola", memory.RememberOptions{})
	for _, o := range []memory.RecallOptions{{Fusion: memory.FusionRRF}, {Fusion: memory.FusionWeighted}, {Mode: memory.ModeVector}, {Mode: memory.ModeKeyword}} {
		o.Session, o.K, o.NoTouch = "n", 5, true
		rs, err := s.Recall(ctx, "zebra", o)
		if err != nil || len(rs) != 1 || rs[0].Text != "zebra quagga okapi" {
			t.Fatalf("%+v: %v %q", o, err, Texts(rs))
		}
		if rs, _ := s.Recall(ctx, "trombone", o); len(rs) != 0 {
			t.Fatalf("%+v: unrelated query returned %q", o, Texts(rs))
		}
	}
}

func testFilterAndForget(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	a := Remember(t, s, "x", "cats sleep a lot", memory.RememberOptions{Tags: []string{"pets", "cats"}, Source: "web"})
	Remember(t, s, "x", "dogs sleep less", memory.RememberOptions{Tags: []string{"pets"}, Importance: 0.9})
	clk.Advance(day)
	Remember(t, s, "x", "sleep hygiene tips", memory.RememberOptions{})
	cases := []struct {
		f    *memory.Filter
		want int
	}{
		{memory.Eq(memory.FieldTag, "pets"), 2},
		{memory.In(memory.FieldTag, "cats", "none"), 1},
		{memory.Range(memory.FieldImportance, 0.8, 1), 1},
		{memory.TimeRange(memory.FieldCreated, clk.Now(), time.Time{}), 1},
		{memory.Not(memory.Exists(memory.FieldTag)), 1},
		{memory.Or(memory.Eq(memory.FieldSource, "web"), memory.Range(memory.FieldImportance, 0.85, math.Inf(1))), 2},
		{memory.And(memory.Eq(memory.FieldTag, "pets"), memory.Not(memory.Eq(memory.FieldSource, "web"))), 1},
		{memory.Exists(memory.FieldLastAccess), 0},
	}
	for i, c := range cases {
		rs, err := s.Recall(ctx, "sleep", memory.RecallOptions{Session: "x", K: 10, Filter: c.f, NoTouch: true, Mode: memory.ModeVector})
		if err != nil || len(rs) != c.want {
			t.Fatalf("case %d: %v, %d results, want %d", i, err, len(rs), c.want)
		}
		if n, _ := s.Count(ctx, memory.And(memory.Eq(memory.FieldSession, "x"), c.f)); n != c.want {
			t.Fatalf("case %d: Count %d", i, n)
		}
	}
	if n, err := s.Forget(ctx, a.IDs[0], "missing"); err != nil || n != 1 {
		t.Fatalf("Forget: %d %v", n, err)
	}
	if n, err := s.ForgetWhere(ctx, memory.Eq(memory.FieldTag, "pets")); err != nil || n != 1 {
		t.Fatalf("ForgetWhere: %d %v", n, err)
	}
	if _, err := s.ForgetWhere(ctx, nil); !errors.Is(err, memory.ErrInvalidFilter) {
		t.Fatalf("ForgetWhere(nil): %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 1 {
		t.Fatalf("%d memories left, want 1", n)
	}
}

func testBadInput(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{MaxTextBytes: 1000})
	Remember(t, s, "s", "a real memory", memory.RememberOptions{})
	rememberCases := []struct {
		name, session, text string
		o                   memory.RememberOptions
	}{
		{"empty", "s", "", memory.RememberOptions{}},
		{"whitespace", "s", " \n\t\u3000 ", memory.RememberOptions{}},
		{"too long", "s", strings.Repeat("x", 1001), memory.RememberOptions{}},
		{"invalid utf8", "s", "abc\xff", memory.RememberOptions{}},
		{"long session", strings.Repeat("s", memory.MaxSessionBytes+1), "text", memory.RememberOptions{}},
		{"importance", "s", "text", memory.RememberOptions{Importance: 1.5}},
		{"nan importance", "s", "text", memory.RememberOptions{Importance: math.NaN()}},
		{"empty tag", "s", "text", memory.RememberOptions{Tags: []string{""}}},
		{"too many tags", "s", "text", memory.RememberOptions{Tags: make([]string, memory.MaxTags+1)}},
	}
	for _, c := range rememberCases {
		if _, err := s.Remember(ctx, c.session, c.text, c.o); !errors.Is(err, memory.ErrInvalidInput) {
			t.Errorf("%s: got %v, want memory.ErrInvalidInput", c.name, err)
		}
	}
	recallCases := []struct {
		name  string
		query string
		o     memory.RecallOptions
	}{
		{"empty query", " ", memory.RecallOptions{}},
		{"negative k", "q", memory.RecallOptions{K: -1}},
		{"huge k", "q", memory.RecallOptions{K: memory.MaxK + 1}},
		{"negative weight", "q", memory.RecallOptions{VectorWeight: -1}},
		{"nan weight", "q", memory.RecallOptions{KeywordWeight: math.NaN()}},
		{"inf weight", "q", memory.RecallOptions{KeywordWeight: math.Inf(1)}},
		{"decay rate", "q", memory.RecallOptions{Decay: memory.Decay{PerDay: 1}}},
		{"half-life", "q", memory.RecallOptions{Decay: memory.Decay{HalfLife: -time.Hour}}},
		{"mode", "q", memory.RecallOptions{Mode: 7}},
		{"fusion", "q", memory.RecallOptions{Fusion: 2}},
		{"source weight", "q", memory.RecallOptions{SourceWeights: map[string]float64{"x": -2}}},
		{"importance weight", "q", memory.RecallOptions{ImportanceWeight: 3}},
		{"candidates", "q", memory.RecallOptions{K: 10, Candidates: 5}},
		{"rrf k", "q", memory.RecallOptions{RRFK: -1}},
	}
	for _, c := range recallCases {
		if _, err := s.Recall(ctx, c.query, c.o); !errors.Is(err, memory.ErrInvalidInput) {
			t.Errorf("%s: got %v, want memory.ErrInvalidInput", c.name, err)
		}
	}
	if _, err := s.Recall(ctx, "q", memory.RecallOptions{Filter: &memory.Filter{Op: memory.OpEq, Field: "nope", Values: []string{"x"}}}); !errors.Is(err, memory.ErrInvalidFilter) {
		t.Errorf("bad filter: %v", err)
	}
	if _, err := s.Recall(ctx, "q", memory.RecallOptions{Filter: memory.Not(nil)}); !errors.Is(err, memory.ErrInvalidFilter) {
		t.Errorf("memory.Not(nil): %v", err)
	}
	rs, err := s.Recall(ctx, "real memory", memory.RecallOptions{Session: "nobody"})
	if err != nil || len(rs) != 0 {
		t.Errorf("unknown session: %v %d", err, len(rs))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Remember(cctx, "s", "another memory", memory.RememberOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Remember: %v", err)
	}
	if _, err := s.Recall(cctx, "real", memory.RecallOptions{Session: "s"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Recall: %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 1 {
		t.Errorf("bad input changed the store: %d memories", n)
	}
	if _, err := memory.New(ctx, newBackend(t), memory.Options{}); !errors.Is(err, memory.ErrInvalidInput) {
		t.Errorf("memory.New without embedder: %v", err)
	}
	s.Close()
	if _, err := s.Recall(ctx, "real", memory.RecallOptions{Session: "s"}); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func testRememberWriteFailureChangesNothing(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	fb := &FailingBackend{Backend: newBackend(t)}
	s, err := memory.New(ctx, fb, memory.Options{Embedder: NewHashEmbedder(64, "h")})
	if err != nil {
		t.Fatal(err)
	}
	fb.FailUpsert = true
	if _, err := s.Remember(ctx, "s", "one\n\ntwo", memory.RememberOptions{}); !errors.Is(err, ErrInjected) {
		t.Fatalf("got %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 0 {
		t.Fatalf("failed write left %d memories", n)
	}
}

func testEmbedderBatching(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	e := NewHashEmbedder(32, "h")
	s, _ := NewStore(t, newBackend(t), memory.Options{Embedder: e, EmbedBatch: 2, DedupThreshold: -1})
	var paras []string
	for i := range 5 {
		paras = append(paras, fmt.Sprintf("paragraph number %d talks about topic %d", i, i*7))
	}
	before := e.Calls()
	r := Remember(t, s, "s", strings.Join(paras, "\n\n"), memory.RememberOptions{})
	if len(r.IDs) != 5 {
		t.Fatalf("%d chunks, want 5", len(r.IDs))
	}
	if calls := e.Calls() - before; calls != 3 {
		t.Fatalf("%d embed calls for 5 chunks in batches of 2, want 3", calls)
	}
}

// seedCleanup writes memories of various ages, recalls one old one, and returns the IDs that
// the default policy must select.
func seedCleanup(t *testing.T, s *memory.Store, clk *Clock) (stale []string) {
	t.Helper()
	now := clk.Now()
	n := 600 // more than two archive parts
	if testing.Short() {
		n = 240
	}
	for i := range n {
		age := time.Duration(i%3) * 100 * day // 0, 100, 200 days
		r := Remember(t, s, fmt.Sprintf("s%d", i%4), fmt.Sprintf("memory %d about topic %d", i, i%17),
			memory.RememberOptions{Time: now.Add(-age), Tags: []string{"t"}, Source: "src", Importance: 0.25})
		if age > 180*day {
			stale = append(stale, r.IDs[0])
		}
	}
	// Recalled memories are kept even when old.
	rs, err := s.Recall(context.Background(), "memory 2 about topic 2", memory.RecallOptions{Session: "s2", K: 3, Decay: memory.Decay{Off: true}})
	if err != nil || len(rs) == 0 {
		t.Fatal(err)
	}
	for _, r := range rs {
		stale = slices.DeleteFunc(stale, func(id string) bool { return id == r.ID })
	}
	clk.Advance(time.Hour)
	return stale
}

func testCleanupArchiveRestoreRoundTrip(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	// 1024-d vectors: 600 memories need several parts to fit the engine's memory.KV value limit.
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1, Embedder: NewHashEmbedder(1024, "h1024")})
	stale := seedCleanup(t, s, clk)
	before := Canonical(t, All(t, s))
	total := len(All(t, s))

	dry, err := s.Cleanup(ctx, memory.CleanupPolicy{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(dry.Memories))
	for i, m := range dry.Memories {
		got[i] = m.ID
	}
	slices.Sort(got)
	slices.Sort(stale)
	if !slices.Equal(got, stale) || dry.Batch != "" {
		t.Fatalf("dry run listed %d memories, want %d", len(got), len(stale))
	}
	if !bytes.Equal(Canonical(t, All(t, s)), before) {
		t.Fatal("dry run changed the store")
	}

	res, err := s.Cleanup(ctx, memory.CleanupPolicy{})
	if err != nil || len(res.Memories) != len(stale) || res.Batch == "" {
		t.Fatalf("cleanup: %v, %d", err, len(res.Memories))
	}
	if n, _ := s.Count(ctx, nil); n != total-len(stale) {
		t.Fatalf("%d live after cleanup, want %d", n, total-len(stale))
	}
	arch, err := s.Archived(ctx)
	if err != nil || len(arch) != len(stale) {
		t.Fatalf("archive lists %d, want %d (%v)", len(arch), len(stale), err)
	}
	// Cleanup again: nothing left to move.
	if res, _ := s.Cleanup(ctx, memory.CleanupPolicy{}); len(res.Memories) != 0 {
		t.Fatalf("second cleanup moved %d", len(res.Memories))
	}

	// Restore one, then the rest; twice to prove idempotence.
	if n, err := s.Restore(ctx, stale[0]); err != nil || n != 1 {
		t.Fatalf("restore one: %d %v", n, err)
	}
	if n, err := s.Restore(ctx); err != nil || n != len(stale)-1 {
		t.Fatalf("restore all: %d %v", n, err)
	}
	if n, err := s.Restore(ctx); err != nil || n != 0 {
		t.Fatalf("restore again: %d %v", n, err)
	}
	if after := Canonical(t, All(t, s)); !bytes.Equal(after, before) {
		t.Fatal("restored memories differ from the originals")
	}
	if arch, _ := s.Archived(ctx); len(arch) != 0 {
		t.Fatalf("archive still lists %d", len(arch))
	}
}

// TestCleanupCrashBetweenArchiveAndDelete: the delete after a durable archive fails (as a crash
// there would leave it); nothing is lost, and cleanup/restore converge afterwards.
func testCleanupCrashBetweenArchiveAndDelete(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	fb := &FailingBackend{Backend: newBackend(t)}
	clk := NewClock()
	s, err := memory.New(ctx, fb, memory.Options{Embedder: NewHashEmbedder(64, "h"), Clock: clk.Now, DedupThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	stale := seedCleanup(t, s, clk)
	before := Canonical(t, All(t, s))
	fb.FailDelete = true
	if _, err := s.Cleanup(ctx, memory.CleanupPolicy{}); !errors.Is(err, ErrInjected) {
		t.Fatalf("cleanup with failing delete: %v", err)
	}
	if !bytes.Equal(Canonical(t, All(t, s)), before) {
		t.Fatal("live memories changed although the delete failed")
	}
	if arch, _ := s.Archived(ctx); len(arch) != len(stale) {
		t.Fatalf("archive holds %d, want %d", len(arch), len(stale))
	}
	fb.FailDelete = false
	// Cleanup again archives them a second time and deletes them; restore keeps one copy each.
	if res, err := s.Cleanup(ctx, memory.CleanupPolicy{}); err != nil || len(res.Memories) != len(stale) {
		t.Fatalf("cleanup after recovery: %v %d", err, len(res.Memories))
	}
	if n, err := s.Restore(ctx); err != nil || n != len(stale) {
		t.Fatalf("restore: %d %v", n, err)
	}
	if !bytes.Equal(Canonical(t, All(t, s)), before) {
		t.Fatal("memories lost or changed across the failed cleanup")
	}
	if arch, _ := s.Archived(ctx); len(arch) != 0 {
		t.Fatalf("archive still lists %d", len(arch))
	}
}

func testRestoreAfterModelChangeReembeds(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	seedCleanup(t, s, clk)
	if _, err := s.Cleanup(ctx, memory.CleanupPolicy{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reembed(ctx, NewHashEmbedder(48, "other"), nil); err != nil {
		t.Fatal(err)
	}
	n, err := s.Restore(ctx)
	if err != nil || n == 0 {
		t.Fatalf("restore: %d %v", n, err)
	}
	for _, m := range All(t, s) {
		if len(m.Vector) != 48 {
			t.Fatalf("memory %s has a %d-d vector after restore into a 48-d model", m.ID, len(m.Vector))
		}
	}
}

func testModelLockAndReembed(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	b := newBackend(t)
	clk := NewClock()
	e1 := NewHashEmbedder(64, "model-A")
	s, err := memory.New(ctx, b, memory.Options{Embedder: e1, Clock: clk.Now, DedupThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 700 {
		r := Remember(t, s, "s", fmt.Sprintf("fact number %d about subject %d", i, i%13), memory.RememberOptions{Tags: []string{"k"}})
		ids = append(ids, r.IDs[0])
	}
	if _, err := s.Recall(ctx, "fact number 3", memory.RecallOptions{Session: "s"}); err != nil {
		t.Fatal(err)
	}

	_, err = memory.New(ctx, b, memory.Options{Embedder: NewHashEmbedder(32, "model-B")})
	var mm *memory.ModelMismatchError
	if !errors.Is(err, memory.ErrModelMismatch) || !errors.As(err, &mm) || mm.Stored != "model-A" || mm.Embedder != "model-B" ||
		!strings.Contains(err.Error(), "model-A") || !strings.Contains(err.Error(), "model-B") {
		t.Fatalf("open with another model: %v", err)
	}

	// A Reembed that dies part way (the embedder fails in the third batch of memory.ReembedBatch) ...
	e2 := NewHashEmbedder(32, "model-B")
	e2.FailAfter = 2 * memory.ReembedBatch / memory.DefaultEmbedBatch
	if err := s.Reembed(ctx, e2, nil); !errors.Is(err, ErrEmbedFailed) {
		t.Fatalf("failing reembed: %v", err)
	}
	if s.Embedder() != e1 {
		t.Fatal("failed reembed switched the model")
	}
	if _, err := s.Recall(ctx, "fact", memory.RecallOptions{Session: "s"}); err != nil {
		t.Fatalf("recall during an unfinished reembed: %v", err)
	}
	before := All(t, s) // with the access statistics of that recall
	// ... resumes from a fresh store on the same backend, embedding only what is missing.
	s2, err := memory.New(ctx, b, memory.Options{Embedder: e1, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e3 := NewHashEmbedder(32, "model-B")
	var last [2]int
	if err := s2.Reembed(ctx, e3, func(done, total int) { last = [2]int{done, total} }); err != nil {
		t.Fatal(err)
	}
	if last != [2]int{700, 700} {
		t.Fatalf("progress ended at %v", last)
	}
	// Two batches were done before the failure; only the rest is embedded again.
	if calls, want := e3.Calls(), int64((700-2*memory.ReembedBatch+memory.DefaultEmbedBatch-1)/memory.DefaultEmbedBatch); calls != want {
		t.Fatalf("resumed reembed made %d embed calls, want %d", calls, want)
	}
	after := All(t, s2)
	if len(after) != len(before) {
		t.Fatalf("%d memories after reembed, want %d", len(after), len(before))
	}
	for i := range before {
		before[i].Vector = nil
	}
	for i := range after {
		if len(after[i].Vector) != 32 {
			t.Fatalf("vector dim %d", len(after[i].Vector))
		}
		after[i].Vector = nil
	}
	if !bytes.Equal(Canonical(t, before), Canonical(t, after)) {
		t.Fatal("reembed changed memories beyond their vectors")
	}
	// The switch is durable: a new store needs model B now, and the old collection is gone.
	if _, err := memory.New(ctx, b, memory.Options{Embedder: e1}); !errors.Is(err, memory.ErrModelMismatch) {
		t.Fatalf("old model after switch: %v", err)
	}
	s3, err := memory.New(ctx, b, memory.Options{Embedder: NewHashEmbedder(32, "model-B")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection(ctx, memory.DefaultCollection); !errors.Is(err, memory.ErrNoCollection) {
		t.Fatalf("old collection still there: %v", err)
	}
	rs, err := s3.Recall(ctx, "fact number 5 about subject 5", memory.RecallOptions{Session: "s", K: 1, Mode: memory.ModeVector})
	if err != nil || len(rs) != 1 || rs[0].ID != ids[5] {
		t.Fatalf("recall with the new model: %v %q", err, Texts(rs))
	}
}

func testShortTermOverflowSummarizes(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{ShortTermTokens: 60})
	var conv memory.Conversation
	var err error
	for i := range 12 {
		clk.Advance(time.Minute)
		role := []string{"user", "assistant"}[i%2]
		conv, err = s.AddTurn(ctx, "chat1", memory.Turn{Role: role, Text: fmt.Sprintf("message number %d with some words", i)})
		if err != nil {
			t.Fatal(err)
		}
		if conv.Tokens() > 60 {
			t.Fatalf("after turn %d the buffer holds %d tokens", i, conv.Tokens())
		}
	}
	if conv.Compressed == 0 || conv.Summary == "" {
		t.Fatal("no turn was compressed")
	}
	if conv.Compressed+len(conv.Turns) != 12 {
		t.Fatalf("%d compressed + %d recent != 12", conv.Compressed, len(conv.Turns))
	}
	last := conv.Turns[len(conv.Turns)-1]
	if last.Text != "message number 11 with some words" || !last.Time.Equal(clk.Now()) {
		t.Fatalf("newest turn %+v", last)
	}
	// The extractive summary keeps every compressed turn's number (its one fact), the newest
	// compressed turn's included, merged into a few lines and shortened to fit.
	words := strings.FieldsFunc(conv.Summary, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i := range conv.Compressed {
		if !slices.Contains(words, fmt.Sprint(i)) {
			t.Fatalf("summary %q of %d compressed turns lost turn %d", conv.Summary, conv.Compressed, i)
		}
	}
	if memory.EstimateTokens(conv.Summary) > 30 {
		t.Fatalf("summary of %d tokens, budget 30", memory.EstimateTokens(conv.Summary))
	}
	got, err := s.Context(ctx, "chat1")
	if err != nil || got.Summary != conv.Summary || len(got.Turns) != len(conv.Turns) {
		t.Fatalf("Context differs from the last AddTurn result: %v", err)
	}
	if other, _ := s.Context(ctx, "chat2"); other.Summary != "" || len(other.Turns) != 0 {
		t.Fatal("another session sees this conversation")
	}
	if _, err := s.AddTurn(ctx, "chat1", memory.Turn{Role: "user", Text: "  "}); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("blank turn: %v", err)
	}
	if err := s.ClearConversation(ctx, "chat1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Context(ctx, "chat1"); len(got.Turns) != 0 || got.Summary != "" {
		t.Fatal("ClearConversation left data")
	}
}

func testWorkingMemory(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{})
	task, err := s.StartTask(ctx, "t1", "write the quarterly report")
	if err != nil || task.Status != memory.TaskActive {
		t.Fatal(err)
	}
	if _, err := s.StartTask(ctx, "t1", "again"); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("duplicate task: %v", err)
	}
	started := clk.Now()
	if _, err := s.UpdateStep(ctx, "t1", memory.Step{Name: "gather", Status: memory.StepRunning}, "gather"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	task, err = s.UpdateStep(ctx, "t1", memory.Step{Name: "gather", Status: memory.StepDone, Result: json.RawMessage(`{"rows":42}`)}, "draft")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := task.Step("gather")
	if !ok || st.Status != memory.StepDone || string(st.Result) != `{"rows":42}` || !st.Started.Equal(started) || !st.Updated.Equal(clk.Now()) || task.Next != "draft" {
		t.Fatalf("step %+v next %q", st, task.Next)
	}
	if _, err := s.UpdateStep(ctx, "t1", memory.Step{Name: "x", Result: json.RawMessage(`{bad`)}, ""); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := s.UpdateStep(ctx, "nope", memory.Step{Name: "x"}, ""); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := s.StartTask(ctx, "t2", "other"); err != nil {
		t.Fatal(err)
	}
	tasks, err := s.Tasks(ctx)
	if err != nil || len(tasks) != 2 || tasks[0].ID != "t1" {
		t.Fatalf("Tasks: %v %d", err, len(tasks))
	}
	task, err = s.FinishTask(ctx, "t1", memory.TaskDone)
	if err != nil || task.Status != memory.TaskDone || task.Next != "" || task.Finished.IsZero() {
		t.Fatalf("finish: %v %+v", err, task)
	}
	if _, err := s.UpdateStep(ctx, "t1", memory.Step{Name: "late"}, ""); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("update after finish: %v", err)
	}
	if err := s.DeleteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Task(ctx, "t1"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("deleted task: %v", err)
	}
	if err := s.DeleteTask(ctx, "t1"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func testSessionsScanImportStats(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	Remember(t, s, "a", "first memory of a", memory.RememberOptions{})
	clk.Advance(time.Hour)
	Remember(t, s, "a", "second memory of a", memory.RememberOptions{})
	Remember(t, s, "b", "only memory of b", memory.RememberOptions{})
	ss, err := s.Sessions(ctx)
	if err != nil || len(ss) != 2 || ss[0] != (memory.SessionInfo{Name: "a", Memories: 2, Newest: clk.Now()}) || ss[1].Name != "b" || ss[1].Memories != 1 {
		t.Fatalf("Sessions: %v %+v", err, ss)
	}
	var exported []memory.Memory
	if err := s.Scan(ctx, nil, func(m memory.Memory) error { exported = append(exported, m); return nil }); err != nil || len(exported) != 3 {
		t.Fatalf("Scan: %v %d", err, len(exported))
	}
	// Import into a fresh store: vectors kept where given, embedded where missing.
	s2, _ := NewStore(t, newBackend(t), memory.Options{})
	exported[0].Vector = nil
	if err := s2.Import(ctx, exported); err != nil {
		t.Fatal(err)
	}
	if err := s2.Import(ctx, []memory.Memory{{ID: "x", Session: "a"}}); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("import without text: %v", err)
	}
	if err := s2.Import(ctx, append(slices.Clone(exported[:1]), exported[0])); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("import with a repeated ID: %v", err)
	}
	if !equalMemories(t, All(t, s), All(t, s2)) {
		t.Fatal("import did not reproduce the export")
	}
	st, err := s2.Stats(ctx)
	if err != nil || st.Memories != 3 || st.Sessions != 2 || st.Dim != 256 || st.Collection != memory.DefaultCollection {
		t.Fatalf("Stats: %v %+v", err, st)
	}
}

// TestDedupGolden: with the default lexical embedder and threshold, near-duplicates (the same
// fact re-said with small edits) merge and distinct facts, even on the same topic, stay apart.
func testDedupGolden(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	cases := []struct {
		name, first, second string
		merge               bool
	}{
		{"en punctuation", "The user's favourite colour is blue.", "The user's favourite colour is blue!", true},
		{"en case and spacing", "Meeting with Anna moved to Friday at 10am.", "meeting with Anna moved to  Friday at 10am", true},
		{"en one word added", "The user is allergic to peanuts and shellfish.", "The user is allergic to peanuts and to shellfish.", true},
		{"en adverb added", "The user is allergic to peanuts and shellfish.", "The user is severely allergic to peanuts and shellfish.", true},
		{"en one name changed", "Remind me to call mom on Sunday evening.", "Remind me to call dad on Sunday evening.", false},
		{"en different fact", "The user's favourite colour is blue.", "The user's car is a red Toyota.", false},
		{"en same topic, other value", "The user lives in Berlin.", "The user was born in Madrid.", false},
		{"zh punctuation", "用户最喜欢的颜色是蓝色。", "用户最喜欢的颜色是蓝色！", true},
		{"zh particle", "我明天下午三点和王经理开会。", "我明天下午三点要和王经理开会。", true},
		{"zh one name changed", "提醒我周日晚上给妈妈打电话。", "提醒我周日晚上给爸爸打电话。", false},
		{"zh different fact", "用户最喜欢的颜色是蓝色。", "用户的汽车是红色的丰田。", false},
		{"zh same topic, other value", "用户住在北京。", "用户出生在上海。", false},
		{"mixed", "项目 deadline 是 3 月 15 日。", "项目 deadline 是 3 月 15 日", true},
	}
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		s, _ := NewStore(t, newBackend(t), memory.Options{Embedder: emb})
		a := Remember(t, s, "u", c.first, memory.RememberOptions{Importance: 0.2})
		b := Remember(t, s, "u", c.second, memory.RememberOptions{Importance: 0.9})
		sim := cosine(t, emb, c.first, c.second)
		t.Logf("%s: cosine %.3f", c.name, sim)
		n, _ := s.Count(ctx, nil)
		if b.Merged[0] != c.merge || (n == 1) != c.merge {
			t.Errorf("%s: cosine %.3f, merged %v (%d memories), want merged %v", c.name, sim, b.Merged[0], n, c.merge)
			continue
		}
		if c.merge {
			ms, _ := s.Get(ctx, a.IDs[0])
			if b.IDs[0] != a.IDs[0] || ms[0].Text != c.second || ms[0].Importance != 0.9 || ms[0].Created.IsZero() {
				t.Errorf("%s: merge did not update the memory: %+v", c.name, ms[0])
			}
		}
		// Another session never merges.
		if r := Remember(t, s, "other", c.second, memory.RememberOptions{}); r.Merged[0] {
			t.Errorf("%s: merged across sessions", c.name)
		}
	}
}

func cosine(t *testing.T, e memory.Embedder, a, b string) float64 {
	vs, err := e.Embed(ctx, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var dot, na, nb float64
	for i := range vs[0] {
		x, y := float64(vs[0][i]), float64(vs[1][i])
		dot, na, nb = dot+x*y, na+x*x, nb+y*y
	}
	return dot / math.Sqrt(na*nb)
}

type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, string, []memory.Turn) (string, error) {
	return "", ErrInjected
}

func testSummarizerFailureChangesNothing(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{ShortTermTokens: 20, Summarizer: failingSummarizer{}})
	c, err := s.AddTurn(ctx, "c", memory.Turn{Role: "user", Text: "short"})
	if err != nil || len(c.Turns) != 1 {
		t.Fatal(err)
	}
	if _, err := s.AddTurn(ctx, "c", memory.Turn{Role: "user", Text: strings.Repeat("overflow ", 20)}); !errors.Is(err, ErrInjected) {
		t.Fatalf("overflow with a failing summarizer: %v", err)
	}
	if got, _ := s.Context(ctx, "c"); len(got.Turns) != 1 || got.Turns[0].Text != "short" || got.Summary != "" {
		t.Fatalf("failed AddTurn changed the conversation: %+v", got)
	}
}

// testConcurrent: writers in their own sessions and readers run at once (run it with -race);
// afterwards every write is there and no recall ever crossed sessions.
func testConcurrent(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	const writers, each = 4, 15
	errc := make(chan error, 2*writers)
	for w := range writers {
		sess := fmt.Sprintf("w%d", w)
		go func() {
			for i := range each {
				if _, err := s.Remember(ctx, sess, fmt.Sprintf("writer %d note %d about apples", w, i), memory.RememberOptions{}); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		go func() {
			for range each {
				rs, err := s.Recall(ctx, "apples note", memory.RecallOptions{Session: sess, K: 3})
				if err != nil {
					errc <- err
					return
				}
				for _, r := range rs {
					if r.Session != sess {
						errc <- fmt.Errorf("recall in %s returned a memory of %s", sess, r.Session)
						return
					}
				}
			}
			errc <- nil
		}()
	}
	for range 2 * writers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for w := range writers {
		if n, err := s.Count(ctx, memory.Eq(memory.FieldSession, fmt.Sprintf("w%d", w))); err != nil || n != each {
			t.Fatalf("session w%d holds %d memories, want %d (%v)", w, n, each, err)
		}
	}
}

// testTieBreak: under RRF an exact keyword match that is keyword rank 1 but not among the
// vector candidates scores 1/(60+1), exactly as an unrelated memory that is vector rank 1 and
// no keyword hit. The tie must go to the stronger raw match (BM25 1.0 normalized against a
// cosine of 0.8), not to the ID order, which here favours the unrelated memory.
func testTieBreak(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: NewHashEmbedder(2, "2d"), DedupThreshold: -1})
	at := clk.Now()
	err := s.Import(ctx, []memory.Memory{
		{ID: "b-exact", Session: "t", Text: "zyxwv", Vector: []float32{0, 1}, Importance: 0.5, Created: at, Updated: at},
		{ID: "a-unrelated", Session: "t", Text: "ordinary words", Vector: []float32{0.8, 0.6}, Importance: 0.5, Created: at, Updated: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []memory.Fusion{memory.FusionRRF, memory.FusionWeighted} {
		rs, err := s.RecallWithVector(ctx, "zyxwv", []float32{1, 0}, memory.RecallOptions{Session: "t", K: 2, Fusion: f,
			VectorWeight: 1, KeywordWeight: 1, NoTouch: true})
		if err != nil || len(rs) != 2 {
			t.Fatalf("fusion %d: %v, %d results", f, err, len(rs))
		}
		if rs[0].ID != "b-exact" {
			t.Fatalf("fusion %d: %q (%+v) ranked above the exact match (%+v)", f, rs[0].ID, rs[0].Score, rs[1].Score)
		}
	}
}
