package memory

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NotFoundError names the IDs an operation did not find. It matches ErrNotFound.
type NotFoundError struct {
	// Kind is what was looked for ("memory" unless set).
	Kind string
	IDs  []string
}

func (e *NotFoundError) Error() string {
	kind := cmp.Or(e.Kind, "memory")
	if len(e.IDs) == 1 {
		return fmt.Sprintf("memory: no %s with ID %q", kind, e.IDs[0])
	}
	q := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		q[i] = strconv.Quote(id)
	}
	return fmt.Sprintf("memory: no %s with IDs %s", kind, strings.Join(q, ", "))
}

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// LightScanner is an optional Collection capability: Scan without vectors, with fn called while
// the backend holds its read lock, so fn must not call back into the collection. List, History
// and the ID collection of ForgetWhere use it when the backend has it.
type LightScanner interface {
	ScanLight(ctx context.Context, f *Filter, fn func(*Memory)) error
}

// scanLight calls fn for every memory f matches, without vectors where the backend allows.
func scanLight(ctx context.Context, c Collection, f *Filter, fn func(*Memory)) error {
	if ls, ok := c.(LightScanner); ok {
		return ls.ScanLight(ctx, f, fn)
	}
	return c.Scan(ctx, f, func(m Memory) error {
		m.Vector = nil
		fn(&m)
		return nil
	})
}

// LightGetter is implemented by backends that can read memories by ID without their vectors;
// the recall path uses it to read texts and successors, so that a recall does not read vectors
// it drops (on the embedded engine they would be mapped into the process's resident memory).
type LightGetter interface {
	GetLight(ctx context.Context, ids []string) ([]Memory, error)
}

// getLight is Collection.Get without vectors, light where the backend allows.
func getLight(ctx context.Context, c Collection, ids []string) ([]Memory, error) {
	if lg, ok := c.(LightGetter); ok {
		return lg.GetLight(ctx, ids)
	}
	ms, err := c.Get(ctx, ids)
	for i := range ms {
		ms[i].Vector = nil
	}
	return ms, err
}

// Lookup returns the memory with the given ID, vector included, or a *NotFoundError.
func (s *Store) Lookup(ctx context.Context, id string) (Memory, error) {
	if id == "" {
		return Memory{}, errorf(ErrInvalidInput, "empty memory ID")
	}
	ms, err := s.Get(ctx, id)
	if err != nil {
		return Memory{}, err
	}
	if len(ms) == 0 {
		return Memory{}, &NotFoundError{IDs: []string{id}}
	}
	return ms[0], nil
}

// Limits of ListOptions.Limit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListOptions select one page of List.
type ListOptions struct {
	// Filter selects the memories (nil: all).
	Filter *Filter
	// Limit is the most memories on the page (DefaultListLimit, at most MaxListLimit).
	Limit int
	// Cursor continues after the page that returned it as ListPage.Next ("" starts).
	Cursor string
}

// ListPage is one page of List.
type ListPage struct {
	// Memories are newest first (by Created, then ID), without vectors.
	Memories []Memory
	// Next continues the listing; "" on the last page.
	Next string
}

// List returns the memories f matches, newest first (by Created; ties by ID), one page at a
// time. A cursor marks a position, so memories written while paging appear on later pages only
// if they sort after it. Each page scans the matching memories (kept in memory: only Limit at a
// time), so listing costs time proportional to what the filter selects.
func (s *Store) List(ctx context.Context, o ListOptions) (ListPage, error) {
	if err := o.Filter.Validate(); err != nil {
		return ListPage{}, err
	}
	switch {
	case o.Limit == 0:
		o.Limit = DefaultListLimit
	case o.Limit < 0 || o.Limit > MaxListLimit:
		return ListPage{}, errorf(ErrInvalidInput, "list limit %d outside 1..%d", o.Limit, MaxListLimit)
	}
	var after *cursor
	if o.Cursor != "" {
		c, err := parseCursor(o.Cursor)
		if err != nil {
			return ListPage{}, err
		}
		after = &c
	}
	coll, _, err := s.current()
	if err != nil {
		return ListPage{}, err
	}
	// Keep the Limit+1 first memories after the cursor: one more than the page tells whether
	// there is a next page.
	var page []Memory
	keep := o.Limit + 1
	err = scanLight(ctx, coll, o.Filter, func(m *Memory) {
		if after != nil && listOrder(m, after.created, after.id) <= 0 {
			return
		}
		if len(page) == keep && listOrder(m, page[keep-1].Created.UnixNano(), page[keep-1].ID) >= 0 {
			return
		}
		mm := *m
		mm.Vector = nil
		i, _ := slices.BinarySearchFunc(page, &mm, func(a Memory, b *Memory) int { return -listOrder(b, a.Created.UnixNano(), a.ID) })
		page = slices.Insert(page, i, mm)
		if len(page) > keep {
			page = page[:keep]
		}
	})
	if err != nil {
		return ListPage{}, err
	}
	out := ListPage{Memories: page}
	if len(page) > o.Limit {
		out.Memories = page[:o.Limit]
		last := out.Memories[o.Limit-1]
		out.Next = cursor{created: last.Created.UnixNano(), id: last.ID}.String()
	}
	return out, nil
}

// listOrder compares m with the position (created, id) in List's order: negative when m comes
// first (newer, or as new with a smaller ID).
func listOrder(m *Memory, created int64, id string) int {
	if c := cmp.Compare(created, m.Created.UnixNano()); c != 0 {
		return c
	}
	return strings.Compare(m.ID, id)
}

type cursor struct {
	created int64
	id      string
}

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.created, 10) + ":" + c.id))
}

func parseCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		ts, id, ok := strings.Cut(string(b), ":")
		n, perr := strconv.ParseInt(ts, 10, 64)
		if ok && perr == nil && id != "" && utf8.ValidString(id) {
			return cursor{created: n, id: id}, nil
		}
	}
	return cursor{}, errorf(ErrInvalidInput, "list cursor %q is not one List returned", s)
}

// UpdateOptions say what Update changes; a nil field is left as it is.
type UpdateOptions struct {
	// Text replaces the text (re-embedded; not chunked, at most Options.MaxTextBytes).
	Text *string
	// Source, Tags, Importance and Metadata replace those fields (Metadata as a whole, but for
	// the memory's scope: its agent_id and run_id stay unless Metadata names them; see Scope).
	Source     *string
	Tags       *[]string
	Importance *float64
	Metadata   *map[string]any
	// Current clears the memory's supersede mark (Memory.SupersededBy, SupersededAt): after a
	// wrong supersede it ranks as a current memory again.
	Current bool
}

// Update changes one memory by ID, keeps its earlier version in the history (ChangeUpdate) and
// returns the memory as it now is (without vector). A new text is re-embedded; ID, session,
// Created and access statistics stay; Updated becomes the store's clock. An unknown ID is a
// *NotFoundError; invalid fields are ErrInvalidInput, and nothing is written.
func (s *Store) Update(ctx context.Context, id string, o UpdateOptions) (Memory, error) {
	return s.update(ctx, id, o, ChangeUpdate)
}

func (s *Store) update(ctx context.Context, id string, o UpdateOptions, change Change) (Memory, error) {
	if id == "" {
		return Memory{}, errorf(ErrInvalidInput, "empty memory ID")
	}
	if o.Text == nil && o.Source == nil && o.Tags == nil && o.Importance == nil && o.Metadata == nil && !o.Current {
		return Memory{}, errorf(ErrInvalidInput, "update of %q changes nothing: give a text, source, tags, importance, metadata or current", id)
	}
	var vecs [][]float32
	_, emb, err := s.current()
	if err != nil {
		return Memory{}, err
	}
	if o.Text != nil {
		if vecs, err = s.embed(ctx, emb, []string{strings.TrimSpace(*o.Text)}); err != nil {
			return Memory{}, err
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb2, err := s.current()
	if err != nil {
		return Memory{}, err
	}
	ms, err := coll.Get(ctx, []string{id})
	if err != nil {
		return Memory{}, err
	}
	if len(ms) == 0 {
		return Memory{}, &NotFoundError{IDs: []string{id}}
	}
	old := ms[0]
	m := old.clone()
	if o.Text != nil {
		m.Text = strings.TrimSpace(*o.Text)
		if emb2 != emb {
			if vecs, err = s.embed(ctx, emb2, []string{m.Text}); err != nil {
				return Memory{}, err
			}
		}
		m.Vector = vecs[0]
	}
	if o.Source != nil {
		m.Source = *o.Source
	}
	if o.Tags != nil {
		m.Tags = slices.Clone(*o.Tags)
	}
	if o.Importance != nil {
		if *o.Importance <= 0 || math.IsNaN(*o.Importance) {
			return Memory{}, errorf(ErrInvalidInput, "importance %v outside (0, 1]", *o.Importance)
		}
		m.Importance = *o.Importance
	}
	if o.Metadata != nil {
		md := maps.Clone(*o.Metadata)
		for _, k := range []string{MetaAgentID, MetaRunID} { // the scope stays unless named (scope.go)
			if v, ok := old.Metadata[k]; ok {
				if _, named := md[k]; !named {
					if md == nil {
						md = map[string]any{}
					}
					md[k] = v
				}
			}
		}
		m.Metadata = md
	}
	if o.Current {
		m.SupersededBy, m.SupersededAt = "", time.Time{}
	}
	ro := RememberOptions{Source: m.Source, Tags: m.Tags, Importance: m.Importance, Metadata: m.Metadata}
	if err := s.checkRemember(m.Session, m.Text, &ro); err != nil {
		return Memory{}, err
	}
	m.Metadata = ro.Metadata
	now := s.opts.Clock()
	m.Updated = maxTime(now, m.Created)
	if err := s.writeHistory(ctx, []pendingVersion{{old: old, change: change, at: now}}); err != nil {
		return Memory{}, err
	}
	if err := upsert(ctx, coll, []Memory{m}); err != nil {
		return Memory{}, fmt.Errorf("memory: updating %q: %w", id, err)
	}
	m.Vector = nil
	return m, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Revert brings back version n of a memory's history as its current text and metadata (the
// version it replaces goes into the history as ChangeRestore) and returns the memory. A version
// written before the memory was superseded brings it back as current (UpdateOptions.Current).
func (s *Store) Revert(ctx context.Context, id string, n int) (Memory, error) {
	vs, err := s.History(ctx, id)
	if err != nil {
		return Memory{}, err
	}
	i := slices.IndexFunc(vs, func(v Version) bool { return v.Version == n })
	if i < 0 {
		return Memory{}, &NotFoundError{Kind: "version", IDs: []string{fmt.Sprintf("%s#%d", id, n)}}
	}
	v := vs[i].Memory
	md := v.Metadata
	if md == nil {
		md = map[string]any{}
	}
	tags := slices.Clone(v.Tags)
	return s.update(ctx, id, UpdateOptions{Text: &v.Text, Source: &v.Source, Tags: &tags, Importance: &v.Importance, Metadata: &md,
		Current: v.SupersededBy == ""}, ChangeRestore)
}

// Delete forgets the memories with the given IDs as Forget does (into the trash with
// Options.ForgetRetention set, else for good with their history). When any ID is unknown it
// forgets nothing and returns a *NotFoundError naming those IDs.
func (s *Store) Delete(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return errorf(ErrInvalidInput, "no memory IDs")
	}
	for _, id := range ids {
		if id == "" {
			return errorf(ErrInvalidInput, "empty memory ID")
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, emb, err := s.current()
	if err != nil {
		return err
	}
	found, err := c.Get(ctx, ids)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(found))
	for _, m := range found {
		have[m.ID] = true
	}
	var missing []string
	for _, id := range ids {
		if !have[id] && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return &NotFoundError{IDs: missing}
	}
	_, err = s.removeLocked(ctx, c, emb, ids)
	return err
}
