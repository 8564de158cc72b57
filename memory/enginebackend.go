package memory

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/quant"
)

// Metadata keys of a memory in an engine record. Created and Updated are also kept as metadata
// (besides the record's own timestamps) so that time filters run inside the engine.
const (
	metaSession    = "session"
	metaSource     = "source"
	metaTags       = "tags"
	metaImportance = "importance"
	metaCreated    = "created"
	metaUpdated    = "updated"
	// metaSupersededBy and metaSupersededAt hold Memory.SupersededBy and SupersededAt, only
	// while the memory is superseded.
	metaSupersededBy = "superseded_by"
	metaSupersededAt = "superseded_at"
	// metaUser prefixes the keys of user metadata (Memory.Metadata).
	metaUser = "m."
)

// NewEngineBackend returns a Backend over an open engine store. The engine's NamespaceField must
// be "session" (its default) for session filters to use the engine's per-session postings.
// Closing the backend closes db.
func NewEngineBackend(db *engine.DB) Backend { return &engineBackend{db: db} }

type engineBackend struct{ db *engine.DB }

func (b *engineBackend) Collection(_ context.Context, name string) (Collection, error) {
	c, err := b.db.Collection(name)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, errorf(ErrNoCollection, "%q", name)
	}
	if err != nil {
		return nil, err
	}
	return &engineColl{c: c}, nil
}

func (b *engineBackend) CreateCollection(_ context.Context, spec CollectionSpec) (Collection, error) {
	c, err := b.db.CreateCollection(engine.CollectionConfig{Name: spec.Name, Dim: spec.Dim, Metric: quant.Cosine, Fingerprint: spec.Fingerprint})
	if err != nil {
		return nil, err
	}
	return &engineColl{c: c}, nil
}

func (b *engineBackend) DropCollection(_ context.Context, name string) error {
	if err := b.db.DropCollection(name); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return nil
}

func (b *engineBackend) KV() KV       { return engineKV{b.db.KV()} }
func (b *engineBackend) Close() error { return b.db.Close() }

type engineKV struct{ kv *engine.KV }

func (k engineKV) Get(key string) ([]byte, bool, error) {
	v, err := k.kv.Get(key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (k engineKV) Put(key string, value []byte) error { return k.kv.Put(key, value) }
func (k engineKV) Delete(key string) error            { return k.kv.Delete(key) }

func (k engineKV) Scan(prefix string, fn func(key string, value []byte) error) error {
	var ferr error
	err := k.kv.Scan(prefix, func(key string, v []byte) bool {
		ferr = fn(key, v)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}

type engineColl struct{ c *engine.Collection }

func (e *engineColl) Spec() CollectionSpec {
	cfg := e.c.Config()
	return CollectionSpec{Name: cfg.Name, Dim: cfg.Dim, Fingerprint: cfg.Fingerprint}
}

func toRecord(m *Memory) engine.Record {
	meta := engine.Metadata{
		metaSession:    engine.String(m.Session),
		metaSource:     engine.String(m.Source),
		metaImportance: engine.Float(m.Importance),
		metaCreated:    engine.Time(m.Created),
		metaUpdated:    engine.Time(m.Updated),
	}
	if len(m.Tags) > 0 {
		meta[metaTags] = engine.StringList(m.Tags...)
	}
	if m.SupersededBy != "" {
		meta[metaSupersededBy] = engine.String(m.SupersededBy)
		meta[metaSupersededAt] = engine.Time(m.SupersededAt)
	}
	for k, v := range m.Metadata {
		switch v := v.(type) {
		case string:
			meta[metaUser+k] = engine.String(v)
		case float64:
			meta[metaUser+k] = engine.Float(v)
		case bool:
			meta[metaUser+k] = engine.Bool(v)
		}
	}
	return engine.Record{ID: m.ID, Vector: m.Vector, Text: keywordText(m), Meta: meta, Created: m.Created, Updated: m.Updated,
		LastAccess: m.LastAccess, AccessCount: m.AccessCount}
}

func fromRecord(r *engine.Record) Memory {
	m := Memory{ID: r.ID, Created: r.Created, Updated: r.Updated, LastAccess: r.LastAccess,
		AccessCount: r.AccessCount, Vector: r.Vector}
	m.Text, m.Context, _ = strings.Cut(r.Text, keyword.ContextSeparator)
	m.Session, _ = r.Meta[metaSession].Str()
	m.Source, _ = r.Meta[metaSource].Str()
	m.Tags, _ = r.Meta[metaTags].List()
	m.Importance, _ = r.Meta[metaImportance].FloatValue()
	if by, ok := r.Meta[metaSupersededBy].Str(); ok && by != "" {
		m.SupersededBy = by
		m.SupersededAt, _ = r.Meta[metaSupersededAt].TimeValue()
	}
	for k, v := range r.Meta {
		uk, ok := strings.CutPrefix(k, metaUser)
		if !ok {
			continue
		}
		if m.Metadata == nil {
			m.Metadata = map[string]any{}
		}
		switch v.Kind() {
		case engine.KindString:
			m.Metadata[uk], _ = v.Str()
		case engine.KindBool:
			m.Metadata[uk], _ = v.BoolValue()
		default:
			m.Metadata[uk], _ = v.FloatValue()
		}
	}
	return m
}

func (e *engineColl) Upsert(ctx context.Context, ms []Memory) error {
	if err := validateBatch(ms, e.c.Config().Dim); err != nil {
		return err
	}
	rs := make([]engine.Record, len(ms))
	for i := range ms {
		rs[i] = toRecord(&ms[i])
	}
	return e.c.Upsert(ctx, rs)
}

func (e *engineColl) Get(ctx context.Context, ids []string) ([]Memory, error) {
	return e.get(ctx, ids, e.c.Get)
}

// GetLight implements LightGetter: the memories without their vectors.
func (e *engineColl) GetLight(ctx context.Context, ids []string) ([]Memory, error) {
	return e.get(ctx, ids, e.c.GetNoVector)
}

func (e *engineColl) get(ctx context.Context, ids []string, get func(string) (engine.Record, error)) ([]Memory, error) {
	out := make([]Memory, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := get(id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fromRecord(&r))
	}
	return out, nil
}

func (e *engineColl) Delete(ctx context.Context, ids []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return e.c.Delete(ids...)
}

func (e *engineColl) DeleteWhere(ctx context.Context, f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	ef, exact := toEngineFilter(f)
	if exact && f != nil {
		return e.c.DeleteWhere(ef)
	}
	var ids []string
	if err := e.Scan(ctx, f, func(m Memory) error { ids = append(ids, m.ID); return nil }); err != nil {
		return 0, err
	}
	return e.Delete(ctx, ids)
}

func (e *engineColl) SearchVector(ctx context.Context, v []float32, k int, f *Filter) ([]Hit, error) {
	return e.searchVector(ctx, v, k, f, false)
}

func (e *engineColl) SearchText(ctx context.Context, query string, k int, f *Filter) ([]Hit, error) {
	return e.searchText(ctx, query, k, f, false)
}

// SearchVectorCandidates implements CandidateSearcher: the engine leaves texts compressed.
func (e *engineColl) SearchVectorCandidates(ctx context.Context, v []float32, k int, f *Filter) ([]Hit, error) {
	return e.searchVector(ctx, v, k, f, true)
}

// SearchTextCandidates implements CandidateSearcher.
func (e *engineColl) SearchTextCandidates(ctx context.Context, query string, k int, f *Filter) ([]Hit, error) {
	return e.searchText(ctx, query, k, f, true)
}

func (e *engineColl) searchVector(ctx context.Context, v []float32, k int, f *Filter, noText bool) ([]Hit, error) {
	return e.search(ctx, k, f, func(ef *engine.Filter, k int) ([]engine.Hit, error) {
		return e.c.Search(ctx, engine.SearchRequest{Vector: v, K: k, Filter: ef, NoText: noText})
	})
}

func (e *engineColl) searchText(ctx context.Context, query string, k int, f *Filter, noText bool) ([]Hit, error) {
	return e.search(ctx, k, f, func(ef *engine.Filter, k int) ([]engine.Hit, error) {
		return e.c.SearchTextWith(ctx, engine.TextRequest{Query: query, K: k, Filter: ef, NoText: noText})
	})
}

// search runs an engine search under the translatable part of f and checks every hit against
// f itself. When part of f could not be translated (access statistics live outside the
// engine's metadata), it fetches more until k hits pass or the candidates run out.
func (e *engineColl) search(ctx context.Context, k int, f *Filter, run func(*engine.Filter, int) ([]engine.Hit, error)) ([]Hit, error) {
	if err := checkSearch(ctx, k, f); err != nil {
		return nil, err
	}
	ef, _ := toEngineFilter(f)
	for fetch := k; ; fetch *= 4 {
		fetch = min(fetch, engine.MaxK)
		eh, err := run(ef, fetch)
		if err != nil {
			return nil, err
		}
		hits := make([]Hit, 0, min(k, len(eh)))
		for i := range eh {
			m := fromRecord(&eh[i].Record)
			if f.Match(&m) {
				m.Vector = nil
				hits = append(hits, Hit{Memory: m, Score: eh[i].Score})
				if len(hits) == k {
					break
				}
			}
		}
		if len(hits) == k || len(eh) < fetch || fetch == engine.MaxK {
			return hits, nil
		}
	}
}

func (e *engineColl) Touch(ctx context.Context, ids []string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.c.Touch(ids, at)
}

func (e *engineColl) Scan(ctx context.Context, f *Filter, fn func(Memory) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	ef, _ := toEngineFilter(f)
	// Collect under the engine's read lock, call fn without it (fn may write).
	var ms []Memory
	err := e.c.Scan(ef, true, func(r engine.Record) bool {
		m := fromRecord(&r)
		if f.Match(&m) {
			ms = append(ms, m)
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// ScanLight implements LightScanner: no vectors are read, fn runs under the engine's read lock.
func (e *engineColl) ScanLight(ctx context.Context, f *Filter, fn func(*Memory)) error {
	if err := f.Validate(); err != nil {
		return err
	}
	ef, _ := toEngineFilter(f)
	err := e.c.Scan(ef, false, func(r engine.Record) bool {
		m := fromRecord(&r)
		if f.Match(&m) {
			fn(&m)
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

func (e *engineColl) Count(ctx context.Context, f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if ef, exact := toEngineFilter(f); exact {
		return e.c.Count(ef)
	}
	n := 0
	err := e.Scan(ctx, f, func(Memory) error { n++; return nil })
	return n, err
}

// toEngineFilter translates a valid filter. exact reports whether the result selects exactly
// what f does; otherwise it selects a superset (the untranslatable parts, conditions on access
// statistics, become "anything" where that widens the set and the whole subtree is dropped
// under Not) and the caller must check f.Match.
func toEngineFilter(f *Filter) (ef *engine.Filter, exact bool) {
	if f == nil {
		return nil, true
	}
	switch f.Op {
	case OpAnd, OpOr:
		kids := make([]*engine.Filter, 0, len(f.Kids))
		exact = true
		for _, k := range f.Kids {
			ek, ex := toEngineFilter(k)
			exact = exact && ex
			if ek == nil { // "anything"
				if f.Op == OpOr {
					return nil, false
				}
				continue
			}
			kids = append(kids, ek)
		}
		switch {
		case len(kids) == 0:
			return nil, exact
		case len(kids) == 1:
			return kids[0], exact
		case f.Op == OpAnd:
			return engine.And(kids...), exact
		}
		return engine.Or(kids...), exact
	case OpNot:
		ek, ex := toEngineFilter(f.Kids[0])
		if !ex || ek == nil {
			return nil, false
		}
		return engine.Not(ek), true
	}
	if uk, ok := f.Field.MetaKey(); ok {
		return userMetaFilter(metaUser+uk, f)
	}
	key, ok := metaKey(f.Field)
	if !ok {
		return nil, false
	}
	switch f.Op {
	case OpEq, OpIn:
		vs := make([]engine.Value, len(f.Values))
		for i, v := range f.Values {
			vs[i] = engine.String(v)
		}
		if len(vs) == 1 {
			return engine.Eq(key, vs[0]), true
		}
		return engine.In(key, vs...), true
	case OpExists:
		switch f.Field {
		case FieldTag:
			return engine.Exists(key), true
		case FieldImportance:
			return engine.Not(engine.Eq(key, engine.Float(0))), true
		case FieldCreated, FieldUpdated:
			return engine.Exists(key), true
		}
		return engine.Not(engine.Eq(key, engine.String(""))), true
	case OpRange:
		var lo, hi engine.Value
		if f.Field.kind() == kindTime {
			// The engine keeps times as Unix nanoseconds (years 1678 to 2262): a bound past
			// them leaves its side open, or matches nothing when it is beyond the far end.
			if !f.From.IsZero() {
				if f.From.After(maxEngineTime) {
					return engine.And(engine.Exists(key), engine.Not(engine.Exists(key))), true
				}
				if f.From.After(minEngineTime) {
					lo = engine.Time(f.From)
				}
			}
			if !f.To.IsZero() {
				if f.To.Before(minEngineTime) {
					return engine.And(engine.Exists(key), engine.Not(engine.Exists(key))), true
				}
				if f.To.Before(maxEngineTime) {
					hi = engine.Time(f.To)
				}
			}
		} else {
			if !math.IsInf(f.Min, -1) {
				lo = engine.Float(f.Min)
			}
			if !math.IsInf(f.Max, 1) {
				hi = engine.Float(f.Max)
			}
		}
		if lo.Kind() == 0 && hi.Kind() == 0 {
			return engine.Exists(key), true
		}
		return engine.Range(key, lo, hi), true
	}
	return nil, false
}

// userMetaFilter translates a leaf on a user metadata field (see MetaField).
func userMetaFilter(key string, f *Filter) (*engine.Filter, bool) {
	switch f.Op {
	case OpExists:
		return engine.Exists(key), true
	case OpEq, OpIn:
		var vs []engine.Value
		for _, v := range f.Values {
			vs = append(vs, engine.String(v))
			if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
				vs = append(vs, engine.Bool(b))
			}
		}
		return engine.In(key, vs...), true
	case OpRange:
		var lo, hi engine.Value
		if !math.IsInf(f.Min, -1) {
			lo = engine.Float(f.Min)
		}
		if !math.IsInf(f.Max, 1) {
			hi = engine.Float(f.Max)
		}
		if lo.Kind() == 0 && hi.Kind() == 0 {
			return engine.Exists(key), false // any number: Match drops strings and bools
		}
		return engine.Range(key, lo, hi), true
	}
	return nil, false
}

// The times Unix nanoseconds in an int64 can hold.
var (
	minEngineTime = time.Unix(0, math.MinInt64+1)
	maxEngineTime = time.Unix(0, math.MaxInt64)
)

func metaKey(f Field) (string, bool) {
	switch f {
	case FieldSession:
		return metaSession, true
	case FieldSource:
		return metaSource, true
	case FieldTag:
		return metaTags, true
	case FieldImportance:
		return metaImportance, true
	case FieldCreated:
		return metaCreated, true
	case FieldUpdated:
		return metaUpdated, true
	}
	return "", false
}

func (b *engineBackend) Flush() error   { return b.db.Flush() }
func (b *engineBackend) Compact() error { return b.db.Compact() }
func (b *engineBackend) Check() error   { return b.db.Check() }
func (b *engineBackend) CheckProgress(p func(done, total int64)) error {
	return b.db.CheckProgress(p)
}
func (b *engineBackend) CompactProgress(p func(done, total int64)) error {
	return b.db.CompactProgress(p)
}
func (b *engineBackend) Backup(dir string) error { return b.db.Backup(dir) }

// BackupWithKeys implements KeyedBackuper.
func (b *engineBackend) BackupWithKeys(dir string) error { return b.db.BackupWithKeys(dir) }

func (b *engineBackend) BackendStats() BackendStats {
	st := b.db.Stats()
	out := BackendStats{WALBytes: st.WALBytes, MemBytes: st.MemBytes}
	for _, c := range st.Collections {
		out.DiskBytes += c.DiskBytes
		out.Segments += c.Segments
	}
	return out
}

// ReleaseSessionKeys implements SessionKeyReleaser: the engine destroys a session's key in an
// encrypted store when no record of any collection holds the session.
func (b *engineBackend) ReleaseSessionKeys(sessions ...string) (int, error) {
	return b.db.ReleaseSessionKeys(sessions...)
}
