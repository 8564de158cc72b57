package keyword

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func sampleIndex(t testing.TB) *Index {
	idx := NewIndex()
	for d, s := range map[uint32]string{
		7: "Local memory engine for agents", 3: "向量检索和关键词检索", 42: "memory memory recall",
		9: "", 100: "segment files are immutable",
	} {
		if err := idx.Add(d, s); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

type posting3 struct{ doc, tf, dl uint32 }

func collect(p Part, term string) []posting3 {
	var out []posting3
	p.Postings(term, func(doc, tf, dl uint32) { out = append(out, posting3{doc, tf, dl}) })
	return out
}

func TestSegmentRoundTrip(t *testing.T) {
	idx := sampleIndex(t)
	var buf bytes.Buffer
	n, err := idx.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo: %d %v", n, err)
	}
	seg, err := Open(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Check(); err != nil {
		t.Fatal(err)
	}
	if seg.NumDocs() != idx.NumDocs() || seg.TotalLen() != idx.TotalLen() || seg.NumTerms() != idx.NumTerms() {
		t.Fatalf("stats differ: %d/%d %d/%d %d/%d", seg.NumDocs(), idx.NumDocs(), seg.TotalLen(), idx.TotalLen(), seg.NumTerms(), idx.NumTerms())
	}
	for term := range idx.postings {
		if seg.DocFreq(term) != idx.DocFreq(term) {
			t.Errorf("%q df %d want %d", term, seg.DocFreq(term), idx.DocFreq(term))
		}
		if got, want := collect(seg, term), collect(idx, term); !slices.Equal(got, want) {
			t.Errorf("%q postings %v want %v", term, got, want)
		}
	}
	if seg.DocFreq("absent") != 0 || collect(seg, "absent") != nil || seg.DocFreq("") != 0 {
		t.Error("absent term found")
	}
	// Deterministic bytes: the same index serializes identically.
	again, _ := idx.MarshalBinary()
	if !bytes.Equal(again, buf.Bytes()) {
		t.Error("MarshalBinary is not deterministic")
	}
}

func TestEmptySegment(t *testing.T) {
	b, err := NewIndex().MarshalBinary()
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
	if hits, err := Search([]Part{seg}, "anything", 3, nil); err != nil || hits != nil {
		t.Fatalf("%v %v", hits, err)
	}
}

func reseal(b []byte) []byte {
	body := b[:len(b)-crcSize]
	binary.LittleEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
	return b
}

func TestOpenRejects(t *testing.T) {
	good, _ := sampleIndex(t).MarshalBinary()
	mut := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"empty":     {nil, ErrCorrupt},
		"truncated": {good[:len(good)-1], ErrCorrupt},
		"magic":     {mut(func(b []byte) []byte { b[0] = 'X'; return b }), ErrCorrupt},
		"bitflip":   {mut(func(b []byte) []byte { b[len(b)/2] ^= 1; return b }), ErrCorrupt},
		"version":   {mut(func(b []byte) []byte { b[8] = 99; return reseal(b) }), ErrVersion},
		"analyzer":  {mut(func(b []byte) []byte { b[12] = 99; return reseal(b) }), ErrVersion},
		"numDocs":   {mut(func(b []byte) []byte { b[16]++; return reseal(b) }), ErrCorrupt},
		"trailing":  {reseal(append(slices.Clone(good), 0, 0, 0, 0)), ErrCorrupt},
	}
	for name, c := range cases {
		if _, err := Open(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}

func TestCheckFindsForgedCorruption(t *testing.T) {
	good, _ := sampleIndex(t).MarshalBinary()
	// Corrupt the last posting byte and fix the checksum: Open accepts,
	// Check must not.
	b := slices.Clone(good)
	b[len(b)-crcSize-1] = 0xff
	seg, err := Open(reseal(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check: %v", err)
	}
}

// postingsOneByOne reads term's list with cursor.next, the reference for
// cursor.block.
func postingsOneByOne(seg *Segment, term string) []posting3 {
	i := seg.find(term)
	if i < 0 {
		return nil
	}
	c, ok := seg.cursor(i)
	if !ok {
		return nil
	}
	var out []posting3
	for c.next() {
		d, tf, dl := c.posting()
		out = append(out, posting3{d, tf, dl})
	}
	return out
}

func FuzzOpen(f *testing.F) {
	good, _ := sampleIndex(f).MarshalBinary()
	f.Add(good)
	empty, _ := NewIndex().MarshalBinary()
	f.Add(empty)
	f.Add(good[:headerSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		// Fuzzed bytes almost never carry a valid CRC; reseal half the
		// inputs so the lazy readers behind the checksum get exercised.
		if len(b) > headerSize+crcSize && b[len(b)-1]&1 == 0 {
			reseal(b)
		}
		seg, err := Open(b)
		if err != nil {
			return
		}
		_ = seg.Check()
		for _, q := range []string{"memory", "检索", "zzz", ""} {
			seg.DocFreq(q)
			// The block decoder stops where the posting-at-a-time one does.
			var byBlock []posting3
			seg.Postings(q, func(doc, tf, dl uint32) { byBlock = append(byBlock, posting3{doc, tf, dl}) })
			if one := postingsOneByOne(seg, q); !slices.Equal(byBlock, one) {
				t.Fatalf("%q: %d postings by block, %d one by one", q, len(byBlock), len(one))
			}
			seg.postingsOf(q, &docSet{docs: []uint32{0, 3, 7, 42, 100, 1 << 20}}, func(doc, tf, dl uint32) {})
			seg.postingBlocks(q, nil, func(*postingBlock) {})
		}
		if _, err := Search([]Part{seg}, "memory recall 检索", 5, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPostingsOf: looking up a sorted set of documents (binary search in the
// Index, block skips in the Segment) finds exactly the postings a full read
// finds for them, across many blocks.
func TestPostingsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	idx := NewIndex()
	for d := range uint32(5000) {
		text := "common"
		if d%3 == 0 {
			text += " third"
		}
		if r.IntN(50) == 0 {
			text += " rare common"
		}
		_ = idx.Add(d*2+1, text) // odd numbers: even ones are absent
	}
	seg := mustSegment(t, idx)
	if err := seg.Check(); err != nil {
		t.Fatal(err)
	}
	for _, part := range []interface {
		Part
		seeker
	}{idx, seg} {
		for _, frac := range []int{1, 7, 300, 5000} {
			var docs []uint32
			for d := range uint32(10002) {
				if r.IntN(frac) == 0 {
					docs = append(docs, d)
				}
			}
			set := &docSet{docs: docs} // one set for every term: a Segment keeps the ordinals it found
			for _, term := range []string{"common", "third", "rare", "absent"} {
				want := map[uint32]posting3{}
				part.Postings(term, func(doc, tf, dl uint32) {
					if _, ok := slices.BinarySearch(docs, doc); ok {
						want[doc] = posting3{doc, tf, dl}
					}
				})
				got := map[uint32]posting3{}
				prev := int64(-1)
				part.postingsOf(term, set, func(doc, tf, dl uint32) {
					if int64(doc) <= prev {
						t.Fatalf("%T %q: doc %d after %d", part, term, doc, prev)
					}
					prev = int64(doc)
					got[doc] = posting3{doc, tf, dl}
				})
				if !maps.Equal(got, want) {
					t.Fatalf("%T %q 1/%d: %d postings, want %d", part, term, frac, len(got), len(want))
				}
			}
		}
	}
}

// TestPostingBlocks: reading a Segment's list a block at a time gives
// exactly what the Index holds for the term, in order, across many blocks.
func TestPostingBlocks(t *testing.T) {
	docs, _ := shortTexts(5000, 0)
	idx := NewIndex()
	for i, d := range docs {
		_ = idx.Add(uint32(3*i+1), d)
	}
	seg := mustSegment(t, idx)
	for w := range 2000 {
		term := fmt.Sprintf("w%d", w)
		var want, got []posting3
		idx.Postings(term, func(doc, tf, dl uint32) { want = append(want, posting3{doc, tf, dl}) })
		blocks := 0
		seg.postingBlocks(term, nil, func(b *postingBlock) {
			if b.n < 1 || b.n > blockSize {
				t.Fatalf("%q: block of %d", term, b.n)
			}
			blocks++
			for i := range b.n {
				got = append(got, posting3{b.docs[i], b.tfs[i], b.lens[i]})
			}
		})
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %d postings in blocks, %d in the Index", term, len(got), len(want))
		}
		if blocks != (len(want)+blockSize-1)/blockSize {
			t.Fatalf("%q: %d postings in %d blocks", term, len(want), blocks)
		}
	}
}

// TestPostingBlocksKeep: with a set of ordinals (scattered, or a run as a
// session grouped by compaction has), postingBlocks gives exactly the kept
// documents' postings, at most a stored block's worth at a time, both on
// the first read of a term (whole, learning its bound, which must cover
// every posting) and on later ones (only the blocks of the set's range).
func TestPostingBlocksKeep(t *testing.T) {
	docs, _ := shortTexts(5000, 0)
	idx := NewIndex()
	for i, d := range docs {
		_ = idx.Add(uint32(3*i+1), d)
	}
	r := rand.New(rand.NewPCG(7, 7))
	var scattered, run []uint32
	for i := range docs {
		if r.IntN(10) == 0 {
			scattered = append(scattered, uint32(3*i+1))
		}
		if i >= 2100 && i < 2400 && i%4 != 0 {
			run = append(run, uint32(3*i+1))
		}
	}
	for _, kept := range [][]uint32{scattered, run} {
		seg := mustSegment(t, idx)
		keep := newOrdSet(seg.ordBits(&docSet{docs: kept}))
		for w := range 300 {
			term := fmt.Sprintf("w%d", w)
			var want []posting3
			var all termStat
			idx.Postings(term, func(doc, tf, dl uint32) {
				all = all.with(tf, dl)
				if _, ok := slices.BinarySearch(kept, doc); ok {
					want = append(want, posting3{doc, tf, dl})
				}
			})
			for read := range 2 {
				var got []posting3
				seg.postingBlocks(term, keep, func(b *postingBlock) {
					if b.n < 1 || b.n > blockSize {
						t.Fatalf("%q: a block of %d", term, b.n)
					}
					for i := range b.n {
						got = append(got, posting3{b.docs[i], b.tfs[i], b.lens[i]})
					}
				})
				if !slices.Equal(got, want) {
					t.Fatalf("%q, read %d: %d postings kept, want %d", term, read, len(got), len(want))
				}
			}
			if all.maxTF == 0 {
				continue
			}
			st, ok := seg.termBound(term)
			if !ok || st.maxTF < all.maxTF || st.minDocLen > all.minDocLen {
				t.Fatalf("%q: learned bound %+v (%v) does not cover %+v", term, st, ok, all)
			}
		}
	}
}

func TestCheckFindsBadSkipEntry(t *testing.T) {
	idx := NewIndex()
	for d := range uint32(300) { // "word" spans 3 blocks
		_ = idx.Add(d, "word")
	}
	b, _ := idx.MarshalBinary()
	seg, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Check(); err != nil {
		t.Fatal(err)
	}
	// The first skip entry is the first thing in the postings section:
	// point block 1 at ordinal 129 instead of 128.
	_, from, _ := seg.entry(0)
	at := len(b) - crcSize - len(seg.post) + int(from)
	b = slices.Clone(b)
	binary.LittleEndian.PutUint32(b[at:], 129)
	seg, err = Open(reseal(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check: %v", err)
	}
}

// TestOrdinalFrom: the galloping search finds what the binary search over
// the whole table finds, from any start at or before the answer.
func TestOrdinalFrom(t *testing.T) {
	for name, step := range map[string]func(d uint32) uint32{
		"gaps":            func(d uint32) uint32 { return 1 + d%7 },
		"dense":           func(uint32) uint32 { return 1 }, // position == doc: the fast path
		"dense then gaps": func(d uint32) uint32 { return 1 + d/1500*(d%5) },
	} {
		idx := NewIndex()
		var docs []uint32
		for d := uint32(0); d < 3000; d += step(d) {
			if err := idx.Add(d, "word"); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		s := mustSegment(t, idx)
		for probe := uint32(0); probe < 3010; probe++ {
			want, wantOK := s.ordinal(probe)
			// The linear truth.
			lin := 0
			for lin < len(docs) && docs[lin] < probe {
				lin++
			}
			if int(want) != lin || wantOK != (lin < len(docs) && docs[lin] == probe) {
				t.Fatalf("%s: ordinal(%d) = %d %v, want %d", name, probe, want, wantOK, lin)
			}
			for _, from := range []int{0, lin / 2, max(lin-1, 0), lin} {
				got, ok := s.ordinalFrom(probe, from)
				if got != lin || ok != wantOK {
					t.Fatalf("%s: ordinalFrom(%d, %d) = %d %v, want %d %v", name, probe, from, got, ok, lin, wantOK)
				}
			}
		}
	}
}
