package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/engramdb/engram/memory"
)

// Forgotten memories over HTTP and MCP (memory/trash.go): POST /v1/forget moves memories to the
// trash when the store keeps forgotten memories (and deletes for good with "purge": true);
// GET /v1/forgotten lists the trash in the caller's scope; POST /v1/restore brings memories
// back; POST /v1/admin/forgotten/purge empties the trash (admin and write rights: it deletes
// every session's forgotten memories for good).

// ForgottenJSON is a forgotten memory as the routes write it: the memory and when it was
// forgotten and is purged.
type ForgottenJSON struct {
	MemoryJSON
	Forgotten  time.Time `json:"forgotten"`
	PurgeAfter time.Time `json:"purge_after"`
}

func forgottenJSON(fs []memory.ForgottenMemory) []ForgottenJSON {
	out := make([]ForgottenJSON, 0, len(fs))
	for _, f := range fs {
		out = append(out, ForgottenJSON{MemoryJSON: FromMemory(f.Memory, false), Forgotten: f.Forgotten, PurgeAfter: f.PurgeAfter})
	}
	return out
}

// RestoreForgottenRequest is the body of POST /v1/restore.
type RestoreForgottenRequest struct {
	IDs []string `json:"ids"`
}

func (h *Handler) registerTrashRoutes() {
	h.route("GET /v1/forgotten", accessRead, h.listForgotten)
	h.route("POST /v1/restore", accessWrite, h.restoreForgotten)
	h.route("POST /v1/admin/forgotten/purge", accessAdminWrite, h.purgeForgotten)
}

// listForgotten answers the trash, restricted to the caller's scope (and to ?session=S).
func (h *Handler) listForgotten(w http.ResponseWriter, r *http.Request) error {
	c := CallerFrom(r.Context())
	q := r.URL.Query()
	if q.Has("session") {
		if err := c.Check(RightRead, q.Get("session")); err != nil {
			return err
		}
	}
	fs, err := h.store.Forgotten(r.Context())
	if err != nil {
		return err
	}
	fs = slices.DeleteFunc(fs, func(f memory.ForgottenMemory) bool {
		return !c.MayUse(f.Session) || (q.Has("session") && f.Session != q.Get("session"))
	})
	writeJSON(w, http.StatusOK, map[string]any{"memories": forgottenJSON(fs)})
	return nil
}

func (h *Handler) restoreForgotten(w http.ResponseWriter, r *http.Request) error {
	var req RestoreForgottenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	n, err := restoreForgottenCtx(r.Context(), h.store, CallerFrom(r.Context()), req.IDs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"restored": n})
	return nil
}

// restoreForgottenCtx restores forgotten memories by ID, all or nothing: an ID not in the trash,
// or of a session outside the caller's scope, is a *memory.NotFoundError naming it.
func restoreForgottenCtx(ctx context.Context, store *memory.Store, c *Caller, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, fmt.Errorf("%w: restore needs ids", errBadRequest)
	}
	for _, id := range ids {
		if id == "" {
			return 0, fmt.Errorf("%w: empty memory ID", errBadRequest)
		}
	}
	fs, err := store.Forgotten(ctx, ids...)
	if err != nil {
		return 0, err
	}
	var missing []string
	for _, id := range ids {
		i := slices.IndexFunc(fs, func(f memory.ForgottenMemory) bool { return f.ID == id })
		if (i < 0 || !c.MayUse(fs[i].Session)) && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &memory.NotFoundError{Kind: "forgotten memory", IDs: missing}
	}
	for _, f := range fs {
		if err := c.Check(RightWrite, f.Session); err != nil {
			return 0, err
		}
	}
	return store.Unforget(ctx, ids...)
}

// purgeIDsCtx deletes memories for good by ID, wherever they are (live, in the trash, in the
// archive), all or nothing: an ID found nowhere in the caller's scope is a *memory.NotFoundError.
func purgeIDsCtx(ctx context.Context, store *memory.Store, c *Caller, ids []string) (int, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	sessions := map[string][]string{}
	live, err := store.Get(ctx, ids...)
	if err != nil {
		return 0, err
	}
	for _, m := range live {
		sessions[m.ID] = append(sessions[m.ID], m.Session)
	}
	fs, err := store.Forgotten(ctx, ids...)
	if err != nil {
		return 0, err
	}
	for _, f := range fs {
		sessions[f.ID] = append(sessions[f.ID], f.Session)
	}
	archived, err := store.Archived(ctx)
	if err != nil {
		return 0, err
	}
	for _, m := range archived {
		if slices.Contains(ids, m.ID) {
			sessions[m.ID] = append(sessions[m.ID], m.Session)
		}
	}
	var missing []string
	for _, id := range ids {
		ss := sessions[id]
		if len(ss) == 0 || slices.ContainsFunc(ss, func(s string) bool { return !c.MayUse(s) }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &memory.NotFoundError{IDs: missing}
	}
	for _, ss := range sessions {
		for _, s := range ss {
			if err := c.Check(RightWrite, s); err != nil {
				return 0, err
			}
		}
	}
	return store.Purge(ctx, ids...)
}

func (h *Handler) purgeForgotten(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	n, err := h.store.PurgeForgotten(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
	return nil
}
