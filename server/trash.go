package server

import (
	"net/http"

	"github.com/engramdb/engram/api"
)

// Forgotten memories over HTTP (memory/trash.go, package api): POST /v1/forget moves memories
// to the trash when the store keeps forgotten memories (and deletes for good with "purge":
// true); GET /v1/forgotten lists the trash in the caller's scope; POST /v1/restore brings
// memories back; POST /v1/admin/forgotten/purge empties the trash (admin and write rights: it
// deletes every session's forgotten memories for good).

func (h *Handler) registerTrashRoutes() {
	h.route("GET /v1/forgotten", accessRead, h.listForgotten)
	h.route("POST /v1/restore", accessWrite, bodyOp(http.StatusOK, h.ops.RestoreForgotten))
	h.route("POST /v1/admin/forgotten/purge", accessAdminWrite, h.purgeForgotten)
}

// listForgotten answers the trash, restricted to the caller's scope (and to ?session=S).
func (h *Handler) listForgotten(w http.ResponseWriter, r *http.Request) error {
	var req api.ForgottenRequest
	if q := r.URL.Query(); q.Has("session") {
		s := q.Get("session")
		req.Session = &s
	}
	resp, err := h.ops.Forgotten(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) purgeForgotten(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	resp, err := h.ops.PurgeForgotten(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
