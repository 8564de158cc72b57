package keyword

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// bruteBM25 scores docs (a single collection) by the textbook formula.
func bruteBM25(docs map[uint32]string, query string, k1, b float64) map[uint32]float64 {
	toks := map[uint32][]string{}
	var total float64
	for d, text := range docs {
		toks[d] = Tokens(text)
		total += float64(len(toks[d]))
	}
	n := float64(len(docs))
	avg := total / n
	out := map[uint32]float64{}
	for _, q := range Tokens(query) {
		df := 0.0
		for _, ts := range toks {
			if slices.Contains(ts, q) {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for d, ts := range toks {
			tf := 0.0
			for _, t := range ts {
				if t == q {
					tf++
				}
			}
			if tf > 0 {
				out[d] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(len(ts))/avg))
			}
		}
	}
	return out
}

var vocab = []string{"memory", "engine", "vector", "search", "local", "privacy", "agent", "recall",
	"记忆", "向量", "检索", "本地", "go", "rust", "index", "segment", "keyword", "token"}

func randomDocs(r *rand.Rand, n int) map[uint32]string {
	docs := map[uint32]string{}
	for len(docs) < n {
		var buf bytes.Buffer
		for range 1 + r.IntN(12) {
			buf.WriteString(vocab[r.IntN(len(vocab))])
			buf.WriteByte(' ')
		}
		docs[uint32(r.IntN(10*n))] = buf.String()
	}
	return docs
}

func TestSearchMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	docs := randomDocs(r, 200)
	idx := NewIndex()
	ids := make([]uint32, 0, len(docs))
	for d := range docs {
		ids = append(ids, d)
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, d := range ids { // out of order on purpose
		if err := idx.Add(d, docs[d]); err != nil {
			t.Fatal(err)
		}
	}
	for _, params := range []BM25{{}, {K1: 1.2, B: 0.75}, {K1: 1.5, B: 0}} {
		k1, b := params.params()
		for qi := range 30 {
			q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
			want := bruteBM25(docs, q, k1, b)
			hits, err := params.Search([]Part{idx}, q, 1000, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != len(want) {
				t.Fatalf("query %d %q: %d hits, want %d", qi, q, len(hits), len(want))
			}
			for i, h := range hits {
				if math.Abs(h.Score-want[h.Doc]) > 1e-9 {
					t.Fatalf("query %q doc %d: score %v, want %v", q, h.Doc, h.Score, want[h.Doc])
				}
				if i > 0 && better(h, hits[i-1]) {
					t.Fatalf("hits out of order at %d", i)
				}
			}
		}
	}
}

// TestPartsEqualSingleIndex: a collection split into mutable and serialized
// parts ranks exactly like one index over everything.
func TestPartsEqualSingleIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	docs := randomDocs(r, 300)
	whole := NewIndex()
	pieces := []*Index{NewIndex(), NewIndex(), NewIndex()}
	where := map[uint32]int{}
	for d, text := range docs {
		if err := whole.Add(d, text); err != nil {
			t.Fatal(err)
		}
		p := r.IntN(3)
		where[d] = p
		if err := pieces[p].Add(d, text); err != nil {
			t.Fatal(err)
		}
	}
	var parts []Part
	for i, p := range pieces {
		if i == 0 {
			parts = append(parts, p) // mutable part
			continue
		}
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		seg, err := Open(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := seg.Check(); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, seg)
	}
	for range 50 {
		q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
		want, _ := Search([]Part{whole}, q, 20, nil)
		got, err := Search(parts, q, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d hits, want %d", q, len(got), len(want))
		}
		for i := range got {
			// Ties may order differently across parts; compare scores and placement.
			if math.Abs(got[i].Score-want[i].Score) > 1e-9 {
				t.Fatalf("%q rank %d: score %v, want %v", q, i, got[i].Score, want[i].Score)
			}
			if where[got[i].Doc] != got[i].Part {
				t.Fatalf("doc %d reported in part %d, lives in %d", got[i].Doc, got[i].Part, where[got[i].Doc])
			}
		}
	}
}

func TestSearchAllowFilter(t *testing.T) {
	idx := NewIndex()
	for d, s := range []string{"apple pie", "apple tart", "pear"} {
		if err := idx.Add(uint32(d), s); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := Search([]Part{idx}, "apple", 5, func(part int, doc uint32) bool { return doc != 0 })
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Doc != 1 {
		t.Fatalf("hits %+v, want only doc 1", hits)
	}
	hits, _ = Search([]Part{idx}, "apple", 1, nil)
	if len(hits) != 1 {
		t.Fatalf("k=1 gave %d hits", len(hits))
	}
}

func TestSearchBadInput(t *testing.T) {
	idx := NewIndex()
	_ = idx.Add(1, "hello")
	if _, err := Search([]Part{idx}, "hello", 0, nil); !errors.Is(err, ErrInvalidK) {
		t.Errorf("k=0: %v", err)
	}
	for _, p := range []BM25{{K1: -1, B: 0.5}, {K1: 1, B: 1.5}, {K1: math.NaN(), B: 0.5}, {K1: math.Inf(1), B: 0.5}} {
		if _, err := p.Search([]Part{idx}, "hello", 3, nil); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if hits, err := Search([]Part{idx}, "the of ,,", 3, nil); err != nil || hits != nil {
		t.Errorf("stopword query: %v %v", hits, err)
	}
	if hits, err := Search(nil, "hello", 3, nil); err != nil || hits != nil {
		t.Errorf("no parts: %v %v", hits, err)
	}
	if err := idx.Add(1, "again"); !errors.Is(err, ErrDuplicateDoc) {
		t.Errorf("duplicate add: %v", err)
	}
	if idx.NumDocs() != 1 || idx.DocFreq("again") != 0 {
		t.Error("failed Add changed the index")
	}
}

func TestConcurrentReadersOneWriter(t *testing.T) {
	idx := NewIndex()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := Search([]Part{idx}, "memory engine", 5, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for d := range uint32(2000) {
		if err := idx.Add(d, fmt.Sprintf("memory %d engine %d", d, d%7)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if idx.NumDocs() != 2000 {
		t.Fatalf("NumDocs %d", idx.NumDocs())
	}
}

func TestRemove(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	docs := randomDocs(r, 100)
	idx, ref := NewIndex(), NewIndex()
	for d, s := range docs {
		_ = idx.Add(d, s)
	}
	removed := 0
	for d, s := range docs {
		if removed < 40 {
			if _, err := idx.Remove(d, s+" extra"); !errors.Is(err, ErrTextMismatch) {
				t.Fatalf("mismatched text: %v", err)
			}
			if ok, err := idx.Remove(d, s); !ok || err != nil {
				t.Fatalf("Remove(%d): %v %v", d, ok, err)
			}
			removed++
			continue
		}
		_ = ref.Add(d, s)
	}
	if ok, err := idx.Remove(1<<31, "x"); ok || err != nil {
		t.Fatalf("absent doc: %v %v", ok, err)
	}
	a, _ := idx.MarshalBinary()
	b, _ := ref.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatal("index after Remove differs from one built without the removed docs")
	}
	hits, err := idx.Search("memory", 3, func(doc uint32) bool { return doc%2 == 0 })
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Doc%2 != 0 {
			t.Fatalf("filtered doc %d returned", h.Doc)
		}
	}
}

// lowBound wraps an Index and reports a DocBound below its largest document,
// as a concurrent Add can make happen, forcing the dense and sparse paths of
// one accumulator to be mixed.
type lowBound struct{ *Index }

func (l lowBound) DocBound() uint32 { return l.Index.DocBound() / 2 }

// noBound hides DocBound, forcing the sparse path.
type noBound struct{ Part }

func TestAccumulatorPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	idx := NewIndex()
	sparse := NewIndex() // document numbers spread over the uint32 range
	for d, s := range randomDocs(r, 300) {
		_ = idx.Add(d, s)
		_ = sparse.Add(d*1_400_000+d%7, s)
	}
	allow := func(_ int, d uint32) bool { return d%3 != 0 }
	for range 30 {
		q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
		want, _ := Search([]Part{noBound{idx}}, q, 15, allow)
		for name, p := range map[string]Part{"dense": idx, "mixed": lowBound{idx}} {
			got, err := Search([]Part{p}, q, 15, allow)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s path, %q: %v, want %v", name, q, got, want)
			}
		}
		got, _ := Search([]Part{sparse}, q, 15, nil)
		all, _ := Search([]Part{noBound{idx}}, q, 15, nil)
		if len(got) != len(all) {
			t.Fatalf("sparse numbering: %d hits, want %d", len(got), len(all))
		}
		for i := range got {
			if got[i].Score != all[i].Score {
				t.Fatalf("sparse numbering rank %d: %v, want %v", i, got[i].Score, all[i].Score)
			}
		}
	}
}

// TestPruningIsExact: skipping new documents once the top k is settled must
// give exactly the exhaustive result, and must actually save filter calls
// on queries mixing rare and common words.
func TestPruningIsExact(t *testing.T) {
	docs, qs := zipfCorpus(3000, 200)
	idx, seg := indexAndSegment(t, docs)
	var prunedCalls, fullCalls int
	for qi, q := range qs {
		for _, k := range []int{1, 5, 50} {
			for _, parts := range [][]Part{{idx}, {seg, idx}} {
				count := func(n *int) func(int, uint32) bool {
					return func(_ int, d uint32) bool { *n++; return d%4 != 1 }
				}
				got, err := Search(parts, q, k, count(&prunedCalls))
				if err != nil {
					t.Fatal(err)
				}
				want, _ := BM25{K1: DefaultK1, B: DefaultB, exhaustive: true}.Search(parts, q, k, count(&fullCalls))
				if !slices.Equal(got, want) {
					t.Fatalf("query %d %q k=%d: pruned %v, exhaustive %v", qi, q, k, got, want)
				}
			}
		}
	}
	t.Logf("filter calls: pruned %d, exhaustive %d", prunedCalls, fullCalls)
	if prunedCalls >= fullCalls {
		t.Errorf("pruning saved nothing: %d filter calls vs %d", prunedCalls, fullCalls)
	}
}

// TestSearchAmongIsExact: restricting parts to lists of documents (one
// "session" of many, as the engine does) gives exactly the exhaustive
// result of the equivalent filter, whether the lists are looked up in the
// postings or the postings are read whole, and lists that are not
// increasing or do not match the parts are refused.
func TestSearchAmongIsExact(t *testing.T) {
	docs, qs := zipfCorpus(4000, 100)
	idx := NewIndex()
	for i, d := range docs {
		_ = idx.Add(uint32(i), d)
	}
	seg := mustSegment(t, idx)
	parts := []Part{seg, idx}
	for _, sessions := range []uint32{1, 7, 100, 1000} {
		// Part 0 lists session 3's documents; part 1 is not restricted
		// but filtered to odd documents.
		var list []uint32
		for d := uint32(3 % sessions); d < uint32(len(docs)); d += sessions {
			list = append(list, d)
		}
		among := [][]uint32{list, nil}
		allow := func(part int, d uint32) bool {
			if part == 0 {
				return d%sessions == 3%sessions
			}
			return d%2 == 1
		}
		for qi, q := range qs {
			for _, k := range []int{1, 10, 100} {
				got, err := BM25{}.SearchAmong(parts, q, k, among, func(part int, d uint32) bool { return part != 1 || d%2 == 1 })
				if err != nil {
					t.Fatal(err)
				}
				want, _ := BM25{K1: DefaultK1, B: DefaultB, exhaustive: true}.Search(parts, q, k, allow)
				if !slices.Equal(got, want) {
					t.Fatalf("1 in %d: query %d %q k=%d: among %v, exhaustive %v", sessions, qi, q, k, got, want)
				}
			}
		}
	}
	if _, err := (BM25{}).SearchAmong(parts, qs[0], 5, [][]uint32{{1, 1}, nil}, nil); err == nil {
		t.Error("a list with a repeated document was accepted")
	}
	if _, err := (BM25{}).SearchAmong(parts, qs[0], 5, [][]uint32{{1}}, nil); err == nil {
		t.Error("one list for two parts was accepted")
	}
}

// TestRenumber: an index renumbered is byte for byte the index built with
// the new numbers; mappings that miss a document or merge two are refused
// and change nothing.
func TestRenumber(t *testing.T) {
	docs, qs := zipfCorpus(1500, 20)
	perm := rand.New(rand.NewPCG(9, 9)).Perm(len(docs))
	renumbered, direct := NewIndex(), NewIndex()
	newDoc := make([]uint32, len(docs))
	for i, d := range docs {
		_ = renumbered.Add(uint32(i), d)
		newDoc[i] = uint32(perm[i])
		_ = direct.Add(newDoc[i], d)
	}
	before, _ := renumbered.MarshalBinary()
	if err := renumbered.Renumber(newDoc[:len(docs)-1]); err == nil {
		t.Fatal("a mapping that misses a document was accepted")
	}
	dup := slices.Clone(newDoc)
	dup[1] = dup[0]
	if err := renumbered.Renumber(dup); err == nil {
		t.Fatal("a mapping of two documents to one was accepted")
	}
	if after, _ := renumbered.MarshalBinary(); !bytes.Equal(after, before) {
		t.Fatal("a refused renumbering changed the index")
	}
	if err := renumbered.Renumber(newDoc); err != nil {
		t.Fatal(err)
	}
	got, _ := renumbered.MarshalBinary()
	want, _ := direct.MarshalBinary()
	if !bytes.Equal(got, want) {
		t.Fatal("the renumbered index differs from one built with the new numbers")
	}
	for _, q := range qs {
		a, _ := Search([]Part{renumbered}, q, 10, nil)
		b, _ := Search([]Part{direct}, q, 10, nil)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: %v, built directly %v", q, a, b)
		}
	}
}

// TestSearchAmongGroupedSession: a session that is a run of a segment's
// documents (as compaction groups them) is searched from the run of each
// posting list once the term's bound is known; the results are the
// exhaustive ones on the first query of a term and on every later one.
func TestSearchAmongGroupedSession(t *testing.T) {
	docs, qs := zipfCorpus(6000, 60)
	_, seg := indexAndSegment(t, docs)
	for _, run := range [][2]uint32{{2000, 2600}, {0, 40}, {5900, 6000}} {
		var list []uint32
		for d := run[0]; d < run[1]; d++ {
			if d%5 != 0 { // a few holes, as deleted records leave
				list = append(list, d)
			}
		}
		in := func(_ int, d uint32) bool { _, ok := slices.BinarySearch(list, d); return ok }
		for pass := range 2 {
			for qi, q := range qs {
				for _, k := range []int{1, 10, 100} {
					got, err := BM25{}.SearchAmong([]Part{seg}, q, k, [][]uint32{list}, nil)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := BM25{K1: DefaultK1, B: DefaultB, exhaustive: true}.Search([]Part{seg}, q, k, in)
					if !slices.Equal(got, want) {
						t.Fatalf("run %v, pass %d, query %d %q k=%d: %v, exhaustive %v", run, pass, qi, q, k, got, want)
					}
				}
			}
		}
	}
}

// indexAndSegment indexes docs as documents 0, 1, ... and returns the Index
// and its serialized Segment.
func indexAndSegment(t *testing.T, docs []string) (*Index, *Segment) {
	t.Helper()
	idx := NewIndex()
	for i, d := range docs {
		if err := idx.Add(uint32(i), d); err != nil {
			t.Fatal(err)
		}
	}
	return idx, mustSegment(t, idx)
}
