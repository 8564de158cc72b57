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
	Session string `json:"session"`
	Text    string `json:"text"`
	// Context: text around the memory that keyword search matches it by at a third of the
	// weight (a conversation turn's neighbouring turns), as memory.RememberOptions.Context.
	Context    string    `json:"context,omitempty"`
	Source     string    `json:"source,omitempty"`
	Tags       []string  `json:"tags,omitempty"`
	Importance float64   `json:"importance,omitempty"`
	Time       time.Time `json:"time,omitzero"`
	// Metadata: the caller's own attributes (strings, numbers, booleans).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// RememberResponse answers POST /v1/remember, one entry per chunk (see memory.RememberResult).
type RememberResponse struct {
	IDs        []string `json:"ids"`
	Merged     []bool   `json:"merged"`
	Superseded []bool   `json:"superseded"`
	Older      []bool   `json:"older"`
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
		Context: req.Context, Source: req.Source, Tags: req.Tags, Importance: req.Importance, Time: req.Time, Metadata: req.Metadata,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RememberResponse{IDs: res.IDs, Merged: res.Merged, Superseded: res.Superseded, Older: res.Older})
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
	// Turns is the recent conversation, oldest first; the query may then be empty.
	Turns []memory.Turn `json:"turns,omitempty"`
	// PromptTokens > 0 also returns the memory block for a model prompt.
	PromptTokens int `json:"prompt_tokens,omitempty"`
	// Filter restricts the candidates (docs/format/filter.md), within the session or scope.
	Filter *memory.Filter `json:"filter,omitempty"`
}

// RecallResult is one memory in a RecallResponse: the memory's JSON form and its score.
type RecallResult = memory.ResultJSON

// RecallResponse answers POST /v1/recall.
type RecallResponse struct {
	Results []RecallResult `json:"results"`
	Prompt  string         `json:"prompt,omitempty"`
	// SessionEmpty is true when the session recalled from holds no memories at all (so an empty
	// result is not about the query); it says nothing about other sessions.
	SessionEmpty bool `json:"session_empty,omitempty"`
}

func (req *RecallRequest) options() (memory.RecallOptions, error) {
	o := memory.RecallOptions{
		Session: req.Session, AllSessions: req.AllSessions, K: req.K,
		VectorWeight: req.VectorWeight, KeywordWeight: req.KeywordWeight,
		MinScore: req.MinScore, SourceWeights: req.SourceWeights, NoTouch: req.NoTouch,
		Decay: memory.Decay{Off: req.NoDecay}, Filter: req.Filter, Turns: req.Turns,
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
	for i := range results {
		resp.Results = append(resp.Results, memory.ResultToJSON(&results[i]))
	}
	if len(results) == 0 && !req.AllSessions {
		n, err := h.store.Count(r.Context(), memory.Eq(memory.FieldSession, req.Session))
		if err != nil {
			return err
		}
		resp.SessionEmpty = n == 0
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

// ForgetRequest is the body of POST /v1/forget: IDs (all must exist, or nothing is deleted),
// a session with All set to forget every memory of it, or a filter. Forgotten memories stay
// restorable (POST /v1/restore) for the store's retention; Purge deletes them for good instead,
// with their copies in the trash and the archive and their history (then IDs may name memories
// that are only forgotten or archived).
type ForgetRequest struct {
	IDs     []string       `json:"ids,omitempty"`
	Session *string        `json:"session,omitempty"`
	All     bool           `json:"all,omitempty"`
	Filter  *memory.Filter `json:"filter,omitempty"`
	Purge   bool           `json:"purge,omitempty"`
}

// ForgetResponse answers POST /v1/forget. Restorable says whether the forgotten memories can be
// restored, until PurgeAfter.
type ForgetResponse struct {
	Forgotten  int       `json:"forgotten"`
	Purged     bool      `json:"purged,omitempty"`
	Restorable bool      `json:"restorable"`
	PurgeAfter time.Time `json:"purge_after,omitzero"`
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request) error {
	var req ForgetRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var n int
	var err error
	c := CallerFrom(r.Context())
	ways := 0
	for _, b := range []bool{len(req.IDs) > 0, req.All, req.Filter != nil} {
		if b {
			ways++
		}
	}
	where := h.store.ForgetWhere
	if req.Purge {
		where = h.store.PurgeWhere
	}
	switch {
	case ways > 1:
		return fmt.Errorf("%w: give one of ids, session with all=true, or filter", errBadRequest)
	case len(req.IDs) > 0 && req.Purge:
		n, err = purgeIDsCtx(r.Context(), h.store, c, req.IDs)
	case len(req.IDs) > 0:
		n, err = h.forgetIDs(r, c, req.IDs)
	case req.All && req.Session != nil:
		if err := c.Check(RightWrite, *req.Session); err != nil {
			return err
		}
		n, err = where(r.Context(), memory.Eq(memory.FieldSession, *req.Session))
	case req.Filter != nil:
		f := req.Filter
		if req.Session != nil {
			if err := c.Check(RightWrite, *req.Session); err != nil {
				return err
			}
			f = memory.And(f, memory.Eq(memory.FieldSession, *req.Session))
		}
		var ok bool
		if f, ok, err = h.scoped(r, f); err == nil && ok {
			n, err = where(r.Context(), f)
		}
	default:
		return fmt.Errorf("%w: give ids, session with all=true, or filter", errBadRequest)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, forgetResponse(h.store, n, req.Purge))
	return nil
}

func forgetResponse(s *memory.Store, n int, purged bool) ForgetResponse {
	resp := ForgetResponse{Forgotten: n, Purged: purged}
	if ret := s.ForgetRetention(); ret > 0 && !purged {
		resp.Restorable, resp.PurgeAfter = true, time.Now().UTC().Add(ret).Truncate(time.Second)
	}
	return resp
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
	writeJSON(w, http.StatusOK, conversationAnswer(CallerFrom(r.Context()), c))
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
	writeJSON(w, http.StatusCreated, taskAnswer(CallerFrom(r.Context()), t))
	return nil
}

func (h *Handler) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := h.scopedTask(r, r.PathValue("id"))
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
	t, err := h.scopedTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	t, err = h.store.UpdateSessionStep(r.Context(), t.Session, t.ID, memory.Step{Name: req.Name, Status: req.Status, Result: req.Result}, req.Next)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskAnswer(CallerFrom(r.Context()), t))
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
	t, err := h.scopedTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	t, err = h.store.FinishSessionTask(r.Context(), t.Session, t.ID, req.Status)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskAnswer(CallerFrom(r.Context()), t))
	return nil
}

func (h *Handler) deleteTask(w http.ResponseWriter, r *http.Request) error {
	t, err := h.scopedTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := h.store.DeleteSessionTask(r.Context(), t.Session, t.ID); err != nil {
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
