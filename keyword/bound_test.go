package keyword

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// shortTexts is a corpus like a memory store's: short texts of 5 to 40
// words drawn from a skewed vocabulary, most words said once.
func shortTexts(n, queries int) (docs, qs []string) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string { return fmt.Sprintf("w%d", int(2000*r.Float64()*r.Float64()*r.Float64())) }
	for range n {
		var sb strings.Builder
		for range 5 + r.IntN(36) {
			sb.WriteString(word() + " ")
		}
		docs = append(docs, sb.String())
	}
	for range queries {
		var sb strings.Builder
		for range 3 + r.IntN(6) {
			sb.WriteString(word() + " ")
		}
		qs = append(qs, sb.String())
	}
	return docs, qs
}

// TestTermBounds: the Index knows a bound for every term, a Segment for the
// terms it has read whole; every bound covers every posting of its term,
// and a removal leaves the Index's bounds covering what is left.
func TestTermBounds(t *testing.T) {
	docs, _ := shortTexts(2000, 0)
	idx, seg := indexAndSegment(t, docs)
	for i := range 200 {
		_, _ = idx.Remove(uint32(i*7), docs[i*7])
	}
	for w := range 2000 {
		term := fmt.Sprintf("w%d", w)
		if _, ok := seg.termBound(term); ok {
			t.Fatalf("segment knows %q's bound before reading it", term)
		}
		for _, p := range []interface {
			Part
			termBounder
		}{idx, seg} {
			var postings []posting
			p.Postings(term, func(doc, tf, dl uint32) { postings = append(postings, posting{doc, tf, dl}) })
			st, ok := p.termBound(term)
			if len(postings) > 0 && !ok {
				t.Fatalf("%T: no bound for %q after reading it", p, term)
			}
			for _, q := range postings {
				if q.tf > st.maxTF || q.docLen < st.minDocLen {
					t.Fatalf("%T %q: posting (tf %d, length %d) outside bound %+v", p, term, q.tf, q.docLen, st)
				}
			}
			if p == Part(seg) && len(postings) > 0 {
				tight := slices.ContainsFunc(postings, func(q posting) bool { return q.tf == st.maxTF })
				if !tight {
					t.Fatalf("segment %q: bound %+v reached by no posting", term, st)
				}
			}
		}
	}
}

// TestTermBoundsPrune: with the bounds of a segment's terms learned, MaxScore
// gives exactly the exhaustive results, and reads fewer documents than with
// BM25's own limit (the same segment opened afresh).
func TestTermBoundsPrune(t *testing.T) {
	docs, qs := shortTexts(6000, 150)
	idx := NewIndex()
	for i, d := range docs {
		_ = idx.Add(uint32(i), d)
	}
	b, err := idx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	warm, _ := Open(b)
	for w := range 2000 { // read every list whole once
		warm.Postings(fmt.Sprintf("w%d", w), func(uint32, uint32, uint32) {})
	}
	count := func(n *int) func(int, uint32) bool {
		return func(_ int, d uint32) bool { *n++; return d%5 != 2 }
	}
	var coldCalls, warmCalls int
	for qi, q := range qs {
		for _, k := range []int{1, 10, 100} {
			cold, _ := Open(b) // opened afresh: a search teaches it the bounds of what it reads
			coldGot, err := Search([]Part{cold}, q, k, count(&coldCalls))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := Search([]Part{warm}, q, k, count(&warmCalls))
			want, _ := BM25{K1: DefaultK1, B: DefaultB, exhaustive: true}.Search([]Part{warm}, q, k, count(new(int)))
			if !slices.Equal(got, want) || !slices.Equal(coldGot, want) {
				t.Fatalf("query %d %q k=%d: with bounds %v, without %v, exhaustive %v", qi, q, k, got, coldGot, want)
			}
		}
	}
	t.Logf("filter calls: BM25's limit %d, learned bounds %d", coldCalls, warmCalls)
	if warmCalls >= coldCalls {
		t.Errorf("learned bounds saved no filter calls: %d vs %d", warmCalls, coldCalls)
	}
}
