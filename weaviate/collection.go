package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/memory"
)

// Prefixes of stored string values: they make the empty session or source
// an indexable, filterable value.
const (
	strPrefix = "s:"
	tagPrefix = "t:"
)

// maxLimit is the most objects one GraphQL query returns (Weaviate's
// QUERY_MAXIMUM_RESULTS default).
const maxLimit = 10000

// overFetch multiplies k when part of a filter runs on the client.
const overFetch = 8

type collection struct {
	b     *Backend
	class string
	spec  memory.CollectionSpec
	// replicated: the class has more than one replica. Weaviate's GraphQL
	// takes a consistency level only on replicated classes.
	replicated bool
	// touchMu serializes Touch's read-modify-write within this process.
	touchMu sync.Mutex
}

func (c *collection) Spec() memory.CollectionSpec { return c.spec }

// times keeps the exact timestamps (date properties are for filtering and
// may be stored at a coarser precision).
type times struct {
	Created    time.Time `json:"c"`
	Updated    time.Time `json:"u"`
	LastAccess time.Time `json:"a,omitzero"`
	// Meta is the memory's user metadata: kept here, not as properties, so
	// any key works without a schema change; filters on it run on the client.
	Meta map[string]any `json:"m,omitempty"`
	// SupersededBy and SupersededAt are the memory's supersede mark (memory.Memory).
	SupersededBy string    `json:"sb,omitempty"`
	SupersededAt time.Time `json:"sa,omitzero"`
}

func (c *collection) toObject(m *memory.Memory) batchObject {
	tags := make([]string, len(m.Tags))
	for i, t := range m.Tags {
		tags[i] = tagPrefix + t
	}
	ts, _ := json.Marshal(times{m.Created, m.Updated, m.LastAccess, m.Metadata, m.SupersededBy, m.SupersededAt})
	props := map[string]any{
		"mid":          m.ID,
		"session":      strPrefix + m.Session,
		"text":         m.Text,
		"terms":        strings.Join(keyword.Tokens(m.Text), " "),
		"source":       strPrefix + m.Source,
		"tags":         tags,
		"importance":   m.Importance,
		"access_count": float64(m.AccessCount),
		"created":      m.Created.UTC().Format(time.RFC3339Nano),
		"updated":      m.Updated.UTC().Format(time.RFC3339Nano),
		"times":        string(ts),
	}
	if !m.LastAccess.IsZero() {
		props["last_access"] = m.LastAccess.UTC().Format(time.RFC3339Nano)
	}
	return batchObject{Class: c.class, ID: objectID(c.class, m.ID), Properties: props, Vector: m.Vector}
}

// storedProps are the properties as read back.
type storedProps struct {
	MID         string   `json:"mid"`
	Session     string   `json:"session"`
	Text        string   `json:"text"`
	Source      string   `json:"source"`
	Tags        []string `json:"tags"`
	Importance  float64  `json:"importance"`
	AccessCount float64  `json:"access_count"`
	Times       string   `json:"times"`
}

func (p *storedProps) toMemory(vec []float32) (memory.Memory, error) {
	var ts times
	if err := json.Unmarshal([]byte(p.Times), &ts); err != nil {
		return memory.Memory{}, fmt.Errorf("weaviate: memory %q has unreadable timestamps: %w", p.MID, err)
	}
	m := memory.Memory{
		ID: p.MID, Session: strings.TrimPrefix(p.Session, strPrefix), Text: p.Text,
		Source: strings.TrimPrefix(p.Source, strPrefix), Importance: p.Importance,
		AccessCount: uint64(p.AccessCount), Created: ts.Created, Updated: ts.Updated, LastAccess: ts.LastAccess,
		Metadata: ts.Meta, SupersededBy: ts.SupersededBy, SupersededAt: ts.SupersededAt, Vector: vec,
	}
	for _, t := range p.Tags {
		m.Tags = append(m.Tags, strings.TrimPrefix(t, tagPrefix))
	}
	return m, nil
}

// Upsert writes ms as one batch.
func (c *collection) Upsert(ctx context.Context, ms []memory.Memory) error {
	objs := make([]batchObject, len(ms))
	for i := range ms {
		if len(ms[i].Vector) != c.spec.Dim {
			return fmt.Errorf("%w: memory %q has a %d-d vector, collection is %d-d", memory.ErrInvalidInput, ms[i].ID, len(ms[i].Vector), c.spec.Dim)
		}
		objs[i] = c.toObject(&ms[i])
	}
	return c.b.c.batchWrite(ctx, objs, c.b.opts.WriteConsistency)
}

// fields is the GraphQL selection of a memory.
const fields = "mid session text source tags importance access_count times"

type gqlHit struct {
	storedProps
	Additional struct {
		ID       string    `json:"id"`
		Distance *float64  `json:"distance"`
		Score    string    `json:"score"`
		Vector   []float32 `json:"vector"`
	} `json:"_additional"`
}

// get runs a Get query on the class with args and returns the hits.
func (c *collection) get(ctx context.Context, args, additional string) ([]gqlHit, error) {
	if c.replicated {
		args += " consistencyLevel: " + c.b.opts.ReadConsistency
	}
	q := fmt.Sprintf("{ Get { %s(%s) { %s _additional { %s } } } }", c.class, args, fields, additional)
	var data struct {
		Get map[string][]gqlHit `json:"Get"`
	}
	if err := c.b.c.graphql(ctx, q, &data); err != nil {
		return nil, err
	}
	return data.Get[c.class], nil
}

// Get returns the memories with the given IDs that exist, in the order asked.
func (c *collection) Get(ctx context.Context, ids []string) ([]memory.Memory, error) {
	found := make(map[string]memory.Memory, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		where := map[string]any{"path": []string{"mid"}, "operator": "ContainsAny", "valueTextArray": chunk}
		hits, err := c.get(ctx, fmt.Sprintf("where: %s limit: %d", renderWhere(where), len(chunk)), "id vector")
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			m, err := h.toMemory(h.Additional.Vector)
			if err != nil {
				return nil, err
			}
			found[m.ID] = m
		}
	}
	out := make([]memory.Memory, 0, len(found))
	for _, id := range ids {
		if m, ok := found[id]; ok {
			out = append(out, m)
			delete(found, id) // a repeated ID is returned once
		}
	}
	return out, nil
}

// Delete removes the memories with the given IDs.
func (c *collection) Delete(ctx context.Context, ids []string) (int, error) {
	n := 0
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		where := map[string]any{"path": []string{"mid"}, "operator": "ContainsAny", "valueTextArray": chunk}
		d, err := c.b.c.batchDelete(ctx, c.class, where, c.b.opts.WriteConsistency)
		n += d
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// DeleteWhere removes every memory f matches.
func (c *collection) DeleteWhere(ctx context.Context, f *memory.Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	where, exact := translate(f)
	if exact && where != nil {
		return c.b.c.batchDelete(ctx, c.class, where, c.b.opts.WriteConsistency)
	}
	var ids []string
	if err := c.Scan(ctx, f, func(m memory.Memory) error { ids = append(ids, m.ID); return nil }); err != nil {
		return 0, err
	}
	return c.Delete(ctx, ids)
}

// search runs a Get with the search clause, pushing f down as far as it is
// exact and applying the rest to the hits.
func (c *collection) search(ctx context.Context, clause string, k int, f *memory.Filter, score func(*gqlHit) float64) ([]memory.Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	where, exact := translate(f)
	limit := k
	if !exact {
		limit = min(k*overFetch, maxLimit)
	}
	args := clause + fmt.Sprintf(" limit: %d", limit)
	if where != nil {
		args += " where: " + renderWhere(where)
	}
	hits, err := c.get(ctx, args, "id distance score")
	if err != nil {
		return nil, err
	}
	out := make([]memory.Hit, 0, min(k, len(hits)))
	for i := range hits {
		m, err := hits[i].toMemory(nil)
		if err != nil {
			return nil, err
		}
		if !exact && !f.Match(&m) {
			continue
		}
		out = append(out, memory.Hit{Memory: m, Score: score(&hits[i])})
		if len(out) == k {
			break
		}
	}
	return out, nil
}

// SearchVector returns the k memories most similar to v by cosine.
func (c *collection) SearchVector(ctx context.Context, v []float32, k int, f *memory.Filter) ([]memory.Hit, error) {
	if len(v) != c.spec.Dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, collection %d", memory.ErrInvalidInput, len(v), c.spec.Dim)
	}
	vec, _ := json.Marshal(v)
	return c.search(ctx, fmt.Sprintf("nearVector: {vector: %s}", vec), k, f, func(h *gqlHit) float64 {
		if h.Additional.Distance == nil {
			return 0
		}
		return 1 - *h.Additional.Distance
	})
}

// SearchText returns the k best memories for query by BM25 over engram's tokens.
func (c *collection) SearchText(ctx context.Context, query string, k int, f *memory.Filter) ([]memory.Hit, error) {
	terms := keyword.Tokens(query)
	if len(terms) == 0 {
		return nil, nil
	}
	q, _ := json.Marshal(strings.Join(terms, " "))
	return c.search(ctx, fmt.Sprintf(`bm25: {query: %s, properties: ["terms"]}`, q), k, f, func(h *gqlHit) float64 {
		s, _ := strconv.ParseFloat(h.Additional.Score, 64)
		return s
	})
}

// Touch counts one access for each memory and sets its last access.
func (c *collection) Touch(ctx context.Context, ids []string, at time.Time) error {
	c.touchMu.Lock()
	defer c.touchMu.Unlock()
	ms, err := c.Get(ctx, ids)
	if err != nil {
		return err
	}
	for i := range ms {
		ms[i].AccessCount++
		ms[i].LastAccess = at
	}
	return c.Upsert(ctx, ms)
}

// scanPage is how many objects one cursor request reads.
const scanPage = 500

// Scan calls fn for every memory f matches, in UUID order.
func (c *collection) Scan(ctx context.Context, f *memory.Filter, fn func(memory.Memory) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	after := ""
	for {
		objs, err := c.b.c.list(ctx, c.class, after, scanPage, true)
		if err != nil {
			return err
		}
		for _, o := range objs {
			var p storedProps
			if err := json.Unmarshal(o.Properties, &p); err != nil {
				return fmt.Errorf("weaviate: object %s: %w", o.ID, err)
			}
			m, err := p.toMemory(o.Vector)
			if err != nil {
				return err
			}
			if f.Match(&m) {
				if err := fn(m); err != nil {
					return err
				}
			}
		}
		if len(objs) < scanPage {
			return nil
		}
		after = objs[len(objs)-1].ID
	}
}

// Count returns how many memories f matches.
func (c *collection) Count(ctx context.Context, f *memory.Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	where, exact := translate(f)
	if !exact {
		n := 0
		err := c.Scan(ctx, f, func(memory.Memory) error { n++; return nil })
		return n, err
	}
	args := ""
	if where != nil {
		args = "(where: " + renderWhere(where) + ")"
	}
	var data struct {
		Aggregate map[string][]struct {
			Meta struct {
				Count int `json:"count"`
			} `json:"meta"`
		} `json:"Aggregate"`
	}
	if err := c.b.c.graphql(ctx, fmt.Sprintf("{ Aggregate { %s%s { meta { count } } } }", c.class, args), &data); err != nil {
		return 0, err
	}
	rows := data.Aggregate[c.class]
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Meta.Count, nil
}
