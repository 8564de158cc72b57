package chroma_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/importer/chroma"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

var ctx = context.Background()

// realFixture is a real Chroma persist directory under shared/datasets (see its README):
// one collection, 26 records, 384-d vectors in the embeddings queue, an hnswlib segment with
// no element yet.
const realFixture = "chroma/chatbot-rag-local"

// copyFixture copies the real directory, found in shared/datasets above the working
// directory, into a temporary one (the original is read-only and shared), or skips the test
// when it is absent.
func copyFixture(t *testing.T) string {
	t.Helper()
	src := findFixture()
	if src == "" {
		t.Skip("the real Chroma fixture (shared/datasets/" + realFixture + ") is not above the working directory")
	}
	var err error
	dst := filepath.Join(t.TempDir(), "chroma")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// findFixture returns the real directory in shared/datasets above the working directory, or
// "" when there is none.
func findFixture() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "shared", "datasets", realFixture)
		if _, err := os.Stat(filepath.Join(p, chroma.DBFile)); err == nil {
			return p
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
		dir = filepath.Dir(dir)
	}
}

// dirDigest hashes every file's name, mode and content under dir.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + fi.Mode().String() + "\x00"))
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sourceRecord is what the test's own SQL reads: the independent path the import is
// compared with.
type sourceRecord struct {
	id       string
	created  string
	metadata map[string]any // the document included, under chroma:document
}

// readDirect reads every record of the collection named coll straight from chroma.sqlite3
// with one join, opened read-only.
func readDirect(t *testing.T, dir, coll string) map[string]*sourceRecord {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, chroma.DBFile)+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT e.embedding_id, CAST(e.created_at AS TEXT), m.key, m.string_value, m.int_value, m.float_value, m.bool_value
		FROM collections c JOIN segments s ON s.collection = c.id AND s.scope = 'METADATA'
		JOIN embeddings e ON e.segment_id = s.id LEFT JOIN embedding_metadata m ON m.id = e.id
		WHERE c.name = ?`, coll)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]*sourceRecord{}
	for rows.Next() {
		var id, created string
		var key, s sql.NullString
		var i, b sql.NullInt64
		var f sql.NullFloat64
		if err := rows.Scan(&id, &created, &key, &s, &i, &f, &b); err != nil {
			t.Fatal(err)
		}
		r := out[id]
		if r == nil {
			r = &sourceRecord{id: id, created: created, metadata: map[string]any{}}
			out[id] = r
		}
		if !key.Valid {
			continue
		}
		switch {
		case s.Valid:
			r.metadata[key.String] = s.String
		case i.Valid:
			r.metadata[key.String] = float64(i.Int64)
		case f.Valid:
			r.metadata[key.String] = f.Float64
		case b.Valid:
			r.metadata[key.String] = b.Int64 != 0
		default:
			r.metadata[key.String] = nil
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// directQueueVectors reads the latest vector of every record ID in the queue with SQL.
func directQueueVectors(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, chroma.DBFile)+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, vector FROM embeddings_queue WHERE vector IS NOT NULL ORDER BY seq_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]float32{}
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out[id] = v
	}
	return out
}

func newStore(t *testing.T, dim int, fp string) *memory.Store {
	t.Helper()
	s, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: memorytest.NewHashEmbedder(dim, fp)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRealFixture imports the real directory and compares every record, document, ID and
// metadata value with what the test's own SQL reads from it; the directory is left
// byte-for-byte as it was.
func TestRealFixture(t *testing.T) {
	dir := copyFixture(t)
	before := dirDigest(t, dir)
	const coll = "knowledge_base_amigo_phi4"
	want := readDirect(t, dir, coll)
	if len(want) != 26 {
		t.Fatalf("the fixture has %d records, its README says 26", len(want))
	}

	db, err := chroma.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := db.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != 1 || cols[0].Name != coll || cols[0].Dimension != 384 || cols[0].Records != 26 || cols[0].Space != "l2" || cols[0].Model != "" {
		t.Fatalf("collections: %+v", cols)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newStore(t, 64, "hash-64")
	ms, rep, err := db.Read(ctx, chroma.Options{Model: importer.Model{Fingerprint: "hash-64", Dim: 64}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{Batch: 7}, rep); err != nil {
		t.Fatal(err)
	}
	if rep.Records != 26 || rep.Memories != 26 || rep.Written != 26 || rep.Existing != 0 || len(rep.Dropped) != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if rep.Vectors.Kept != 0 || rep.Vectors.Embedded != 26 {
		t.Fatalf("vectors: %+v (a 64-d store cannot take 384-d vectors)", rep.Vectors)
	}
	if n, err := s.Count(ctx, nil); err != nil || n != 26 {
		t.Fatalf("store holds %d memories (%v), want 26", n, err)
	}

	seenKeys := map[string]int{}
	for id, src := range want {
		got, err := s.Get(ctx, importer.ID("chroma", cols[0].ID, id))
		if err != nil || len(got) != 1 {
			t.Fatalf("record %s: %v, %d memories", id, err, len(got))
		}
		m := got[0]
		if m.Text != src.metadata[chroma.DocumentKey] {
			t.Errorf("record %s: text %.60q, document %.60q", id, m.Text, src.metadata[chroma.DocumentKey])
		}
		if m.Session != coll || m.Metadata[chroma.IDKey] != id {
			t.Errorf("record %s: session %q, chroma_id %v", id, m.Session, m.Metadata[chroma.IDKey])
		}
		if c := m.Created.UTC().Format("2006-01-02 15:04:05"); c != src.created || !m.Updated.Equal(m.Created) {
			t.Errorf("record %s: created %s updated %s, source %s", id, m.Created, m.Updated, src.created)
		}
		// Every source value is somewhere: a field, the metadata, or the unmapped report.
		for k, v := range src.metadata {
			seenKeys[k]++
			switch {
			case k == chroma.DocumentKey:
			case k == "source":
				if m.Source != v {
					t.Errorf("record %s: source %q, want %q", id, m.Source, v)
				}
			case rep.Unmapped[k] != nil:
			default:
				if m.Metadata[k] != v {
					t.Errorf("record %s: metadata %s = %#v, source %#v", id, k, m.Metadata[k], v)
				}
			}
		}
		for k := range m.Metadata {
			if _, ok := src.metadata[k]; !ok && k != chroma.IDKey {
				t.Errorf("record %s: metadata %s is in no source key", id, k)
			}
		}
	}
	// The report counts each key's records where they went.
	for k, n := range seenKeys {
		total := 0
		for _, c := range rep.Fields[k] {
			total += c
		}
		for _, c := range rep.Unmapped[k] {
			total += c
		}
		if total != n {
			t.Errorf("key %s: %d values in the source, the report accounts for %d (%v %v)", k, n, total, rep.Fields[k], rep.Unmapped[k])
		}
	}
	if len(seenKeys) != 10 || rep.UnmappedTotal() != 0 {
		t.Errorf("%d keys, %d unmapped: %+v", len(seenKeys), rep.UnmappedTotal(), rep.Unmapped)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum)
	t.Logf("summary:\n%s", sum.String())
	if after := dirDigest(t, dir); after != before {
		t.Fatal("the import changed the source directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("the source directory holds %d entries after the import, want 2", len(entries))
	}
}

// TestRealFixtureVectors keeps the queue's vectors in a store of their dimension: each
// memory's vector is the source's, normalized.
func TestRealFixtureVectors(t *testing.T) {
	dir := copyFixture(t)
	direct := directQueueVectors(t, dir)
	db, err := chroma.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newStore(t, 384, "all-MiniLM-L6-v2-hash")
	for _, tc := range []struct {
		policy importer.VectorPolicy
		kept   int
	}{{importer.VectorsAuto, 0}, {importer.VectorsReembed, 0}, {importer.VectorsKeep, 26}} {
		ms, rep, err := db.Read(ctx, chroma.Options{Vectors: tc.policy, Model: importer.Model{Fingerprint: "all-MiniLM-L6-v2-hash", Dim: 384}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Vectors.Kept != tc.kept || rep.Vectors.Embedded != 26-tc.kept || rep.Vectors.From["queue"] != tc.kept {
			t.Fatalf("%v: vectors %+v", tc.policy, rep.Vectors)
		}
		if tc.kept == 0 {
			continue
		}
		if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{}, rep); err != nil {
			t.Fatal(err)
		}
		if len(direct) != 26 {
			t.Fatalf("%d queue vectors", len(direct))
		}
		for _, m := range ms {
			want := direct[m.Metadata[chroma.IDKey].(string)]
			if !slices.Equal(m.Vector, want) {
				t.Fatalf("%s: vector differs from the queue's", m.ID)
			}
			got, err := s.Get(ctx, m.ID)
			if err != nil || len(got) != 1 {
				t.Fatal(err)
			}
			var norm float64
			for _, x := range want {
				norm += float64(x) * float64(x)
			}
			norm = math.Sqrt(norm)
			for i, x := range got[0].Vector {
				if math.Abs(float64(x)-float64(want[i])/norm) > 1e-6 {
					t.Fatalf("%s: stored vector[%d] = %v, source/|source| = %v", m.ID, i, x, float64(want[i])/norm)
				}
			}
		}
	}
}

// TestRealHNSWHeader reads the real header.bin: an index of 1000 slots of 384-d vectors
// with no element persisted yet (Chroma writes the first batch at 100 records).
func TestRealHNSWHeader(t *testing.T) {
	dir := copyFixture(t)
	b, err := os.ReadFile(filepath.Join(dir, "bb4b3481-fda3-4ffb-8612-0b549b55ba2b", "header.bin"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := chroma.ParseHNSWHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Dim() != 384 || h.MaxElements != 1000 || h.ElementCount != 0 || h.SizePerElement != 1676 || h.M != 16 || h.MaxM0 != 32 || h.EfConstruction != 100 {
		t.Fatalf("header: %+v", h)
	}
}

// TestRealFixtureResume interrupts an import of the real directory part way (the context is
// cancelled inside the third batch's write), then runs it again: every record is in the
// store exactly once, and a third run writes nothing.
func TestRealFixtureResume(t *testing.T) {
	dir := copyFixture(t)
	db, err := chroma.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, rep, err := db.Read(ctx, chroma.Options{Model: importer.Model{Fingerprint: "hash-64", Dim: 64}})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, 64, "hash-64")
	cctx, cancel := context.WithCancel(ctx)
	tgt := &cancelling{Target: importer.StoreTarget{Store: s}, after: 2, cancel: cancel}
	if err := importer.Write(cctx, tgt, ms, importer.WriteOptions{Batch: 5}, rep); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted import: %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 10 || rep.Written != 10 {
		t.Fatalf("after the interruption: %d memories, %d written", n, rep.Written)
	}
	for run, want := range []struct{ written, existing int }{{16, 10}, {0, 26}} {
		r := importer.NewReport("again")
		if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{Batch: 5}, r); err != nil {
			t.Fatal(err)
		}
		if r.Written != want.written || r.Existing != want.existing {
			t.Fatalf("run %d: wrote %d, found %d", run+2, r.Written, r.Existing)
		}
	}
	count := map[string]int{}
	s.Scan(ctx, nil, func(m memory.Memory) error { count[m.Metadata[chroma.IDKey].(string)]++; return nil })
	if len(count) != 26 {
		t.Fatalf("%d records in the store", len(count))
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("%s: %d copies", id, n)
		}
	}
}

// cancelling cancels the context inside its after+1-th Import, before writing.
type cancelling struct {
	importer.Target
	after, calls int
	cancel       func()
}

func (c *cancelling) Import(ctx context.Context, ms []memory.Memory) error {
	c.calls++
	if c.calls > c.after {
		c.cancel()
	}
	return c.Target.Import(ctx, ms)
}
