package engine

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// TestOpenToFirstQuery measures what issue 12 asks of the lazy checksum
// verification: Open to the first 10-NN search of a store of
// ENGRAM_FIRSTQUERY_N records (1000000 for the figure) of
// ENGRAM_FIRSTQUERY_DIM (1024) dimensions, warm page cache, in wall and
// CPU time, with the bytes it verified. Building a real HNSW graph of 1M
// nodes takes hours on two cores, so the segment is written by
// writeSyntheticStore: real records, texts, keyword index and columns
// through the real segment writer, with a graph of random neighbours (what
// is verified depends on the bytes a search touches, not on the graph's
// quality). ENGRAM_FIRSTQUERY_DIR keeps the store between runs.
func TestOpenToFirstQuery(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ENGRAM_FIRSTQUERY_N"))
	if n == 0 {
		t.Skip("set ENGRAM_FIRSTQUERY_N=1000000 to measure")
	}
	dim := 1024
	if s := os.Getenv("ENGRAM_FIRSTQUERY_DIM"); s != "" {
		dim, _ = strconv.Atoi(s)
	}
	dir := os.Getenv("ENGRAM_FIRSTQUERY_DIR")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "s")
	}
	opts := Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1}
	if _, err := os.Stat(filepath.Join(dir, "seg", segName(1))); err != nil {
		start := time.Now()
		writeSyntheticStore(t, dir, n, dim, opts)
		t.Logf("wrote %d records of dim %d in %v", n, dim, time.Since(start).Round(time.Second))
	}
	if os.Getenv("ENGRAM_FIRSTQUERY_CHECK") != "" {
		db := openT(t, dir, opts)
		start := time.Now()
		if err := db.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
		t.Logf("Check passed in %v", time.Since(start).Round(time.Millisecond))
		db.Close()
	}
	r := rand.New(rand.NewPCG(7, 8))
	for run := range 4 {
		size := warm(t, dir)
		q := synthVec(uint64(r.IntN(n)), dim) // a stored vector: its record is the top hit
		w0, c0 := time.Now(), cpuTime()
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		w1, c1 := time.Now(), cpuTime()
		c, err := db.Collection("bench")
		if err != nil {
			t.Fatal(err)
		}
		hits, err := c.Search(ctx, SearchRequest{Vector: q, K: 10})
		if err != nil || len(hits) != 10 {
			t.Fatalf("first search: %d hits, %v", len(hits), err)
		}
		w2, c2 := time.Now(), cpuTime()
		if _, err := c.Search(ctx, SearchRequest{Vector: synthVec(uint64(r.IntN(n)), dim), K: 10}); err != nil {
			t.Fatal(err)
		}
		w3, c3 := time.Now(), cpuTime()
		var chunks, sections int64
		for _, s := range c.segs {
			if t := s.sf.chunks; t != nil {
				set := 0
				for i := range t.ok {
					set += bits.OnesCount64(t.ok[i].Load())
				}
				chunks += int64(set) << t.shift
				sections += int64(len(s.sf.sections[secChunks]))
			}
			for _, k := range recordSections {
				sections += int64(len(s.sf.sections[k]))
			}
		}
		db.Close()
		// The same query on a fresh open, split: the whole record
		// sections' checksums alone, then the search with the graph's
		// chunk checks turned off (the search's own cost on this graph).
		db, err = Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = db.Collection("bench")
		v0, vc0 := time.Now(), cpuTime()
		for _, s := range c.segs {
			if err := s.need(recordSections...); err != nil {
				t.Fatal(err)
			}
			s.view.SetReadVerifier(nil)
		}
		v1, vc1 := time.Now(), cpuTime()
		if _, err := c.Search(ctx, SearchRequest{Vector: q, K: 10}); err != nil {
			t.Fatal(err)
		}
		v2, vc2 := time.Now(), cpuTime()
		db.Close()
		t.Logf("run %d: split on a fresh open: record sections verified whole %v (cpu %v); the first query without chunk checks %v (cpu %v)", run,
			v1.Sub(v0).Round(time.Microsecond), (vc1 - vc0).Round(time.Microsecond), v2.Sub(v1).Round(time.Microsecond), (vc2 - vc1).Round(time.Microsecond))
		t.Logf("run %d: %d segment bytes; first query verified %.1f MB of graph chunks and %.1f MB of whole sections (chunk table, ids, columns, text, times)",
			run, size, float64(chunks)/1e6, float64(sections)/1e6)
		t.Logf("run %d: open %v (cpu %v); first 10-NN query %v (cpu %v); open to first answer %v (cpu %v); second query %v (cpu %v)", run,
			w1.Sub(w0).Round(time.Microsecond), (c1 - c0).Round(time.Microsecond),
			w2.Sub(w1).Round(time.Microsecond), (c2 - c1).Round(time.Microsecond),
			w2.Sub(w0).Round(time.Microsecond), (c2 - c0).Round(time.Microsecond),
			w3.Sub(w2).Round(time.Microsecond), (c3 - c2).Round(time.Microsecond))
	}
}

// warm reads every segment file once so the runs measure a warm page
// cache, and returns their total size.
func warm(t *testing.T, dir string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	var size int64
	buf := make([]byte, 4<<20)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			k, err := f.Read(buf)
			size += int64(k)
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return size
}

// synthVec is node i's vector: deterministic, uniform in [-1, 1) per
// component, L2-normalized (the stored form under Cosine).
func synthVec(i uint64, dim int) []float32 {
	r := rand.New(rand.NewPCG(i, 0x5eed))
	v := make([]float32, dim)
	var ss float64
	for j := range v {
		x := float32(int32(r.Uint32())) / (1 << 31)
		v[j] = x
		ss += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(ss))
	for j := range v {
		v[j] *= inv
	}
	return v
}

// writeSyntheticStore writes a store holding one collection "bench" with
// one segment of n records (benchRecord's IDs, texts and metadata, vectors
// synthVec) whose graph has random neighbours: every section is written
// by buildSections and writeSegmentFile except the graph, which is the
// hnsw layout (docs/format/hnsw.md) of levels drawn as hnsw draws them
// (P(level ≥ l) = M^-l) and lists of random ids of the right levels, and
// the record checksums, computed from synthVec. The file passes Check.
func writeSyntheticStore(t *testing.T, dir string, n, dim int, opts Options) {
	t.Helper()
	const M = 16
	cfg := CollectionConfig{Name: "bench", Dim: dim, Metric: quant.Cosine}
	db := openT(t, dir, opts) // an empty store; the manifest gets the collection below
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	o := opts.withDefaults()
	m, err := newMemtable(cfg, &o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rec := benchRecord(nil, i)
		if err := m.kw.Add(uint32(i), rec.Text); err != nil {
			t.Fatal(err)
		}
		rec.Vector = nil
		m.recs = append(m.recs, memRec{rec: rec})
		m.byID[rec.ID] = uint32(i)
		m.live++
	}
	var sample []float32
	for i := range min(n, 2000) {
		sample = append(sample, synthVec(uint64(i), dim)...)
	}
	qz, err := quant.Train(sample, dim, quant.Cosine, quant.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pass 1: codes, the vectors' checksum, the record checksums.
	codes := make([]int8, n*dim)
	vecCRC := uint32(0)
	sums := make([]uint32, n)
	for i := range n {
		v := synthVec(uint64(i), dim)
		qz.Encode(codes[i*dim:(i+1)*dim], v)
		vecCRC = crc32.Update(vecCRC, castagnoli, f32bytes(v))
		sums[i] = recordSum(&m.recs[i].rec, v)
	}
	// The graph's structure.
	r := rand.New(rand.NewPCG(1, 2))
	levels := make([]uint8, n)
	byLevel := [][]uint32{nil}
	top, ep := 0, uint32(0)
	for i := range n {
		l := min(int(-math.Log(1-r.Float64())/math.Log(M)), 16)
		levels[i] = uint8(l)
		for len(byLevel) <= l {
			byLevel = append(byLevel, nil)
		}
		for k := 1; k <= l; k++ {
			byLevel[k] = append(byLevel[k], uint32(i))
		}
		if l > top || i == 0 {
			top, ep = l, uint32(i)
		}
	}
	stride0 := 1 + 2*M
	level0 := make([]uint32, n*stride0)
	for i := range n {
		lst := level0[i*stride0:]
		lst[0] = uint32(min(2*M, n-1))
		for k := 1; k <= int(lst[0]); k++ {
			nb := uint32(r.IntN(n - 1))
			if nb >= uint32(i) {
				nb++
			}
			lst[k] = nb
		}
	}
	upperOff := make([]uint32, n)
	var upper []uint32
	for i := range n {
		upperOff[i] = uint32(len(upper))
		for l := 1; l <= int(levels[i]); l++ {
			peers := byLevel[l]
			lst := make([]uint32, M+1)
			lst[0] = uint32(min(M, len(peers)-1))
			for k := 1; k <= int(lst[0]); k++ {
				nb := peers[r.IntN(len(peers))]
				for nb == uint32(i) {
					nb = peers[r.IntN(len(peers))]
				}
				lst[k] = nb
			}
			upper = append(upper, lst...)
		}
	}
	flags := make([]uint32, n)
	for i := range flags {
		flags[i] = 1 // present
	}
	graph := func(w io.Writer) error {
		parts := [7][]byte{asBytes(codes), nil, u32bytes(level0), levels, u32bytes(upperOff), u32bytes(upper), u32bytes(flags)}
		sizes := [7]uint64{uint64(n * dim), uint64(4 * n * dim)}
		for i := 2; i < 7; i++ {
			sizes[i] = uint64(len(parts[i]))
		}
		head := make([]byte, 256)
		le := binary.LittleEndian
		copy(head, "ENGHNSW\x00")
		le.PutUint32(head[8:], 1)
		le.PutUint32(head[16:], uint32(dim))
		le.PutUint32(head[20:], M)
		le.PutUint32(head[24:], uint32(n))
		le.PutUint32(head[28:], ep)
		le.PutUint32(head[32:], uint32(top+1))
		qb, _ := qz.MarshalBinary()
		copy(head[36:52], qb)
		le.PutUint32(head[52:], 7)
		off := uint64(256)
		for i := range 7 {
			e := head[64+24*i:]
			le.PutUint64(e, off)
			le.PutUint64(e[8:], sizes[i])
			c := vecCRC
			if i != 1 {
				c = crc32.Checksum(parts[i], castagnoli)
			}
			le.PutUint32(e[16:], c)
			off = (off + sizes[i] + 63) &^ 63
		}
		c := crc32.Checksum(head[:60], castagnoli)
		le.PutUint32(head[60:], crc32.Update(c, castagnoli, head[64:64+7*24]))
		pos := uint64(0)
		write := func(b []byte) error { _, err := w.Write(b); pos += uint64(len(b)); return err }
		if err := write(head); err != nil {
			return err
		}
		var pad [64]byte
		for i := range 7 {
			if i == 1 {
				for j := range n {
					if err := write(f32bytes(synthVec(uint64(j), dim))); err != nil {
						return err
					}
				}
			} else if err := write(parts[i]); err != nil {
				return err
			}
			if p := (pos+63)&^63 - pos; p > 0 && i < 6 {
				if err := write(pad[:p]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	sumSec := func(w io.Writer) error {
		var e enc
		e.u64(uint64(n))
		for _, s := range sums {
			e.u32(s)
		}
		if n%2 == 1 {
			e.u32(0)
		}
		_, err := w.Write(e.b)
		return err
	}
	st, err := loadManifests(o.FS, dir)
	if err != nil || st.m == nil {
		t.Fatalf("manifest: %v", err)
	}
	man := st.m
	file := man.nextFile
	secs := buildSections(cfg, m, o.NamespaceField, segWrite{file: file, lsn: wal.LSN(man.checkpoint)})
	for i := range secs {
		switch secs[i].kind {
		case secGraph:
			secs[i].write = graph
		case secSums:
			secs[i].write = sumSec
		}
	}
	size, err := writeSegmentFile(o.FS, filepath.Join(dir, "seg"), segName(file), secs)
	if err != nil {
		t.Fatal(err)
	}
	man.nextFile++
	man.colls = append(man.colls, manifestColl{cfg: cfg, segs: []manifestSeg{{file: file, count: uint32(n), size: uint64(size)}}})
	if err, cerr := writeManifest(o.FS, dir, st.maxNum+1, man); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
}

func f32bytes(v []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)) }

func u32bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func asBytes(v []int8) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)) }
