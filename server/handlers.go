package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/engramdb/engram/memory"
)

func (h *Handler) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPI)
	return err
}

// RememberRequest is the body of POST /v1/remember.
type RememberRequest struct {
	Session    string    `json:"session"`
	Text       string    `json:"text"`
	Source     string    `json:"source,omitempty"`
	Tags       []string  `json:"tags,omitempty"`
	Importance float64   `json:"importance,omitempty"`
	Time       time.Time `json:"time,omitzero"`
}

// RememberResponse answers POST /v1/remember.
type RememberResponse struct {
	IDs    []string `json:"ids"`
	Merged []bool   `json:"merged"`
}

func (h *Handler) remember(w http.ResponseWriter, r *http.Request) error {
	var req RememberRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.checkRanges(); err != nil {
		return err
	}
	if err := CallerFrom(r.Context()).Check(RightWrite, req.Session); err != nil {
		return err
	}
	res, err := h.store.Remember(r.Context(), req.Session, req.Text, memory.RememberOptions{
		Source: req.Source, Tags: req.Tags, Importance: req.Importance, Time: req.Time,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RememberResponse{IDs: res.IDs, Merged: res.Merged})
	return nil
}

// RecallRequest is the body of POST /v1/recall.
type RecallRequest struct {
	Query         string             `json:"query"`
	Session       string             `json:"session"`
	AllSessions   bool               `json:"all_sessions,omitempty"`
	K             int                `json:"k,omitempty"`
	Mode          string             `json:"mode,omitempty"`   // hybrid (default), vector, keyword
	Fusion        string             `json:"fusion,omitempty"` // weighted (default), rrf
	VectorWeight  float64            `json:"vector_weight,omitempty"`
	KeywordWeight float64            `json:"keyword_weight,omitempty"`
	MinScore      float64            `json:"min_score,omitempty"`
	NoDecay       bool               `json:"no_decay,omitempty"`
	SourceWeights map[string]float64 `json:"source_weights,omitempty"`
	NoTouch       bool               `json:"no_touch,omitempty"`
	// PromptTokens > 0 also returns the memory block for a model prompt.
	PromptTokens int `json:"prompt_tokens,omitempty"`
}

// RecallResult is one memory in a RecallResponse.
type RecallResult struct {
	ID          string       `json:"id"`
	Session     string       `json:"session"`
	Text        string       `json:"text"`
	Source      string       `json:"source,omitempty"`
	Tags        []string     `json:"tags,omitempty"`
	Importance  float64      `json:"importance"`
	Created     time.Time    `json:"created"`
	Updated     time.Time    `json:"updated"`
	AccessCount uint64       `json:"access_count"`
	Score       memory.Score `json:"score"`
}

// RecallResponse answers POST /v1/recall.
type RecallResponse struct {
	Results []RecallResult `json:"results"`
	Prompt  string         `json:"prompt,omitempty"`
}

func (req *RecallRequest) options() (memory.RecallOptions, error) {
	o := memory.RecallOptions{
		Session: req.Session, AllSessions: req.AllSessions, K: req.K,
		VectorWeight: req.VectorWeight, KeywordWeight: req.KeywordWeight,
		MinScore: req.MinScore, SourceWeights: req.SourceWeights, NoTouch: req.NoTouch,
		Decay: memory.Decay{Off: req.NoDecay},
	}
	switch req.Mode {
	case "", "hybrid":
		o.Mode = memory.ModeHybrid
	case "vector":
		o.Mode = memory.ModeVector
	case "keyword", "bm25":
		o.Mode = memory.ModeKeyword
	default:
		return o, fmt.Errorf("%w: unknown mode %q (want hybrid, vector or keyword)", errBadRequest, req.Mode)
	}
	switch req.Fusion {
	case "", "weighted":
		o.Fusion = memory.FusionWeighted
	case "rrf":
		o.Fusion = memory.FusionRRF
	default:
		return o, fmt.Errorf("%w: unknown fusion %q (want weighted or rrf)", errBadRequest, req.Fusion)
	}
	return o, nil
}

func (h *Handler) recall(w http.ResponseWriter, r *http.Request) error {
	var req RecallRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.checkRanges(); err != nil {
		return err
	}
	opts, err := req.options()
	if err != nil {
		return err
	}
	var results []memory.Result
	if ok, err := h.scopeRecall(r.Context(), &opts); err != nil {
		return err
	} else if ok {
		if results, err = h.store.Recall(r.Context(), req.Query, opts); err != nil {
			return err
		}
	}
	resp := RecallResponse{Results: make([]RecallResult, 0, len(results))}
	for _, m := range results {
		resp.Results = append(resp.Results, RecallResult{
			ID: m.ID, Session: m.Session, Text: m.Text, Source: m.Source, Tags: m.Tags,
			Importance: m.Importance, Created: m.Created, Updated: m.Updated,
			AccessCount: m.AccessCount, Score: m.Score,
		})
	}
	if req.PromptTokens > 0 {
		p, err := memory.BuildPrompt(req.Query, results, memory.PromptOptions{TokenBudget: req.PromptTokens})
		if err != nil {
			return err
		}
		resp.Prompt = p.Text
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// ForgetRequest is the body of POST /v1/forget: either IDs, or a session
// with All set to forget every memory of it.
type ForgetRequest struct {
	IDs     []string `json:"ids,omitempty"`
	Session *string  `json:"session,omitempty"`
	All     bool     `json:"all,omitempty"`
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request) error {
	var req ForgetRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var n int
	var err error
	c := CallerFrom(r.Context())
	switch {
	case len(req.IDs) > 0 && req.All:
		return fmt.Errorf("%w: give either ids or session+all, not both", errBadRequest)
	case len(req.IDs) > 0:
		var ids []string
		if ids, err = h.scopeIDs(r.Context(), c, req.IDs); err == nil && len(ids) > 0 {
			n, err = h.store.Forget(r.Context(), ids...)
		}
	case req.All && req.Session != nil:
		if err := c.Check(RightWrite, *req.Session); err != nil {
			return err
		}
		n, err = h.store.ForgetWhere(r.Context(), memory.Eq(memory.FieldSession, *req.Session))
	default:
		return fmt.Errorf("%w: give ids, or session with all=true", errBadRequest)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"forgotten": n})
	return nil
}

func (h *Handler) context(w http.ResponseWriter, r *http.Request) error {
	c, err := h.store.Context(r.Context(), r.PathValue("session"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (h *Handler) addTurn(w http.ResponseWriter, r *http.Request) error {
	var t memory.Turn
	if err := decode(r, &t); err != nil {
		return err
	}
	c, err := h.store.AddTurn(r.Context(), r.PathValue("session"), t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (h *Handler) clearContext(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.ClearConversation(r.Context(), r.PathValue("session")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"cleared": true})
	return nil
}

func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request) error {
	tasks, err := h.store.Tasks(r.Context())
	if err != nil {
		return err
	}
	tasks = VisibleBy(CallerFrom(r.Context()), tasks, func(t memory.Task) string { return t.Session })
	if tasks == nil {
		tasks = []memory.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks})
	return nil
}

// StartTaskRequest is the body of POST /v1/tasks.
type StartTaskRequest struct {
	ID   string `json:"id,omitempty"`
	Goal string `json:"goal"`
	// Session is the session the task works for; a scoped key must name
	// one of its sessions.
	Session string `json:"session,omitempty"`
}

func (h *Handler) startTask(w http.ResponseWriter, r *http.Request) error {
	var req StartTaskRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := CallerFrom(r.Context()).Check(RightWrite, req.Session); err != nil {
		return err
	}
	t, err := h.store.StartSessionTask(r.Context(), req.Session, req.ID, req.Goal)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, t)
	return nil
}

func (h *Handler) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := h.scopedTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// StepRequest is the body of POST /v1/tasks/{id}/steps.
type StepRequest struct {
	Name   string            `json:"name"`
	Status memory.StepStatus `json:"status"`
	Result json.RawMessage   `json:"result,omitempty"`
	Next   string            `json:"next,omitempty"`
}

func (h *Handler) updateStep(w http.ResponseWriter, r *http.Request) error {
	var req StepRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if _, err := h.scopedTask(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	t, err := h.store.UpdateStep(r.Context(), r.PathValue("id"), memory.Step{Name: req.Name, Status: req.Status, Result: req.Result}, req.Next)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (h *Handler) finishTask(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Status memory.TaskStatus `json:"status"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Status == "" {
		req.Status = memory.TaskDone
	}
	if _, err := h.scopedTask(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	t, err := h.store.FinishTask(r.Context(), r.PathValue("id"), req.Status)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (h *Handler) deleteTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.scopedTask(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	if err := h.store.DeleteTask(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true})
	return nil
}

func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := h.store.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// SessionJSON is one session in GET /v1/sessions.
type SessionJSON struct {
	Name     string    `json:"name"`
	Memories int       `json:"memories"`
	Newest   time.Time `json:"newest"`
}

func (h *Handler) sessions(w http.ResponseWriter, r *http.Request) error {
	ss, err := h.store.Sessions(r.Context())
	if err != nil {
		return err
	}
	ss = VisibleBy(CallerFrom(r.Context()), ss, func(s memory.SessionInfo) string { return s.Name })
	out := make([]SessionJSON, 0, len(ss))
	for _, s := range ss {
		out = append(out, SessionJSON{Name: s.Name, Memories: s.Memories, Newest: s.Newest})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
	return nil
}
