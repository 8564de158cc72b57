package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// The data operations (api.Ops) through the HTTP API of the server that
// holds the store: each request goes to its route as is and the answer
// comes back as the request layer gave it, so a command prints the same on
// a local store (api.Local) and through a server. memctl mcp on a served
// store serves these to its MCP client.

// dataOps opens the store here, or finds the server that holds it
// (openOrRemote), and returns the data operations on it.
func (a *app) dataOps(ctx context.Context) (api.Ops, error) {
	return a.dataOpsWith(ctx, memory.Options{})
}

// dataOpsWith is dataOps opening the store with opts (openStoreWith).
func (a *app) dataOpsWith(ctx context.Context, opts memory.Options) (api.Ops, error) {
	s, c, err := a.openOrRemoteWith(ctx, opts)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return remoteData{c}, nil
	}
	return a.local(s), nil
}

// local is the request layer on a store this process opened; the
// commands' context carries api.LocalCaller (rootCommand).
func (a *app) local(s *memory.Store) *api.Local {
	o := api.Options{NewEmbedder: a.newEmbedder, Reembedded: func(spec string) { a.recordEmbedder(s, spec) }}
	if !isRemote(a.dir) {
		o.Dir = a.dir
	}
	return api.New(s, o)
}

// isNotFound reports whether err says a memory or task is missing: the
// layer's ErrNotFound, or the server's 404.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.Is(err, memory.ErrNotFound) || errors.As(err, &ae) && ae.status == http.StatusNotFound
}

// remoteData is api.Ops through a server's API.
type remoteData struct{ c *client }

var _ api.Ops = remoteData{}

// call sends body (nil: none) to method path and decodes the answer into a T.
func call[T any](ctx context.Context, c *client, method, path string, body any) (T, error) {
	var out T
	err := c.do(ctx, method, path, body, &out)
	return out, err
}

func memoryPath(id string) string { return "/v1/memories/" + url.PathEscape(id) }

// taskPath is the route of the task ref names (then sub, such as "/steps"),
// with its session when given (task IDs are per session).
func taskPath(ref api.TaskRef, sub string) string {
	p := "/v1/tasks/" + url.PathEscape(ref.ID) + sub
	if ref.Session != nil {
		p += "?session=" + url.QueryEscape(*ref.Session)
	}
	return p
}

// contextPath is the route of a session's conversation. The default session
// ("") has none: a path segment cannot be empty.
func contextPath(session string) (string, error) {
	if session == "" {
		return "", errors.New("the default session's conversation is not reachable through the server's API (it has no path); stop the server or name a session")
	}
	return "/v1/sessions/" + url.PathEscape(session), nil
}

func (r remoteData) Remember(ctx context.Context, req api.RememberRequest) (api.RememberResponse, error) {
	return call[api.RememberResponse](ctx, r.c, http.MethodPost, "/v1/remember", req)
}

func (r remoteData) Recall(ctx context.Context, req api.RecallRequest) (api.RecallResponse, error) {
	return call[api.RecallResponse](ctx, r.c, http.MethodPost, "/v1/recall", req)
}

func (r remoteData) Forget(ctx context.Context, req api.ForgetRequest) (api.ForgetResponse, error) {
	return call[api.ForgetResponse](ctx, r.c, http.MethodPost, "/v1/forget", req)
}

func (r remoteData) RestoreForgotten(ctx context.Context, req api.RestoreForgottenRequest) (api.RestoredResponse, error) {
	return call[api.RestoredResponse](ctx, r.c, http.MethodPost, "/v1/restore", req)
}

func (r remoteData) Forgotten(ctx context.Context, req api.ForgottenRequest) (api.ForgottenResponse, error) {
	path := "/v1/forgotten"
	if req.Session != nil {
		path += "?session=" + url.QueryEscape(*req.Session)
	}
	resp, err := call[api.ForgottenResponse](ctx, r.c, http.MethodGet, path, nil)
	if resp.Memories == nil {
		resp.Memories = []api.ForgottenJSON{}
	}
	return resp, err
}

func (r remoteData) PurgeForgotten(ctx context.Context) (api.PurgedResponse, error) {
	return call[api.PurgedResponse](ctx, r.c, http.MethodPost, "/v1/admin/forgotten/purge", nil)
}

func (r remoteData) Get(ctx context.Context, req api.GetRequest) (memory.MemoryJSON, error) {
	path := memoryPath(req.ID)
	if req.Vector {
		path += "?vector=true"
	}
	return call[memory.MemoryJSON](ctx, r.c, http.MethodGet, path, nil)
}

func (r remoteData) List(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	q := url.Values{}
	if req.Filter != nil {
		w, err := req.Filter.MarshalJSON()
		if err != nil {
			return api.ListResponse{}, err
		}
		q.Set("where", string(w))
	}
	if req.Session != nil {
		q.Set("session", *req.Session)
	}
	for _, t := range req.Tags {
		q.Add("tag", t)
	}
	if req.Source != nil {
		q.Set("source", *req.Source)
	}
	for k, v := range map[string]string{"since": req.Since, "until": req.Until, "cursor": req.Cursor,
		"user_id": req.UserID, "agent_id": req.AgentID, "run_id": req.RunID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	return call[api.ListResponse](ctx, r.c, http.MethodGet, "/v1/memories?"+q.Encode(), nil)
}

func (r remoteData) Update(ctx context.Context, id string, req api.UpdateRequest) (api.MemoryAnswer, error) {
	return call[api.MemoryAnswer](ctx, r.c, http.MethodPatch, memoryPath(id), req)
}

func (r remoteData) Delete(ctx context.Context, id string) (api.DeleteResponse, error) {
	return call[api.DeleteResponse](ctx, r.c, http.MethodDelete, memoryPath(id), nil)
}

func (r remoteData) History(ctx context.Context, id string) (api.HistoryResponse, error) {
	return call[api.HistoryResponse](ctx, r.c, http.MethodGet, memoryPath(id)+"/history", nil)
}

func (r remoteData) Revert(ctx context.Context, id string, req api.RevertRequest) (api.MemoryAnswer, error) {
	return call[api.MemoryAnswer](ctx, r.c, http.MethodPost, memoryPath(id)+"/revert", req)
}

func (r remoteData) Sessions(ctx context.Context) (api.SessionsResponse, error) {
	return call[api.SessionsResponse](ctx, r.c, http.MethodGet, "/v1/sessions", nil)
}

func (r remoteData) Context(ctx context.Context, session string) (memory.Conversation, error) {
	path, err := contextPath(session)
	if err != nil {
		return memory.Conversation{}, err
	}
	return call[memory.Conversation](ctx, r.c, http.MethodGet, path+"/context", nil)
}

func (r remoteData) AddTurn(ctx context.Context, session string, turn memory.Turn) (api.ConversationAnswer, error) {
	path, err := contextPath(session)
	if err != nil {
		return api.ConversationAnswer{}, err
	}
	return call[api.ConversationAnswer](ctx, r.c, http.MethodPost, path+"/turns", turn)
}

func (r remoteData) Distill(ctx context.Context, session string) (memory.DistillResult, error) {
	path, err := contextPath(session)
	if err != nil {
		return memory.DistillResult{}, err
	}
	return call[memory.DistillResult](ctx, r.c, http.MethodPost, path+"/distill", nil)
}

func (r remoteData) ClearContext(ctx context.Context, session string) (api.ClearedResponse, error) {
	path, err := contextPath(session)
	if err != nil {
		return api.ClearedResponse{}, err
	}
	return call[api.ClearedResponse](ctx, r.c, http.MethodDelete, path+"/context", nil)
}

func (r remoteData) Tasks(ctx context.Context) (api.TasksResponse, error) {
	return call[api.TasksResponse](ctx, r.c, http.MethodGet, "/v1/tasks", nil)
}

func (r remoteData) Task(ctx context.Context, ref api.TaskRef) (memory.Task, error) {
	return call[memory.Task](ctx, r.c, http.MethodGet, taskPath(ref, ""), nil)
}

func (r remoteData) StartTask(ctx context.Context, req api.StartTaskRequest) (api.TaskAnswer, error) {
	return call[api.TaskAnswer](ctx, r.c, http.MethodPost, "/v1/tasks", req)
}

func (r remoteData) UpdateStep(ctx context.Context, ref api.TaskRef, req api.StepRequest) (api.TaskAnswer, error) {
	return call[api.TaskAnswer](ctx, r.c, http.MethodPost, taskPath(ref, "/steps"), req)
}

func (r remoteData) FinishTask(ctx context.Context, ref api.TaskRef, req api.FinishRequest) (api.TaskAnswer, error) {
	return call[api.TaskAnswer](ctx, r.c, http.MethodPost, taskPath(ref, "/finish"), req)
}

func (r remoteData) DeleteTask(ctx context.Context, ref api.TaskRef) (api.DeletedResponse, error) {
	return call[api.DeletedResponse](ctx, r.c, http.MethodDelete, taskPath(ref, ""), nil)
}
