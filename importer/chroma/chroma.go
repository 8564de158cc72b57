package chroma

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/memory"
)

// Kind is the source kind in IDs and reports.
const Kind = "chroma"

// IDKey is the metadata key that keeps a record's Chroma ID.
const IDKey = "chroma_id"

// DocumentKey is the embedding_metadata key of a record's document.
const DocumentKey = "chroma:document"

// DBFile is the database's name in a persist directory.
const DBFile = "chroma.sqlite3"

// DB is an open persist directory.
type DB struct {
	Dir    string
	db     *sql.DB
	tmp    string                     // a copy's directory, removed by Close
	tables map[string]map[string]bool // table -> its columns
}

// Open opens the persist directory dir read-only (see the package documentation).
func Open(dir string) (*DB, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() && filepath.Base(dir) == DBFile {
		dir = filepath.Dir(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(abs, DBFile)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chroma: no %s in %s (a Chroma persist directory has one; Chroma before 0.4 kept DuckDB and Parquet files, which this does not read)", DBFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("chroma: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("chroma: %s is not a regular file", path)
	}
	d := &DB{Dir: abs}
	query := "mode=ro&immutable=1"
	if hasLog(path) {
		// The log's transactions are part of the database: read them from a copy, where
		// SQLite may apply them, instead of writing beside the source.
		if d.tmp, err = os.MkdirTemp("", "engram-chroma-"); err != nil {
			return nil, err
		}
		for _, suffix := range []string{"", "-wal", "-journal"} {
			if err := copyFile(path+suffix, filepath.Join(d.tmp, DBFile+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.Close()
				return nil, fmt.Errorf("chroma: copying the database to read its log: %w", err)
			}
		}
		path, query = filepath.Join(d.tmp, DBFile), ""
	}
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: query}).String()
	if d.db, err = sql.Open("sqlite", dsn); err != nil {
		d.Close()
		return nil, fmt.Errorf("chroma: %w", err)
	}
	d.db.SetMaxOpenConns(1)
	if _, err := d.db.Exec("PRAGMA query_only = ON"); err != nil {
		d.Close()
		return nil, fmt.Errorf("chroma: opening %s: %w", path, err)
	}
	if err := d.readSchema(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// hasLog reports whether a -wal or -journal file with content sits beside path.
func hasLog(path string) bool {
	for _, suffix := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(path + suffix); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// Close closes the database and removes a copy Open made.
func (d *DB) Close() error {
	var err error
	if d.db != nil {
		err = d.db.Close()
	}
	if d.tmp != "" {
		if rerr := os.RemoveAll(d.tmp); err == nil {
			err = rerr
		}
	}
	return err
}

// The tables Read needs; the others are optional.
var requiredTables = []string{"collections", "segments", "embeddings", "embedding_metadata"}

func (d *DB) readSchema() error {
	rows, err := d.db.Query("SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return fmt.Errorf("chroma: %s is not a readable SQLite database: %w", DBFile, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	d.tables = map[string]map[string]bool{}
	for _, n := range names {
		switch n {
		case "collections", "collection_metadata", "segments", "databases", "embeddings",
			"embedding_metadata", "embedding_metadata_array", "embeddings_queue":
		default:
			continue
		}
		cols := map[string]bool{}
		rows, err := d.db.Query(`SELECT name FROM pragma_table_info(?)`, n)
		if err != nil {
			return fmt.Errorf("chroma: reading the schema of %s: %w", n, err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			cols[c] = true
		}
		rows.Close()
		d.tables[n] = cols
	}
	for _, t := range requiredTables {
		if d.tables[t] == nil {
			return fmt.Errorf("chroma: %s has no %s table: not a Chroma database", DBFile, t)
		}
	}
	return nil
}

// col returns alias.column when the table has that column, else NULL.
func (d *DB) col(alias, table, column string) string {
	if d.tables[table][column] {
		return alias + "." + column
	}
	return "NULL"
}

// Collection is one Chroma collection.
type Collection struct {
	ID, Name string
	// Database and Tenant are empty in schemas before Chroma had them (sysdb 1-3).
	Database, Tenant string
	// Dimension is the vectors' dimension, 0 when Chroma has not recorded it.
	Dimension int
	// Topic is the collection's embeddings_queue topic where the schema records it (sysdb
	// 1-4); later ones derive it from the ID.
	Topic    string
	Metadata map[string]any
	// Space is the hnsw distance ("l2", "ip" or "cosine").
	Space string
	// Model is the embedding model the collection's configuration names, "" when none.
	Model string
	// Records counts the records of its metadata segment.
	Records int

	metadataSegment, vectorSegment string
}

// Collections lists the collections, by name.
func (d *DB) Collections(ctx context.Context) ([]Collection, error) {
	dbJoin, dbCols := "", "NULL, NULL"
	if d.tables["databases"] != nil && d.tables["collections"]["database_id"] {
		dbJoin, dbCols = " LEFT JOIN databases d ON d.id = c.database_id", "d.name, d.tenant_id"
	}
	q := "SELECT c.id, c.name, " + d.col("c", "collections", "dimension") + ", " + d.col("c", "collections", "topic") + ", " +
		d.col("c", "collections", "config_json_str") + ", " + dbCols + " FROM collections c" + dbJoin + " ORDER BY c.name, c.id"
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("chroma: reading collections: %w", err)
	}
	var cols []Collection
	for rows.Next() {
		var c Collection
		var dim sql.NullInt64
		var topic, config, dbName, tenant sql.NullString
		if err := rows.Scan(&c.ID, &c.Name, &dim, &topic, &config, &dbName, &tenant); err != nil {
			rows.Close()
			return nil, fmt.Errorf("chroma: reading collections: %w", err)
		}
		if dim.Valid && dim.Int64 > 0 && dim.Int64 <= 1<<20 {
			c.Dimension = int(dim.Int64)
		}
		c.Topic, c.Database, c.Tenant = topic.String, dbName.String, tenant.String
		c.Space, c.Model = parseConfig(config.String)
		cols = append(cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	byID := map[string]*Collection{}
	for i := range cols {
		byID[cols[i].ID] = &cols[i]
	}
	if t := d.tables["collection_metadata"]; t != nil {
		q := "SELECT collection_id, key, str_value, int_value, float_value, " + d.col("m", "collection_metadata", "bool_value") +
			" FROM collection_metadata m"
		err := d.scanValues(ctx, q, nil, func(owner any, key string, v any) {
			if c := byID[fmt.Sprint(owner)]; c != nil {
				if c.Metadata == nil {
					c.Metadata = map[string]any{}
				}
				c.Metadata[key] = v
			}
		})
		if err != nil {
			return nil, fmt.Errorf("chroma: reading collection metadata: %w", err)
		}
	}
	for i := range cols {
		if s, ok := cols[i].Metadata["hnsw:space"].(string); ok && s != "" {
			cols[i].Space = s
		}
		if cols[i].Space == "" {
			cols[i].Space = "l2"
		}
	}
	rows, err = d.db.QueryContext(ctx, "SELECT id, scope, collection FROM segments")
	if err != nil {
		return nil, fmt.Errorf("chroma: reading segments: %w", err)
	}
	for rows.Next() {
		var id, scope string
		var coll sql.NullString
		if err := rows.Scan(&id, &scope, &coll); err != nil {
			rows.Close()
			return nil, fmt.Errorf("chroma: reading segments: %w", err)
		}
		c := byID[coll.String]
		if c == nil {
			continue
		}
		switch scope {
		case "METADATA":
			c.metadataSegment = id
		case "VECTOR":
			c.vectorSegment = id
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = d.db.QueryContext(ctx, "SELECT segment_id, count(*) FROM embeddings GROUP BY segment_id")
	if err != nil {
		return nil, fmt.Errorf("chroma: counting records: %w", err)
	}
	counts := map[string]int{}
	for rows.Next() {
		var seg string
		var n int
		if err := rows.Scan(&seg, &n); err != nil {
			rows.Close()
			return nil, err
		}
		counts[seg] = n
	}
	rows.Close()
	for i := range cols {
		cols[i].Records = counts[cols[i].metadataSegment]
	}
	return cols, rows.Err()
}

// parseConfig reads the hnsw space and the embedding model from a collection's
// config_json_str: {"hnsw_configuration": {"space": ...}} (0.5, 0.6) or {"hnsw": {"space":
// ...}, "embedding_function": {"type": "known", "name": ..., "config": {"model_name": ...}}}
// (1.x).
func parseConfig(s string) (space, model string) {
	if s == "" {
		return "", ""
	}
	var c struct {
		HNSWConfiguration struct {
			Space string `json:"space"`
		} `json:"hnsw_configuration"`
		HNSW *struct {
			Space string `json:"space"`
		} `json:"hnsw"`
		EmbeddingFunction *struct {
			Type   string         `json:"type"`
			Name   string         `json:"name"`
			Config map[string]any `json:"config"`
		} `json:"embedding_function"`
	}
	if json.Unmarshal([]byte(s), &c) != nil {
		return "", ""
	}
	space = c.HNSWConfiguration.Space
	if c.HNSW != nil && c.HNSW.Space != "" {
		space = c.HNSW.Space
	}
	if ef := c.EmbeddingFunction; ef != nil && ef.Type == "known" {
		if m, ok := ef.Config["model_name"].(string); ok && m != "" {
			model = m
		} else if ef.Name == "default" || ef.Name == "onnx_mini_lm_l6_v2" {
			model = "all-MiniLM-L6-v2" // Chroma's default embedding function
		}
	}
	return space, model
}

// scanValues runs q, whose columns are (owner, key, string, int, float, bool), and calls fn
// with each row's value: the first non-NULL of string, int64, float64 and bool, or nil.
func (d *DB) scanValues(ctx context.Context, q string, args []any, fn func(owner any, key string, v any)) error {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var owner any
		var key string
		var s sql.NullString
		var i, b sql.NullInt64
		var f sql.NullFloat64
		if err := rows.Scan(&owner, &key, &s, &i, &f, &b); err != nil {
			return err
		}
		var v any
		switch {
		case s.Valid:
			v = s.String
		case i.Valid:
			v = i.Int64
		case f.Valid:
			v = f.Float64
		case b.Valid:
			v = b.Int64 != 0
		}
		fn(owner, key, v)
	}
	return rows.Err()
}

// SourceRecord is one record as Chroma holds it.
type SourceRecord struct {
	// Row is the record's embeddings.id, ID its Chroma ID (embedding_id).
	Row     int64
	ID      string
	Created time.Time
	// Metadata holds every key, the document under DocumentKey included: string, int64,
	// float64, bool or nil values, and []any for list values (Chroma 1.x).
	Metadata map[string]any
}

// Records reads the records of collection c, in the order they were added.
func (d *DB) Records(ctx context.Context, c Collection) ([]SourceRecord, error) {
	if c.metadataSegment == "" {
		return nil, nil
	}
	rows, err := d.db.QueryContext(ctx, "SELECT id, embedding_id, created_at FROM embeddings WHERE segment_id = ? ORDER BY id", c.metadataSegment)
	if err != nil {
		return nil, fmt.Errorf("chroma: reading records of %s: %w", c.Name, err)
	}
	var recs []SourceRecord
	byRow := map[int64]int{}
	for rows.Next() {
		var r SourceRecord
		var created any
		if err := rows.Scan(&r.Row, &r.ID, &created); err != nil {
			rows.Close()
			return nil, fmt.Errorf("chroma: reading records of %s: %w", c.Name, err)
		}
		r.Created = sqlTime(created)
		byRow[r.Row] = len(recs)
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	set := func(owner any, key string, v any) {
		row, ok := owner.(int64)
		if !ok {
			return
		}
		i, ok := byRow[row]
		if !ok {
			return
		}
		if recs[i].Metadata == nil {
			recs[i].Metadata = map[string]any{}
		}
		recs[i].Metadata[key] = v
	}
	q := "SELECT m.id, m.key, m.string_value, m.int_value, m.float_value, " + d.col("m", "embedding_metadata", "bool_value") +
		" FROM embedding_metadata m JOIN embeddings e ON e.id = m.id WHERE e.segment_id = ?"
	if err := d.scanValues(ctx, q, []any{c.metadataSegment}, set); err != nil {
		return nil, fmt.Errorf("chroma: reading metadata of %s: %w", c.Name, err)
	}
	if d.tables["embedding_metadata_array"] != nil {
		q := "SELECT a.id, a.key, a.string_value, a.int_value, a.float_value, a.bool_value" +
			" FROM embedding_metadata_array a JOIN embeddings e ON e.id = a.id WHERE e.segment_id = ? ORDER BY a.rowid"
		err := d.scanValues(ctx, q, []any{c.metadataSegment}, func(owner any, key string, v any) {
			row, _ := owner.(int64)
			i, ok := byRow[row]
			if !ok {
				return
			}
			if recs[i].Metadata == nil {
				recs[i].Metadata = map[string]any{}
			}
			l, _ := recs[i].Metadata[key].([]any)
			recs[i].Metadata[key] = append(l, v)
		})
		if err != nil {
			return nil, fmt.Errorf("chroma: reading list metadata of %s: %w", c.Name, err)
		}
	}
	return recs, nil
}

// sqlTime reads a TIMESTAMP column as the driver returns it (a time.Time, or text).
func sqlTime(v any) time.Time {
	switch v := v.(type) {
	case time.Time:
		return v.UTC()
	case string:
		t, _ := importer.ParseTime(v)
		return t
	case []byte:
		t, _ := importer.ParseTime(string(v))
		return t
	case int64:
		return time.Unix(v, 0).UTC()
	}
	return time.Time{}
}

// The embeddings_queue operations.
const (
	opAdd = iota
	opUpdate
	opUpsert
	opDelete
)

// QueueEntry is the effect of a record's writes in the embeddings queue.
type QueueEntry struct {
	// Written is the time of the record's latest add, update or upsert.
	Written time.Time
	// Vector is the latest vector written (nil when none, or not asked for); Err says why a
	// vector could not be decoded.
	Vector []float32
	Err    error
}

// Queue replays collection c's writes in the embeddings queue, in seq_id order: per record
// ID, the latest write's time and, with vectors, the latest vector (a delete forgets both).
// dim, when not 0, is the dimension a vector must have.
func (d *DB) Queue(ctx context.Context, c Collection, vectors bool, dim int) (map[string]*QueueEntry, error) {
	out := map[string]*QueueEntry{}
	t := d.tables["embeddings_queue"]
	if t == nil {
		return out, nil
	}
	vec, enc := "NULL", "NULL"
	if vectors {
		vec, enc = d.col("q", "embeddings_queue", "vector"), d.col("q", "embeddings_queue", "encoding")
	}
	q := "SELECT q.operation, q.topic, q.id, q.created_at, " + vec + ", " + enc +
		" FROM embeddings_queue q WHERE q.topic = ? OR q.topic LIKE ? ORDER BY q.seq_id"
	rows, err := d.db.QueryContext(ctx, q, c.Topic, "%/"+c.ID)
	if err != nil {
		return nil, fmt.Errorf("chroma: reading the embeddings queue: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var op int
		var topic, id string
		var created any
		var blob []byte
		var encoding sql.NullString
		if err := rows.Scan(&op, &topic, &id, &created, &blob, &encoding); err != nil {
			return nil, fmt.Errorf("chroma: reading the embeddings queue: %w", err)
		}
		if topic != c.Topic && !strings.HasSuffix(topic, "/"+c.ID) {
			continue
		}
		if op == opDelete {
			delete(out, id)
			continue
		}
		if op < opAdd || op > opDelete {
			continue
		}
		e := out[id]
		if e == nil {
			e = &QueueEntry{}
			out[id] = e
		}
		if w := sqlTime(created); w.After(e.Written) {
			e.Written = w
		}
		if blob != nil {
			e.Vector, e.Err = DecodeVector(blob, encoding.String, dim)
		}
	}
	return out, rows.Err()
}

// DecodeVector decodes a queue vector: little-endian float32 (FLOAT32, Chroma's only
// encoding in practice) or int32 (INT32). dim, when not 0, is the dimension it must have.
func DecodeVector(b []byte, encoding string, dim int) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("a vector of %d bytes", len(b))
	}
	if dim != 0 && len(b)/4 != dim {
		return nil, fmt.Errorf("a vector of %d dimensions in a collection of %d", len(b)/4, dim)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		u := binary.LittleEndian.Uint32(b[4*i:])
		switch encoding {
		case "FLOAT32", "":
			v[i] = math.Float32frombits(u)
		case "INT32":
			v[i] = float32(int32(u))
		default:
			return nil, fmt.Errorf("vector encoding %q", encoding)
		}
	}
	return v, nil
}

// HNSWVectors reads, from collection c's hnswlib files, the vectors of the record IDs in
// want. It returns none, without an error, when the collection has no persisted index.
func (d *DB) HNSWVectors(c Collection, want map[string]bool) (map[string][]float32, error) {
	out := map[string][]float32{}
	if c.vectorSegment == "" || len(want) == 0 {
		return out, nil
	}
	dir := filepath.Join(d.Dir, c.vectorSegment)
	if _, err := os.Stat(filepath.Join(dir, "header.bin")); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	x, err := OpenHNSW(dir)
	if err != nil {
		return nil, err
	}
	if x.Header.ElementCount == 0 {
		return out, nil
	}
	if c.Dimension != 0 && x.Header.Dim() != c.Dimension {
		return nil, fmt.Errorf("%s: vectors of %d dimensions in a collection of %d", dir, x.Header.Dim(), c.Dimension)
	}
	pb, err := readSmall(filepath.Join(dir, "index_metadata.pickle"), MaxPickle+1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %d vectors but no index_metadata.pickle to name their records", dir, x.Header.ElementCount)
	}
	if err != nil {
		return nil, err
	}
	ids, err := ReadIDMap(pb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	err = x.Elements(c.Space == "cosine", func(e HNSWElement) error {
		if e.Deleted {
			return nil
		}
		if id, ok := ids.LabelToID[e.Label]; ok && want[id] {
			out[id] = e.Vector
		}
		return nil
	})
	return out, err
}

// Options tune Read.
type Options struct {
	// Collections names the collections to read (by name or ID; "*" for all). Empty reads
	// the only collection, and is an error when there are several.
	Collections []string
	// Session, if not nil, puts every memory into this session.
	Session *string
	// SessionKey, if set, names the record metadata key whose value is the memory's session
	// (records without it go to the collection's name).
	SessionKey string
	// Vectors and Model decide whether the source's vectors are used (importer.Model.UseVectors).
	Vectors importer.VectorPolicy
	Model   importer.Model
	// Now stands in for a missing created_at.
	Now time.Time
}

// Select picks the collections names selects (see Options.Collections).
func Select(cols []Collection, names []string) ([]Collection, error) {
	list := func() string {
		var s []string
		for _, c := range cols {
			s = append(s, fmt.Sprintf("%s (%d records)", c.Name, c.Records))
		}
		return strings.Join(s, ", ")
	}
	switch {
	case len(cols) == 0:
		return nil, errors.New("chroma: the database has no collections")
	case len(names) == 0 && len(cols) == 1:
		return cols, nil
	case len(names) == 0:
		return nil, fmt.Errorf("%w: chroma: %d collections: %s; name one with --collection (repeatable), or --collection '*' for all",
			memory.ErrInvalidInput, len(cols), list())
	case slices.Contains(names, "*"):
		return cols, nil
	}
	var out []Collection
	for _, n := range names {
		i := slices.IndexFunc(cols, func(c Collection) bool { return c.ID == n })
		if i < 0 {
			var ids []string
			for j, c := range cols {
				if c.Name == n {
					i = j
					ids = append(ids, fmt.Sprintf("%s in %s/%s", c.ID, c.Tenant, c.Database))
				}
			}
			if len(ids) > 1 { // one name in several databases
				return nil, fmt.Errorf("%w: chroma: %d collections are named %q (%s): name one by its ID",
					memory.ErrInvalidInput, len(ids), n, strings.Join(ids, ", "))
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%w: chroma: no collection %q; there are %s", memory.ErrInvalidInput, n, list())
		}
		if !slices.ContainsFunc(out, func(c Collection) bool { return c.ID == cols[i].ID }) {
			out = append(out, cols[i])
		}
	}
	return out, nil
}

// Read reads the selected collections and maps their records onto memories (see the package
// documentation).
func (d *DB) Read(ctx context.Context, o Options) ([]memory.Memory, *importer.Report, error) {
	rep := importer.NewReport("chroma " + d.Dir)
	cols, err := d.Collections(ctx)
	if err != nil {
		return nil, rep, err
	}
	sel, err := Select(cols, o.Collections)
	if err != nil {
		return nil, rep, err
	}
	var ms []memory.Memory
	for _, c := range sel {
		rep.Collections = append(rep.Collections, c.Name)
		got, err := d.readCollection(ctx, c, o, rep)
		if err != nil {
			return nil, rep, err
		}
		ms = append(ms, got...)
	}
	return ms, rep, nil
}

func (d *DB) readCollection(ctx context.Context, c Collection, o Options, rep *importer.Report) ([]memory.Memory, error) {
	recs, err := d.Records(ctx, c)
	if err != nil {
		return nil, err
	}
	// Vectors are read only where they may be used. A collection that has not recorded its
	// dimension is decided once its vectors say it.
	dim := c.Dimension
	use, why := o.Model.UseVectors(o.Vectors, c.Model, dim)
	tentative := dim == 0 && (o.Vectors == importer.VectorsKeep || o.Vectors == importer.VectorsAuto && c.Model != "")
	queue, err := d.Queue(ctx, c, use || tentative, dim)
	if err != nil {
		return nil, err
	}
	vecs := map[string][]float32{}
	from := map[string]string{}
	if use || tentative {
		bad := 0
		for _, r := range recs { // in record order, so the first vector sets an unknown dimension
			e := queue[r.ID]
			switch {
			case e == nil:
			case e.Err != nil || e.Vector != nil && dim != 0 && len(e.Vector) != dim:
				bad++
			case e.Vector != nil:
				vecs[r.ID], from[r.ID] = e.Vector, "queue"
				dim = len(e.Vector)
			}
		}
		want := map[string]bool{}
		for _, r := range recs {
			if vecs[r.ID] == nil {
				want[r.ID] = true
			}
		}
		hv, err := d.HNSWVectors(c, want)
		if err != nil {
			rep.WhyEmbedded(fmt.Sprintf("the hnsw files of %s: %v", c.Name, err))
		}
		for _, r := range recs {
			v := hv[r.ID]
			switch {
			case v == nil:
			case dim != 0 && len(v) != dim:
				bad++
			default:
				vecs[r.ID], from[r.ID] = v, "hnsw"
				dim = len(v)
			}
		}
		if bad > 0 {
			rep.WhyEmbedded(fmt.Sprintf("%d vectors of %s could not be decoded or had another dimension", bad, c.Name))
		}
		if tentative {
			use, why = o.Model.UseVectors(o.Vectors, c.Model, dim)
		}
	}
	if !use {
		vecs, from = nil, nil
		rep.WhyEmbedded(c.Name + ": " + why)
	}
	mp := importer.Mapping{Kind: Kind, Scope: c.ID, IDKey: IDKey, Now: o.Now}
	missing := 0
	ms := make([]memory.Memory, 0, len(recs))
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		md := maps.Clone(r.Metadata)
		text, hasDoc := md[DocumentKey].(string)
		delete(md, DocumentKey)
		rec := importer.Record{SourceID: r.ID, Text: text, Created: r.Created, Updated: r.Created, Metadata: md, Vector: vecs[r.ID]}
		if e := queue[r.ID]; e != nil && e.Written.After(rec.Updated) {
			rec.Updated = e.Written
		}
		switch {
		case o.Session != nil:
			rec.Session = *o.Session
		case o.SessionKey != "" && sessionValue(md[o.SessionKey]) != "":
			rec.Session = sessionValue(md[o.SessionKey])
			delete(md, o.SessionKey)
			rep.Field(o.SessionKey, "session")
		default:
			rec.Session = c.Name
		}
		m, ok := mp.Memory(rec, rep)
		if !ok {
			continue
		}
		if hasDoc {
			rep.Field(DocumentKey, "text")
		}
		if m.Vector != nil {
			rep.VectorFrom(from[r.ID])
		} else if use {
			missing++
		}
		ms = append(ms, m)
	}
	if missing > 0 {
		rep.WhyEmbedded(fmt.Sprintf("%d records of %s have no vector in the queue or the hnsw files", missing, c.Name))
	}
	return ms, nil
}

// sessionValue is a metadata value as a session name: a string, or a number written out.
func sessionValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}
