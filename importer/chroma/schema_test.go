package chroma_test

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/importer/chroma"
	"github.com/engramdb/engram/memory"
)

// schema is a Chroma release's database layout: how many of each directory's migrations
// (testdata/migrations, Chroma's own files) it has applied.
type schema struct {
	name                 string
	sysdb, metadb, queue int
}

var schemas = []schema{
	{"0.4.0", 2, 1, 1},     // collections with a topic, no dimension; booleans as integers
	{"0.4.x", 3, 2, 1},     // + collections.dimension, embedding_metadata.bool_value
	{"0.4.15", 4, 3, 1},    // + tenants and databases, the trigram full-text index
	{"0.5.0", 6, 4, 2},     // topics dropped (derived from the collection ID), queue config
	{"0.6", 9, 4, 2},       // + config_json_str, maintenance_log (the real fixture's layout)
	{"py-latest", 9, 5, 2}, // max_seq_id as an integer
	{"1.x", 10, 6, 2},      // Chroma's Rust local mode: list metadata, collection schema
}

// buildSchema creates dir/chroma.sqlite3 by applying the schema's migrations, as Chroma does.
func buildSchema(t *testing.T, dir string, sc schema) *sql.DB {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, chroma.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, m := range []struct {
		dir string
		n   int
	}{{"embeddings_queue", sc.queue}, {"sysdb", sc.sysdb}, {"metadb", sc.metadb}} {
		files, err := filepath.Glob(filepath.Join("testdata", "migrations", m.dir, "*.sql"))
		if err != nil || len(files) < m.n {
			t.Fatalf("migrations/%s: %d files (%v), want %d", m.dir, len(files), err, m.n)
		}
		sort.Strings(files)
		for _, f := range files[:m.n] {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(string(b)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	return db
}

// insert writes a row with the values whose columns the table has.
func insert(t *testing.T, db *sql.DB, table string, vals map[string]any) {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	var args []any
	for rows.Next() {
		var c string
		rows.Scan(&c)
		if v, ok := vals[c]; ok {
			cols = append(cols, c)
			args = append(args, v)
		}
	}
	rows.Close()
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func hasColumn(t *testing.T, db *sql.DB, table, col string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, col).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// fixture writes records the way Chroma's segments do.
type fixture struct {
	t   *testing.T
	db  *sql.DB
	row int
	seq int
}

const (
	defaultDB = "00000000-0000-0000-0000-000000000000"
	t0        = "2025-01-02 03:04:05"
	t1        = "2025-01-02 03:04:06"
	t2        = "2025-02-03 04:05:06"
)

func topic(collID string) string { return "persistent://default/default/" + collID }

func (f *fixture) collection(id, name string, dim int, config string, md map[string]any) {
	insert(f.t, f.db, "collections", map[string]any{"id": id, "name": name, "topic": topic(id), "dimension": dim,
		"database_id": defaultDB, "config_json_str": config})
	for k, v := range md {
		vals := map[string]any{"collection_id": id, "key": k}
		switch v := v.(type) {
		case string:
			vals["str_value"] = v
		case int:
			vals["int_value"] = v
		}
		insert(f.t, f.db, "collection_metadata", vals)
	}
	for _, scope := range []string{"METADATA", "VECTOR"} {
		typ := "urn:chroma:segment/metadata/sqlite"
		if scope == "VECTOR" {
			typ = "urn:chroma:segment/vector/hnsw-local-persisted"
		}
		insert(f.t, f.db, "segments", map[string]any{"id": segID(id, scope), "type": typ, "scope": scope, "collection": id})
	}
}

func segID(collID, scope string) string {
	return collID[:len(collID)-4] + map[string]string{"METADATA": "aaaa", "VECTOR": "bbbb"}[scope]
}

// record writes one record to the collection's metadata segment; a nil value writes a row
// with no value, a []any value list rows (Chroma 1.x).
func (f *fixture) record(collID, id, created string, md map[string]any) {
	f.row++
	seq := make([]byte, 8)
	binary.BigEndian.PutUint64(seq, uint64(f.row))
	insert(f.t, f.db, "embeddings", map[string]any{"id": f.row, "segment_id": segID(collID, "METADATA"), "embedding_id": id,
		"seq_id": seq, "created_at": created})
	boolCol := hasColumn(f.t, f.db, "embedding_metadata", "bool_value")
	for k, v := range md {
		vals := map[string]any{"id": f.row, "key": k}
		table := "embedding_metadata"
		switch v := v.(type) {
		case string:
			vals["string_value"] = v
		case int:
			vals["int_value"] = v
		case float64:
			vals["float_value"] = v
		case bool:
			if boolCol {
				vals["bool_value"] = v
			} else {
				vals["int_value"] = v // Chroma before metadb 2
			}
		case []any:
			for _, x := range v {
				insert(f.t, f.db, "embedding_metadata_array", map[string]any{"id": f.row, "key": k, "string_value": x})
			}
			continue
		}
		insert(f.t, f.db, table, vals)
	}
}

// write appends to the embeddings queue.
func (f *fixture) write(collID string, op int, id, at string, vec []float32) {
	f.seq++
	var blob []byte
	var enc any
	if vec != nil {
		blob = make([]byte, 4*len(vec))
		for i, x := range vec {
			binary.LittleEndian.PutUint32(blob[4*i:], math.Float32bits(x))
		}
		enc = "FLOAT32"
	}
	insert(f.t, f.db, "embeddings_queue", map[string]any{"seq_id": f.seq, "created_at": at, "operation": op,
		"topic": topic(collID), "id": id, "vector": blob, "encoding": enc, "metadata": nil})
}

const (
	notesID = "11111111-1111-1111-1111-111111111111"
	docsID  = "22222222-2222-2222-2222-222222222222"
)

// fill writes two collections: notes (four records, one without a document) and docs (one).
func fill(t *testing.T, db *sql.DB, lists bool) {
	f := &fixture{t: t, db: db}
	f.collection(notesID, "notes", 3, `{"hnsw_configuration": {"space": "l2"}, "embedding_function": {"type": "known", "name": "default", "config": {}}}`, nil)
	f.collection(docsID, "docs", 3, "", map[string]any{"hnsw:space": "cosine"})
	n1 := map[string]any{chroma.DocumentKey: "Alice prefers green tea.", "source": "chat", "tags": "drinks, tea",
		"importance": 0.8, "user": "alice", "lang": "en", "count": 3, "score": 0.25, "pinned": true}
	n2 := map[string]any{chroma.DocumentKey: "Bob takes his coffee black.", "user": "bob", "blob": strings.Repeat("x", 5000)}
	if lists {
		n1["labels"] = []any{"x", "y"}
		n2["tags"] = []any{"a", "b"}
	}
	f.record(notesID, "n1", t0, n1)
	f.record(notesID, "n2", t0, n2)
	f.record(notesID, "n3", t0, map[string]any{"lang": "en"})
	f.record(notesID, "n4", t0, map[string]any{chroma.DocumentKey: "A note with an empty value.", "empty": nil})
	f.record(docsID, "d1", t0, map[string]any{chroma.DocumentKey: "Doc one.", "source": "./a.pdf"})
	f.write(notesID, 0, "n1", t1, []float32{1, 0, 0})
	f.write(notesID, 0, "n2", t1, []float32{0, 1, 0})
	f.write(notesID, 0, "gone", t1, []float32{0, 0, 1})
	f.write(docsID, 0, "d1", t1, []float32{0, 0, 2})
	f.write(notesID, 1, "n1", t2, []float32{0.5, 0.5, 0})
	f.write(notesID, 3, "gone", t2, nil)
}

func mustTime(s string) time.Time {
	t, err := importer.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestSchemas reads every Chroma layout: the same records come back from each, field by
// field, and the report accounts for every value.
func TestSchemas(t *testing.T) {
	for _, sc := range schemas {
		t.Run(sc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "chroma")
			db := buildSchema(t, dir, sc)
			lists := sc.metadb >= 6
			fill(t, db, lists)
			db.Close()

			d, err := chroma.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			cols, err := d.Collections(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(cols) != 2 || cols[0].Name != "docs" || cols[1].Name != "notes" || cols[1].Records != 4 || cols[0].Records != 1 {
				t.Fatalf("collections: %+v", cols)
			}
			wantDim := 3
			if sc.sysdb < 3 {
				wantDim = 0 // not recorded before sysdb 3
			}
			if cols[1].Dimension != wantDim || cols[0].Space != "cosine" {
				t.Fatalf("collections: %+v", cols)
			}
			if sc.sysdb >= 7 && (cols[1].Model != "all-MiniLM-L6-v2" || cols[1].Space != "l2") {
				t.Fatalf("notes: model %q space %q from its configuration", cols[1].Model, cols[1].Space)
			}

			model := importer.Model{Fingerprint: "hash-3", Dim: 3}
			if _, _, err := d.Read(ctx, chroma.Options{Model: model}); !errors.Is(err, memory.ErrInvalidInput) || !strings.Contains(err.Error(), "notes (4 records)") {
				t.Fatalf("two collections and none named: %v", err)
			}
			if _, _, err := d.Read(ctx, chroma.Options{Model: model, Collections: []string{"nosuch"}}); !errors.Is(err, memory.ErrInvalidInput) {
				t.Fatalf("unknown collection: %v", err)
			}
			if got, err := chroma.Select(cols, []string{notesID, "notes", "docs"}); err != nil || len(got) != 2 || got[0].Name != "notes" {
				t.Fatalf("by ID and name: %v %v", got, err)
			}
			ms, rep, err := d.Read(ctx, chroma.Options{Model: model, Collections: []string{"notes"}, SessionKey: "user", Vectors: importer.VectorsKeep})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Records != 4 || rep.Memories != 3 || rep.Dropped["no text"] != 1 {
				t.Fatalf("report: %+v", rep)
			}
			byID := map[string]memory.Memory{}
			for _, m := range ms {
				byID[m.Metadata[chroma.IDKey].(string)] = m
				if m.ID != importer.ID("chroma", notesID, m.Metadata[chroma.IDKey].(string)) {
					t.Errorf("%s: ID %s is not the derived one", m.Metadata[chroma.IDKey], m.ID)
				}
			}
			pinned := any(true)
			if sc.metadb < 2 {
				pinned = 1.0 // Chroma 0.4.0 stored booleans as integers
			}
			n1 := byID["n1"]
			wantMD := map[string]any{chroma.IDKey: "n1", "lang": "en", "count": 3.0, "score": 0.25, "pinned": pinned}
			if n1.Text != "Alice prefers green tea." || n1.Session != "alice" || n1.Source != "chat" ||
				!slices.Equal(n1.Tags, []string{"drinks", "tea"}) || n1.Importance != 0.8 ||
				!n1.Created.Equal(mustTime(t0)) || !n1.Updated.Equal(mustTime(t2)) || !mapsEqual(n1.Metadata, wantMD) {
				t.Errorf("n1: %+v", n1)
			}
			if !slices.Equal(n1.Vector, []float32{0.5, 0.5, 0}) {
				t.Errorf("n1: vector %v, want the update's", n1.Vector)
			}
			n2 := byID["n2"]
			wantTags := []string(nil)
			if lists {
				wantTags = []string{"a", "b"}
			}
			if n2.Session != "bob" || !slices.Equal(n2.Tags, wantTags) || !mapsEqual(n2.Metadata, map[string]any{chroma.IDKey: "n2"}) ||
				!slices.Equal(n2.Vector, []float32{0, 1, 0}) || !n2.Updated.Equal(mustTime(t1)) {
				t.Errorf("n2: %+v", n2)
			}
			n4 := byID["n4"]
			if n4.Session != "notes" || n4.Vector != nil || !mapsEqual(n4.Metadata, map[string]any{chroma.IDKey: "n4"}) {
				t.Errorf("n4: %+v", n4)
			}
			wantUnmapped := map[string]map[string]int{"blob": {"string over 4 KiB": 1}, "empty": {"null value": 1}}
			if lists {
				wantUnmapped["labels"] = map[string]int{"list value": 1}
			}
			if fmt.Sprint(rep.Unmapped) != fmt.Sprint(wantUnmapped) {
				t.Errorf("unmapped: %v, want %v", rep.Unmapped, wantUnmapped)
			}
			if rep.Fields["user"]["session"] != 2 || rep.Fields["tags"]["tags"] != 1+btoi(lists) || rep.Fields[chroma.DocumentKey]["text"] != 3 {
				t.Errorf("fields: %v", rep.Fields)
			}
			if rep.Vectors.Kept != 2 || rep.Vectors.From["queue"] != 2 || rep.Vectors.Embedded != 1 {
				t.Errorf("vectors: %+v", rep.Vectors)
			}

			// Every collection; the deleted record is nowhere.
			all, rep, err := d.Read(ctx, chroma.Options{Model: model, Collections: []string{"*"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 4 || rep.Vectors.Kept != 0 || len(rep.Collections) != 2 {
				t.Fatalf("all collections: %d memories, %+v", len(all), rep)
			}
			if sc.sysdb >= 7 {
				// auto: notes names the default model, which a store of another model is not.
				if !strings.Contains(strings.Join(rep.Vectors.Why, ";"), `model "all-MiniLM-L6-v2" is not the store's`) {
					t.Errorf("why: %v", rep.Vectors.Why)
				}
				_, rep, err = d.Read(ctx, chroma.Options{Model: importer.Model{Fingerprint: "x", Spec: "onnx:/m/all-MiniLM-L6-v2", Dim: 3}, Collections: []string{"notes"}})
				if err != nil || rep.Vectors.Kept != 2 {
					t.Errorf("auto with the named model: %v %+v", err, rep.Vectors)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSelectAmbiguous: one name in two databases must be named by ID.
func TestSelectAmbiguous(t *testing.T) {
	cols := []chroma.Collection{{ID: "a", Name: "notes", Database: "db1"}, {ID: "b", Name: "notes", Database: "db2"}}
	if _, err := chroma.Select(cols, []string{"notes"}); err == nil || !strings.Contains(err.Error(), "name one by its ID") {
		t.Fatalf("ambiguous name: %v", err)
	}
	if got, err := chroma.Select(cols, []string{"b"}); err != nil || len(got) != 1 || got[0].Database != "db2" {
		t.Fatalf("by ID: %v %v", got, err)
	}
}

// TestWALCopy reads a database whose last transactions are still in its -wal file (Chroma
// 1.x runs SQLite in WAL mode; the process may be running or have died): they are read,
// from a copy, and the source directory is left as it was.
func TestWALCopy(t *testing.T) {
	live := filepath.Join(t.TempDir(), "live")
	db := buildSchema(t, live, schemas[6])
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode = WAL", "PRAGMA wal_autocheckpoint = 0"} {
		if _, err := db.Exec(p); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, db, true)
	// A snapshot of the directory while the writer still has it open.
	dir := filepath.Join(t.TempDir(), "chroma")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{chroma.DBFile, chroma.DBFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(live, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, chroma.DBFile+"-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("the snapshot has no WAL content: %v", err)
	}
	before := dirDigest(t, dir)
	d, err := chroma.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := d.Collections(ctx)
	if err != nil || len(cols) != 2 || cols[1].Records != 4 {
		t.Fatalf("collections from the WAL: %+v %v", cols, err)
	}
	ms, _, err := d.Read(ctx, chroma.Options{Collections: []string{"*"}, Model: importer.Model{Dim: 3}})
	if err != nil || len(ms) != 4 {
		t.Fatalf("%d memories, %v", len(ms), err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if dirDigest(t, dir) != before {
		t.Fatal("reading changed the source directory")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d entries in the source directory", len(entries))
	}
}
