package server

import (
	"context"
	"net/http"

	"github.com/engramdb/engram/api"
)

// The data routes translate HTTP to the request layer (package api) and
// back: a body is decoded into the operation's request, path values and
// query parameters become its arguments, and its answer is written as JSON.
// What an operation checks, refuses and answers is defined there once, for
// HTTP, MCP and the CLI alike.

// The requests and answers of the routes (see package api).
type (
	RememberRequest         = api.RememberRequest
	RememberResponse        = api.RememberResponse
	RecallRequest           = api.RecallRequest
	RecallResult            = api.RecallResult
	RecallResponse          = api.RecallResponse
	ForgetRequest           = api.ForgetRequest
	ForgetResponse          = api.ForgetResponse
	RestoreForgottenRequest = api.RestoreForgottenRequest
	ForgottenJSON           = api.ForgottenJSON
	StartTaskRequest        = api.StartTaskRequest
	StepRequest             = api.StepRequest
	SessionJSON             = api.SessionJSON
	ListResponse            = api.ListResponse
	UpdateRequest           = api.UpdateRequest
	HistoryResponse         = api.HistoryResponse
	ExportRequest           = api.ExportRequest
	// What a write answers a key without the read right (see api.MemoryAnswer).
	MemoryReceipt       = api.MemoryReceipt
	ConversationReceipt = api.ConversationReceipt
	TaskReceipt         = api.TaskReceipt
)

func (h *Handler) registerDataRoutes() {
	h.route("POST /v1/remember", accessWrite, bodyOp(http.StatusOK, h.ops.Remember))
	h.route("POST /v1/recall", accessRead, bodyOp(http.StatusOK, h.ops.Recall))
	h.route("POST /v1/forget", accessWrite, bodyOp(http.StatusOK, h.ops.Forget))
	h.route("GET /v1/sessions", accessRead, noBodyOp(h.ops.Sessions))
	h.route("GET /v1/sessions/{session}/context", accessReadPath, pathOp("session", h.ops.Context))
	h.route("POST /v1/sessions/{session}/turns", accessWritePath, pathBodyOp("session", http.StatusOK, h.ops.AddTurn))
	h.route("POST /v1/sessions/{session}/distill", accessWritePath, pathOp("session", h.ops.Distill))
	h.route("DELETE /v1/sessions/{session}/context", accessWritePath, pathOp("session", h.ops.ClearContext))
	h.route("GET /v1/tasks", accessRead, noBodyOp(h.ops.Tasks))
	h.route("POST /v1/tasks", accessWrite, bodyOp(http.StatusCreated, h.ops.StartTask))
	h.route("GET /v1/tasks/{id}", accessRead, taskOp(h.ops.Task))
	h.route("POST /v1/tasks/{id}/steps", accessWrite, taskBodyOp(h.ops.UpdateStep))
	h.route("POST /v1/tasks/{id}/finish", accessWrite, taskBodyOp(h.ops.FinishTask))
	h.route("DELETE /v1/tasks/{id}", accessWrite, taskOp(h.ops.DeleteTask))
	h.route("GET /v1/stats", accessAdmin, h.stats)
}

// bodyOp serves op with the request decoded from the body, answering status.
func bodyOp[Req, Resp any](status int, op func(context.Context, Req) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req Req
		if err := decode(r, &req); err != nil {
			return err
		}
		resp, err := op(r.Context(), req)
		if err != nil {
			return err
		}
		writeJSON(w, status, resp)
		return nil
	}
}

// pathOp serves op with the path value name and no body.
func pathOp[Resp any](name string, op func(context.Context, string) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		resp, err := op(r.Context(), r.PathValue(name))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
		return nil
	}
}

// pathBodyOp serves op with the path value name and the request decoded from the body.
func pathBodyOp[Req, Resp any](name string, status int, op func(context.Context, string, Req) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req Req
		if err := decode(r, &req); err != nil {
			return err
		}
		resp, err := op(r.Context(), r.PathValue(name), req)
		if err != nil {
			return err
		}
		writeJSON(w, status, resp)
		return nil
	}
}

// taskRef is the task a task route names: the {id} path value, of the
// session ?session= names when given (task IDs are per session).
func taskRef(r *http.Request) api.TaskRef {
	ref := api.TaskRef{ID: r.PathValue("id")}
	if q := r.URL.Query(); q.Has("session") {
		s := q.Get("session")
		ref.Session = &s
	}
	return ref
}

// taskOp serves op with the task the route names and no body.
func taskOp[Resp any](op func(context.Context, api.TaskRef) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		resp, err := op(r.Context(), taskRef(r))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
		return nil
	}
}

// taskBodyOp serves op with the task the route names and the request decoded from the body.
func taskBodyOp[Req, Resp any](op func(context.Context, api.TaskRef, Req) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req Req
		if err := decode(r, &req); err != nil {
			return err
		}
		resp, err := op(r.Context(), taskRef(r), req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
		return nil
	}
}

// noBodyOp serves op, which takes no arguments.
func noBodyOp[Resp any](op func(context.Context) (Resp, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		resp, err := op(r.Context())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
		return nil
	}
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPI)
	return err
}

// stats answers the store's statistics (GET /v1/stats: without the directory).
func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := h.ops.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st.Stats)
	return nil
}
