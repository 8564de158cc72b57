package memory_test

import (
	"errors"
	"math"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
	"github.com/engramdb/engram/memory/memorytest"
)

var gateTexts = []string{
	"Ran the marathon in Porto in four hours",
	"The marathon training plan has long runs on Sundays",
	"Porto wine was served at the wedding",
	"A marathon of meetings all afternoon",
	"Booked a dentist appointment for Tuesday",
}

// checkWeighted recomputes Fused for every result of a hybrid recall from its raw scores: the
// weighted formula of memory.FusionWeighted with vector gate g and weights 0.5/0.5. K covers
// every candidate, so the best keyword score among the results is the query's best.
func checkWeighted(t *testing.T, rs []memory.Result, g float64) {
	t.Helper()
	var maxKW float64
	for _, r := range rs {
		maxKW = max(maxKW, r.Score.Keyword)
	}
	for _, r := range rs {
		kw, cos := 0.0, max(0, min(1, r.Score.Vector))
		if maxKW > 0 {
			kw = r.Score.Keyword / maxKW
		}
		if g > 0 && maxKW > 0 {
			cos *= max(0, min(1, (kw-g)/(1-g)))
		}
		if want := (cos + kw) / 2; math.Abs(r.Score.Fused-want) > 1e-9 {
			t.Fatalf("gate %v: %q fused %v, want %v (%+v)", g, r.Text, r.Score.Fused, want, r.Score)
		}
	}
}

// TestVectorGate: with the lexical embedder the cosine counts only for memories whose BM25 score
// is near the query's best (LexicalVectorGate), so a memory that only shares word pieces with the
// query cannot outrank a keyword match; the gate is per embedder, per store and per recall.
func TestVectorGate(t *testing.T) {
	forBackends(t, func(t *testing.T, b memory.Backend) {
		emb, err := lexical.New(lexical.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := memorytest.NewStore(t, b, memory.Options{Embedder: emb, DedupThreshold: -1,
			VectorWeight: memory.LexicalVectorWeight, KeywordWeight: memory.LexicalKeywordWeight})
		for _, text := range gateTexts {
			memorytest.Remember(t, s, "g", text, memory.RememberOptions{})
		}
		o := memory.RecallOptions{Session: "g", K: 20, NoTouch: true, Decay: memory.Decay{Off: true}, ImportanceWeight: -1}
		rs, err := s.Recall(ctx, "marathon Porto", o)
		if err != nil || len(rs) < 3 {
			t.Fatalf("%v %q", err, memorytest.Texts(rs))
		}
		checkWeighted(t, rs, memory.LexicalVectorGate)
		if rs[0].Text != gateTexts[0] || rs[0].Score.Fused <= 0.5 {
			t.Fatalf("the memory with both words is not first with more than its keyword half: %q %+v", memorytest.Texts(rs), rs[0].Score)
		}
		gated := 0
		for _, r := range rs {
			if r.Score.Vector > 0 && r.Score.Keyword == 0 && r.Score.Fused != 0 {
				t.Fatalf("a memory only the vector list found has fused %v under the gate", r.Score.Fused)
			}
			if r.Score.Vector > 0 && r.Score.Fused < (r.Score.Vector+r.Score.Keyword/rs[0].Score.Keyword)/2-1e-9 {
				gated++
			}
		}
		if gated == 0 {
			t.Fatalf("no cosine was gated: %+v", rs)
		}
		// RRF: the vector term is gated the same way.
		rank := map[memory.Mode]map[string]int{}
		for _, m := range []memory.Mode{memory.ModeVector, memory.ModeKeyword} {
			mo := o
			mo.Mode = m
			rr, err := s.Recall(ctx, "marathon Porto", mo)
			if err != nil {
				t.Fatal(err)
			}
			rank[m] = map[string]int{}
			for i, r := range rr {
				rank[m][r.ID] = i + 1
			}
		}
		ro := o
		ro.Fusion = memory.FusionRRF
		rr, err := s.Recall(ctx, "marathon Porto", ro)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rr {
			kw := r.Score.Keyword / rs[0].Score.Keyword
			want := 0.0
			if vr := rank[memory.ModeVector][r.ID]; vr > 0 {
				want += max(0, min(1, (kw-memory.LexicalVectorGate)/(1-memory.LexicalVectorGate))) * 0.5 / (60 + float64(vr))
			}
			if kr := rank[memory.ModeKeyword][r.ID]; kr > 0 {
				want += 0.5 / (60 + float64(kr))
			}
			if want *= 61; math.Abs(r.Score.Fused-want) > 1e-9 {
				t.Fatalf("RRF of %q: fused %v, want %v", r.Text, r.Score.Fused, want)
			}
		}
		// Per recall: no gate gives the plain weighted formula.
		o.VectorGate = -1
		rs, _ = s.Recall(ctx, "marathon Porto", o)
		checkWeighted(t, rs, 0)
		// No keyword candidate at all (word pieces only): nothing to gate by, the cosine counts
		// (a weak one: below the default MinScore, so without the floor here).
		o.VectorGate, o.MinScore = 0, -1
		rs, err = s.Recall(ctx, "marathn", o)
		if err != nil || len(rs) == 0 || rs[0].Score.Keyword != 0 || rs[0].Score.Fused != rs[0].Score.Vector/2 {
			t.Fatalf("typo query: %v %+v", err, rs)
		}
		for _, bad := range []float64{1, 2, math.NaN()} {
			o.VectorGate = bad
			if _, err := s.Recall(ctx, "marathon", o); !errors.Is(err, memory.ErrInvalidInput) {
				t.Fatalf("gate %v: %v", bad, err)
			}
		}
	})
}

// TestVectorGateDefaults: another embedder recalls ungated unless the store sets a gate.
func TestVectorGateDefaults(t *testing.T) {
	b := memory.NewMemBackend()
	s, _ := memorytest.NewStore(t, b, memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h"), DedupThreshold: -1})
	for _, text := range gateTexts {
		memorytest.Remember(t, s, "g", text, memory.RememberOptions{})
	}
	o := memory.RecallOptions{Session: "g", K: 20, NoTouch: true, Decay: memory.Decay{Off: true}, ImportanceWeight: -1}
	rs, err := s.Recall(ctx, "marathon Porto", o)
	if err != nil || len(rs) == 0 {
		t.Fatal(err)
	}
	checkWeighted(t, rs, 0)

	s2, _ := memorytest.NewStore(t, memory.NewMemBackend(), memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h"), DedupThreshold: -1, VectorGate: 0.5})
	for _, text := range gateTexts {
		memorytest.Remember(t, s2, "g", text, memory.RememberOptions{})
	}
	rs, _ = s2.Recall(ctx, "marathon Porto", o)
	checkWeighted(t, rs, 0.5)
	o.VectorGate = 0.9 // the recall's own gate wins over the store's
	rs, _ = s2.Recall(ctx, "marathon Porto", o)
	checkWeighted(t, rs, 0.9)

	for _, bad := range []float64{1, math.NaN()} {
		if _, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: memorytest.NewHashEmbedder(8, "x"), VectorGate: bad}); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("store gate %v: %v", bad, err)
		}
	}
}
