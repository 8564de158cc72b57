package keyword

import (
	"math"
	"os"
	"testing"
)

// TestFormatV2Segment: a segment written by format version 2 (whole-token counts) opens and
// scores every query exactly like a version 3 index of the same documents, alone and next to
// version 3 parts.
func TestFormatV2Segment(t *testing.T) {
	b, err := os.ReadFile("testdata/format-v2.kw")
	if err != nil {
		t.Fatal(err)
	}
	old, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Check(); err != nil {
		t.Fatal(err)
	}
	x := NewIndex()
	for i, d := range v2Docs {
		if err := x.Add(uint32(10+3*i), d); err != nil {
			t.Fatal(err)
		}
	}
	nb, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	seg, err := Open(nb)
	if err != nil {
		t.Fatal(err)
	}
	if old.TotalLen() != x.TotalLen() || old.NumDocs() != x.NumDocs() {
		t.Fatalf("v2 statistics %d/%d, v3 %d/%d", old.NumDocs(), old.TotalLen(), x.NumDocs(), x.TotalLen())
	}
	for _, q := range []string{"dog", "lazy fox", "记忆", "run", "canids smaller foxes", "nothing"} {
		for _, parts := range [][2]Part{{old, x}, {seg, x}} {
			a, err := Search([]Part{parts[0]}, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := Search([]Part{x}, q, 10, nil)
			if len(a) != len(want) {
				t.Fatalf("%q: %d hits, want %d", q, len(a), len(want))
			}
			for i := range a {
				if a[i].Doc != want[i].Doc || math.Abs(a[i].Score-want[i].Score) > 1e-12 {
					t.Fatalf("%q hit %d: %+v, want %+v", q, i, a[i], want[i])
				}
			}
		}
		// Mixed: the old segment's statistics combine with a new part's as if both were new.
		mixed, _ := Search([]Part{old, seg}, q, 20, nil)
		both, _ := Search([]Part{seg, seg}, q, 20, nil)
		for i := range mixed {
			if math.Abs(mixed[i].Score-both[i].Score) > 1e-12 {
				t.Fatalf("%q: mixed v2+v3 score %v, v3+v3 %v", q, mixed[i].Score, both[i].Score)
			}
		}
	}
}

// TestContextWeight: words after ContextSeparator count a third of body words, summed before
// saturation, and the context's weighted length joins the document's.
func TestContextWeight(t *testing.T) {
	x := NewIndex()
	docs := []string{
		"apple pie recipe",
		"yes it was amazing" + ContextSeparator + "how was the apple festival",
		"banana bread" + ContextSeparator + "apple apple apple",
		"cherry tart",
	}
	for i, d := range docs {
		if err := x.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := x.Search("apple festival", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].Doc != 1 {
		t.Fatalf("hits %+v: the turn whose context holds both words should lead", hits)
	}
	// BM25F by hand: frequencies and lengths in body-token equivalents.
	const k1, b = DefaultK1, DefaultB
	lens := []float64{3, 2 + 3.0/3, 2 + 3.0/3, 2} // "it", "was" and "the" are stopwords
	avg := (lens[0] + lens[1] + lens[2] + lens[3]) / 4
	idf := func(df float64) float64 { return math.Log(1 + (4-df+0.5)/(df+0.5)) }
	sat := func(f, l float64) float64 { return f * (k1 + 1) / (f + k1*(1-b+b*l/avg)) }
	want := map[uint32]float64{
		0: idf(3) * sat(1, lens[0]),
		1: idf(3)*sat(1.0/3, lens[1]) + idf(1)*sat(1.0/3, lens[1]),
		2: idf(3) * sat(1, lens[2]),
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.Doc]) > 1e-9 {
			t.Fatalf("doc %d scores %v, want %v", h.Doc, h.Score, want[h.Doc])
		}
	}
	// Remove needs the same text, context included.
	if _, err := x.Remove(1, "yes it was amazing"); err == nil {
		t.Fatal("Remove without the context matched")
	}
	if ok, err := x.Remove(1, docs[1]); !ok || err != nil {
		t.Fatalf("Remove: %v %v", ok, err)
	}
}

// TestQueryStopwords: question words leave queries, not documents, unless nothing else is left.
func TestQueryStopwords(t *testing.T) {
	x := NewIndex()
	for i, d := range []string{"What did you do yesterday? How was it?", "Caroline went to the support group", "who is he"} {
		if err := x.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := x.Search("When did Caroline go to the support group?", 10, nil)
	if err != nil || len(hits) != 1 || hits[0].Doc != 1 {
		t.Fatalf("question words matched small talk: %+v %v", hits, err)
	}
	if hits, _ := x.Search("who is he", 10, nil); len(hits) == 0 || hits[0].Doc != 2 {
		t.Fatalf("a query of stopwords only found %+v", hits)
	}
}

// TestChineseQueryStopwords: 什么, 哪里 and the like leave Chinese queries.
func TestChineseQueryStopwords(t *testing.T) {
	x := NewIndex()
	for i, d := range []string{"你喜欢什么？你去哪里？", "熊猫吃竹子"} {
		if err := x.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := x.Search("熊猫吃什么", 10, nil)
	if err != nil || len(hits) != 1 || hits[0].Doc != 1 {
		t.Fatalf("hits %+v %v", hits, err)
	}
}
