package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/engramdb/engram/memory"
)

// The memory routes: get, list, update, delete, history and revert by ID, plus export and
// cleanup, each under the caller's scope. A memory outside the scope answers 404 like a
// missing one.

func (h *Handler) registerMemoryRoutes() {
	h.route("GET /v1/memories", accessRead, h.listMemories)
	h.route("GET /v1/memories/{id}", accessRead, h.getMemory)
	h.route("PATCH /v1/memories/{id}", accessWrite, h.updateMemory)
	h.route("DELETE /v1/memories/{id}", accessWrite, h.deleteMemory)
	h.route("GET /v1/memories/{id}/history", accessRead, h.memoryHistory)
	h.route("POST /v1/memories/{id}/revert", accessWrite, h.revertMemory)
	h.route("POST /v1/export", accessRead, h.export)
	h.route("POST /v1/cleanup", accessWrite, h.cleanup)
}

// scopedMemory returns memory id when it exists and the caller may use its session with right;
// otherwise a *memory.NotFoundError (an out-of-scope memory looks missing). A key that may
// read but not write a memory gets 403 on a write.
func (h *Handler) scopedMemory(r *http.Request, id string, right Right) (memory.Memory, error) {
	m, err := h.store.Lookup(r.Context(), id)
	if err != nil {
		return memory.Memory{}, err
	}
	c := CallerFrom(r.Context())
	if !c.MayUse(m.Session) {
		return memory.Memory{}, &memory.NotFoundError{IDs: []string{id}}
	}
	if err := c.Check(right, m.Session); err != nil {
		return memory.Memory{}, err
	}
	return m, nil
}

// scoped ANDs f with the caller's scope; ok is false when the caller may see no session.
func (h *Handler) scoped(r *http.Request, f *memory.Filter) (*memory.Filter, bool, error) {
	sf, ok, err := h.scopeFilter(r.Context(), CallerFrom(r.Context()))
	if err != nil || !ok {
		return nil, false, err
	}
	switch {
	case sf == nil:
		return f, true, nil
	case f == nil:
		return sf, true, nil
	}
	return memory.And(f, sf), true, nil
}

func (h *Handler) getMemory(w http.ResponseWriter, r *http.Request) error {
	m, err := h.scopedMemory(r, r.PathValue("id"), RightRead)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memory.ToJSON(&m, r.URL.Query().Get("vector") == "true"))
	return nil
}

// ListResponse answers GET /v1/memories.
type ListResponse struct {
	Memories   []memory.MemoryJSON `json:"memories"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// listParams are the query parameters of GET /v1/memories.
var listParams = []string{"session", "where", "tag", "source", "since", "until", "limit", "cursor"}

// filterFromQuery builds the filter of GET /v1/memories: where (the JSON filter language),
// ANDed with session, tag (each one required), source, since and until (RFC 3339, on created).
func filterFromQuery(q url.Values) (*memory.Filter, error) {
	for k := range q {
		if !slices.Contains(listParams, k) {
			return nil, fmt.Errorf("%w: unknown query parameter %q (want %v)", errBadRequest, k, listParams)
		}
	}
	var fs []*memory.Filter
	if w := q.Get("where"); w != "" {
		f, err := memory.ParseFilter([]byte(w))
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	if vs, ok := q["session"]; ok {
		fs = append(fs, memory.Eq(memory.FieldSession, vs[0]))
	}
	for _, t := range q["tag"] {
		fs = append(fs, memory.Eq(memory.FieldTag, t))
	}
	if vs, ok := q["source"]; ok {
		fs = append(fs, memory.Eq(memory.FieldSource, vs[0]))
	}
	var since, until time.Time
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &since}, {"until", &until}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q is not an RFC 3339 time", errBadRequest, p.name, v)
			}
			*p.t = t
		}
	}
	if !since.IsZero() || !until.IsZero() {
		fs = append(fs, memory.TimeRange(memory.FieldCreated, since, until))
	}
	switch len(fs) {
	case 0:
		return nil, nil
	case 1:
		return fs[0], fs[0].Validate()
	}
	f := memory.And(fs...)
	return f, f.Validate()
}

func (h *Handler) listMemories(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := filterFromQuery(q)
	if err != nil {
		return err
	}
	if vs, ok := q["session"]; ok {
		if err := CallerFrom(r.Context()).Check(RightRead, vs[0]); err != nil {
			return err
		}
	}
	o := memory.ListOptions{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		if o.Limit, err = strconv.Atoi(v); err != nil || o.Limit < 1 {
			return fmt.Errorf("%w: limit=%q is not a positive integer", errBadRequest, v)
		}
	}
	resp := ListResponse{Memories: []memory.MemoryJSON{}}
	f, ok, err := h.scoped(r, f)
	if err != nil {
		return err
	}
	if ok {
		o.Filter = f
		page, err := h.store.List(r.Context(), o)
		if err != nil {
			return err
		}
		for i := range page.Memories {
			resp.Memories = append(resp.Memories, memory.ToJSON(&page.Memories[i], false))
		}
		resp.NextCursor = page.Next
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// UpdateRequest is the body of PATCH /v1/memories/{id}: the fields to replace.
type UpdateRequest struct {
	Text       *string         `json:"text,omitempty"`
	Source     *string         `json:"source,omitempty"`
	Tags       *[]string       `json:"tags,omitempty"`
	Importance *float64        `json:"importance,omitempty"`
	Metadata   *map[string]any `json:"metadata,omitempty"`
}

func (h *Handler) updateMemory(w http.ResponseWriter, r *http.Request) error {
	var req UpdateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := h.scopedMemory(r, id, RightWrite); err != nil {
		return err
	}
	m, err := h.store.Update(r.Context(), id, memory.UpdateOptions{Text: req.Text, Source: req.Source, Tags: req.Tags,
		Importance: req.Importance, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoryAnswer(CallerFrom(r.Context()), &m))
	return nil
}

func (h *Handler) deleteMemory(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.scopedMemory(r, id, RightWrite); err != nil {
		return err
	}
	if err := h.store.Delete(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": id})
	return nil
}

// HistoryResponse answers GET /v1/memories/{id}/history.
type HistoryResponse struct {
	ID       string               `json:"id"`
	Versions []memory.VersionJSON `json:"versions"`
}

func (h *Handler) memoryHistory(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	// The memory must be live and in scope (an archived one is restored first).
	if _, err := h.scopedMemory(r, id, RightRead); err != nil {
		return err
	}
	vs, err := h.store.History(r.Context(), id)
	if err != nil {
		return err
	}
	resp := HistoryResponse{ID: id, Versions: make([]memory.VersionJSON, 0, len(vs))}
	for i := range vs {
		resp.Versions = append(resp.Versions, memory.VersionToJSON(&vs[i]))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) revertMemory(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Version int `json:"version"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := h.scopedMemory(r, id, RightWrite); err != nil {
		return err
	}
	m, err := h.store.Revert(r.Context(), id, req.Version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoryAnswer(CallerFrom(r.Context()), &m))
	return nil
}

// ExportRequest is the body of POST /v1/export.
type ExportRequest struct {
	Filter  *memory.Filter `json:"filter,omitempty"`
	Vectors bool           `json:"vectors,omitempty"`
}

// export streams the memories in the export format (docs/format/export.md), as
// application/x-ndjson.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) error {
	var req ExportRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	f, ok, err := h.scoped(r, req.Filter)
	if err != nil {
		return err
	}
	if !ok { // the key sees no session: the header alone
		f = memory.And(memory.Exists(memory.FieldCreated), memory.Not(memory.Exists(memory.FieldCreated)))
	}
	if err := f.Validate(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	if _, err := h.store.Export(r.Context(), bw, memory.ExportOptions{Filter: f, Vectors: req.Vectors}); err != nil {
		// The status line is out; a truncated stream ends without its last line.
		h.opts.Logger.Error("export failed", "err", err)
		return nil
	}
	return bw.Flush()
}

// cleanup runs a cleanup (CleanupRequest, as POST /v1/admin/cleanup takes it) at once, on the
// sessions of the caller's scope only, and answers what moved (CleanupResult).
func (h *Handler) cleanup(w http.ResponseWriter, r *http.Request) error {
	var req CleanupRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := req.policy()
	if err != nil {
		return err
	}
	if req.Session != nil {
		if err := CallerFrom(r.Context()).Check(RightWrite, *req.Session); err != nil {
			return err
		}
	}
	f, ok, err := h.scoped(r, p.Filter)
	if err != nil {
		return err
	}
	var res memory.CleanupResult
	if ok {
		p.Filter = f
		if res, err = h.store.Cleanup(r.Context(), p); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, cleanupAnswer(CallerFrom(r.Context()), req.DryRun, res))
	return nil
}

// forgetIDs deletes memories by ID, all or nothing: an unknown ID, or one outside the caller's
// scope, is a *memory.NotFoundError naming it, and nothing is deleted.
func (h *Handler) forgetIDs(r *http.Request, c *Caller, ids []string) (int, error) {
	return forgetIDsCtx(r.Context(), h.store, c, ids, h.scopeIDs)
}

func forgetIDsCtx(ctx context.Context, store *memory.Store, c *Caller, ids []string,
	scope func(context.Context, *Caller, []string) ([]string, error)) (int, error) {
	var uniq []string
	for _, id := range ids {
		if !slices.Contains(uniq, id) {
			uniq = append(uniq, id)
		}
	}
	ids = uniq
	in, err := scope(ctx, c, ids)
	if err != nil {
		return 0, err
	}
	var missing []string
	for _, id := range ids {
		if !slices.Contains(in, id) && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &memory.NotFoundError{IDs: missing}
	}
	ms, err := store.Get(ctx, in...)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if err := c.Check(RightWrite, m.Session); err != nil {
			return 0, err
		}
	}
	if err := store.Delete(ctx, in...); err != nil {
		return 0, err
	}
	return len(ms), nil
}
