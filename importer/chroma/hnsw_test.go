package chroma_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/importer/chroma"
)

// element is one vector of a test index.
type element struct {
	label   uint64
	vec     []float32
	deleted bool
}

// writeHNSW writes a persisted index the way chroma-core/hnswlib's initPersistentIndex and
// persistDirty leave it: header.bin, data_level0.bin and length.bin sized for maxElements,
// link_lists.bin with an empty list per element. A cosine index stores normalized vectors
// and their norms.
func writeHNSW(t *testing.T, dir string, dim int, cosine bool, maxElements int, els []element) {
	t.Helper()
	for name, b := range hnswFiles(dim, cosine, maxElements, els) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// hnswFiles returns the files writeHNSW writes, by name.
func hnswFiles(dim int, cosine bool, maxElements int, els []element) map[string][]byte {
	const maxM0, maxM, m = 32, 16, 16
	offsetData := uint64(4 + 4*maxM0)
	labelOffset := offsetData + uint64(4*dim)
	size := labelOffset + 8
	h := make([]byte, chroma.HNSWHeaderSize)
	le := binary.LittleEndian
	le.PutUint32(h[0:], chroma.HNSWVersion)
	le.PutUint64(h[4:], 0) // offsetLevel0
	le.PutUint64(h[12:], uint64(maxElements))
	le.PutUint64(h[20:], uint64(len(els)))
	le.PutUint64(h[28:], size)
	le.PutUint64(h[36:], labelOffset)
	le.PutUint64(h[44:], offsetData)
	le.PutUint32(h[52:], 0)     // maxlevel
	le.PutUint32(h[56:], 0)     // enterpoint
	le.PutUint64(h[60:], maxM)  // maxM
	le.PutUint64(h[68:], maxM0) // maxM0
	le.PutUint64(h[76:], m)     // M
	le.PutUint64(h[84:], math.Float64bits(1/math.Log(m)))
	le.PutUint64(h[92:], 100) // ef_construction
	data := make([]byte, uint64(maxElements)*size)
	lengths := make([]byte, 4*maxElements)
	var links []byte
	for i, e := range els {
		el := data[uint64(i)*size:]
		if e.deleted {
			el[2] |= 0x01
		}
		norm := float32(1)
		if cosine {
			var s float64
			for _, x := range e.vec {
				s += float64(x) * float64(x)
			}
			norm = float32(math.Sqrt(s))
			le.PutUint32(lengths[4*i:], math.Float32bits(norm))
		}
		for j, x := range e.vec {
			le.PutUint32(el[offsetData+uint64(4*j):], math.Float32bits(x/norm))
		}
		le.PutUint64(el[labelOffset:], e.label)
		links = le.AppendUint32(links, 0)
	}
	return map[string][]byte{"header.bin": h, "data_level0.bin": data, "length.bin": lengths, "link_lists.bin": links}
}

// TestHNSWVectors reads vectors from both places Chroma keeps them: the hnswlib files for
// records whose queue entries were purged, the queue for the rest and for a record written
// again since; deleted elements are skipped; a cosine index's vectors are scaled back.
func TestHNSWVectors(t *testing.T) {
	for _, tc := range []struct {
		schema schema
		pickle string
		cosine bool
	}{
		{schemas[4], "persistent_data.pickle", true}, // Chroma 0.6 (Python)
		{schemas[6], "idmap_rust.pickle", false},     // Chroma 1.x (Rust)
	} {
		t.Run(tc.schema.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "chroma")
			db := buildSchema(t, dir, tc.schema)
			f := &fixture{t: t, db: db}
			const collID = "33333333-3333-3333-3333-333333333333"
			space := "l2"
			if tc.cosine {
				space = "cosine"
			}
			f.collection(collID, "vecs", 4, `{"hnsw": {"space": "`+space+`"}, "embedding_function": {"type": "known", "name": "sentence_transformer", "config": {"model_name": "all-MiniLM-L6-v2"}}}`, nil)
			src := map[string][]float32{
				"rec-1": {1, 2, 3, 4}, "rec-2": {-1, 0.5, 0, 2}, "rec-3": {3, 3, 3, 3}, "rec-6": {0, 0, 1, 0},
			}
			for _, id := range []string{"rec-1", "rec-2", "rec-3", "rec-5", "rec-6"} {
				f.record(collID, id, t0, map[string]any{chroma.DocumentKey: "text of " + id})
			}
			// The queue after Chroma purged what the index consumed: rec-3 written again, rec-5 new.
			f.write(collID, 2, "rec-3", t2, []float32{9, 8, 7, 6})
			f.write(collID, 0, "rec-5", t2, []float32{5, 5, 5, 5})
			db.Close()
			seg := filepath.Join(dir, segID(collID, "VECTOR"))
			if err := os.MkdirAll(seg, 0o700); err != nil {
				t.Fatal(err)
			}
			writeHNSW(t, seg, 4, tc.cosine, 10, []element{
				{label: 1, vec: src["rec-1"]}, {label: 2, vec: src["rec-2"]}, {label: 3, vec: src["rec-3"]},
				{label: 4, vec: []float32{7, 7, 7, 7}, deleted: true}, {label: 5, vec: src["rec-6"], deleted: true},
			})
			pb, err := os.ReadFile(filepath.Join("testdata", tc.pickle))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(seg, "index_metadata.pickle"), pb, 0o600); err != nil {
				t.Fatal(err)
			}

			d, err := chroma.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			cols, err := d.Collections(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hv, err := d.HNSWVectors(cols[0], map[string]bool{"rec-1": true, "rec-2": true, "rec-3": true, "rec-6": true})
			if err != nil {
				t.Fatal(err)
			}
			if len(hv) != 3 || hv["rec-6"] != nil {
				t.Fatalf("hnsw vectors of %d records (%v), want rec-1..3 (rec-6's element is deleted)", len(hv), hv)
			}
			for id, v := range hv {
				if !close(v, src[id]) {
					t.Errorf("%s: hnsw vector %v, written %v", id, v, src[id])
				}
			}

			s := newStore(t, 4, "sentence-transformers/all-MiniLM-L6-v2 (test)")
			model := importer.Model{Fingerprint: "sentence-transformers/all-MiniLM-L6-v2 (test)", Dim: 4}
			ms, rep, err := d.Read(ctx, chroma.Options{Model: model}) // auto: the named model matches
			if err != nil {
				t.Fatal(err)
			}
			if rep.Vectors.Kept != 4 || rep.Vectors.From["hnsw"] != 2 || rep.Vectors.From["queue"] != 2 || rep.Vectors.Embedded != 1 {
				t.Fatalf("vectors: %+v", rep.Vectors)
			}
			want := map[string][]float32{"rec-1": src["rec-1"], "rec-2": src["rec-2"], "rec-3": {9, 8, 7, 6}, "rec-5": {5, 5, 5, 5}, "rec-6": nil}
			for _, m := range ms {
				id := m.Metadata[chroma.IDKey].(string)
				if w := want[id]; (w == nil) != (m.Vector == nil) || w != nil && !close(m.Vector, w) {
					t.Errorf("%s: vector %v, want %v", id, m.Vector, w)
				}
			}
			if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{}, rep); err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				got, err := s.Get(ctx, m.ID)
				if err != nil || len(got) != 1 || len(got[0].Vector) != 4 {
					t.Fatalf("%s: %v %v", m.ID, got, err)
				}
				if m.Vector != nil && !close(got[0].Vector, normalized(m.Vector)) {
					t.Errorf("%s: stored %v, want %v normalized", m.ID, got[0].Vector, m.Vector)
				}
			}

			// A store of another dimension embeds every text again.
			_, rep, err = d.Read(ctx, chroma.Options{Model: importer.Model{Fingerprint: "other", Dim: 8}, Vectors: importer.VectorsKeep})
			if err != nil || rep.Vectors.Kept != 0 || rep.Vectors.Embedded != 5 {
				t.Fatalf("another dimension: %v %+v", err, rep.Vectors)
			}
			// Without the pickle the index's labels name nothing: the queue's vectors are used,
			// the others embedded again, and the report says why.
			if err := os.Remove(filepath.Join(seg, "index_metadata.pickle")); err != nil {
				t.Fatal(err)
			}
			_, rep, err = d.Read(ctx, chroma.Options{Model: model})
			if err != nil || rep.Vectors.Kept != 2 || rep.Vectors.Embedded != 3 || len(rep.Vectors.Why) != 2 {
				t.Fatalf("no pickle: %v %+v", err, rep.Vectors)
			}
		})
	}
}

func normalized(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := math.Sqrt(s)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func close(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5*max(1, math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}

// TestReadIDMap reads both pickles: Python Chroma's PersistentData and the Rust segment's
// dict, with a label past 32 bits (LONG1).
func TestReadIDMap(t *testing.T) {
	for _, name := range []string{"persistent_data.pickle", "idmap_rust.pickle"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		m, err := chroma.ReadIDMap(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := map[uint64]string{1: "rec-1", 2: "rec-2", 3: "rec-3", 5: "rec-6", 1 << 40: "far-label"}
		if m.Dimensionality != 4 || m.TotalElementsAdded != 5 || len(m.LabelToID) != len(want) {
			t.Fatalf("%s: %+v", name, m)
		}
		for l, id := range want {
			if m.LabelToID[l] != id {
				t.Errorf("%s: label %d -> %q, want %q", name, l, m.LabelToID[l], id)
			}
		}
		// Every truncation is an error, never a panic.
		for i := range b {
			if _, err := chroma.ReadIDMap(b[:i]); err == nil {
				t.Fatalf("%s cut at %d bytes read without an error", name, i)
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("."), []byte("\x80\x05N."), []byte("\x80\x02cos\nsystem\n(S'ls'\ntR.")} {
		if _, err := chroma.ReadIDMap(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHNSWHeaderChecks refuses headers whose sizes disagree.
func TestHNSWHeaderChecks(t *testing.T) {
	dir := t.TempDir()
	writeHNSW(t, dir, 8, false, 4, []element{{label: 1, vec: make([]float32, 8)}})
	good, err := os.ReadFile(filepath.Join(dir, "header.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := chroma.ParseHNSWHeader(good); err != nil || h.Dim() != 8 || h.ElementCount != 1 {
		t.Fatalf("%+v %v", h, err)
	}
	le := binary.LittleEndian
	for name, mutate := range map[string]func(b []byte){
		"version":          func(b []byte) { le.PutUint32(b[0:], 2) },
		"count over max":   func(b []byte) { le.PutUint64(b[20:], 5) },
		"no element size":  func(b []byte) { le.PutUint64(b[28:], 0) },
		"huge element":     func(b []byte) { le.PutUint64(b[28:], 1<<40) },
		"label past end":   func(b []byte) { le.PutUint64(b[36:], 1000) },
		"data before link": func(b []byte) { le.PutUint64(b[44:], 8) },
		"odd data":         func(b []byte) { le.PutUint64(b[36:], le.Uint64(b[44:])+6) },
	} {
		b := append([]byte(nil), good...)
		mutate(b)
		if _, err := chroma.ParseHNSWHeader(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := chroma.ParseHNSWHeader(good[:99]); err == nil {
		t.Error("short header accepted")
	}
	// A data file shorter than its elements is an error, not a panic.
	if err := os.Truncate(filepath.Join(dir, "data_level0.bin"), 10); err != nil {
		t.Fatal(err)
	}
	x, err := chroma.OpenHNSW(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Elements(false, func(chroma.HNSWElement) error { return nil }); err == nil {
		t.Error("short data_level0.bin read")
	}
}
