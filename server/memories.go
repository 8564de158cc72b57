package server

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// The memory routes: get, list, update, delete, history and revert by ID, plus export and
// cleanup, each under the caller's scope (package api). A memory outside the scope answers
// 404 like a missing one.

func (h *Handler) registerMemoryRoutes() {
	h.route("GET /v1/memories", accessRead, h.listMemories)
	h.route("GET /v1/memories/{id}", accessRead, h.getMemory)
	h.route("PATCH /v1/memories/{id}", accessWrite, pathBodyOp("id", http.StatusOK, h.ops.Update))
	h.route("DELETE /v1/memories/{id}", accessWrite, pathOp("id", h.ops.Delete))
	h.route("GET /v1/memories/{id}/history", accessRead, pathOp("id", h.ops.History))
	h.route("POST /v1/memories/{id}/revert", accessWrite, pathBodyOp("id", http.StatusOK, h.ops.Revert))
	h.route("POST /v1/export", accessRead, h.export)
	h.route("POST /v1/cleanup", accessWrite, h.cleanup)
}

func (h *Handler) getMemory(w http.ResponseWriter, r *http.Request) error {
	m, err := h.ops.Get(r.Context(), api.GetRequest{ID: r.PathValue("id"), Vector: r.URL.Query().Get("vector") == "true"})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// listParams are the query parameters of GET /v1/memories.
var listParams = []string{"session", "user_id", "agent_id", "run_id", "where", "tag", "source", "since", "until", "limit", "cursor"}

// listRequest reads the query of GET /v1/memories: where (the JSON filter language), session,
// user_id, agent_id and run_id (api.ScopeIDs), tag (each one required), source, since and until (on created), limit and cursor.
func listRequest(q url.Values) (api.ListRequest, error) {
	var req api.ListRequest
	for k := range q {
		if !slices.Contains(listParams, k) {
			return req, fmt.Errorf("%w: unknown query parameter %q (want %v)", errBadRequest, k, listParams)
		}
	}
	if w := q.Get("where"); w != "" {
		f, err := memory.ParseFilter([]byte(w))
		if err != nil {
			return req, err
		}
		req.Filter = f
	}
	if vs, ok := q["session"]; ok {
		req.Session = &vs[0]
	}
	req.UserID, req.AgentID, req.RunID = q.Get("user_id"), q.Get("agent_id"), q.Get("run_id")
	req.Tags = q["tag"]
	if vs, ok := q["source"]; ok {
		req.Source = &vs[0]
	}
	req.Since, req.Until, req.Cursor = q.Get("since"), q.Get("until"), q.Get("cursor")
	if v := q.Get("limit"); v != "" {
		var err error
		if req.Limit, err = strconv.Atoi(v); err != nil || req.Limit < 1 {
			return req, fmt.Errorf("%w: limit=%q is not a positive integer", errBadRequest, v)
		}
	}
	return req, nil
}

func (h *Handler) listMemories(w http.ResponseWriter, r *http.Request) error {
	req, err := listRequest(r.URL.Query())
	if err != nil {
		return err
	}
	resp, err := h.ops.List(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// export streams the memories in the export format (docs/format/export.md), as
// application/x-ndjson.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) error {
	var req ExportRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	if _, err := h.ops.Export(r.Context(), bw, req); err != nil {
		if rec, ok := w.(*statusRecorder); ok && !rec.wrote {
			return err // nothing sent yet: an ordinary error answer
		}
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
	resp, err := h.ops.Cleanup(r.Context(), req, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
