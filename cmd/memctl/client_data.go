package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// The data commands (remember, recall, get, list, ...) through a server's
// API. Each returns the values the local store would, so the commands print
// with the same code either way.

// isNotFound reports whether err is the server's 404.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound
}

// remember sends one text; the answer is the store's RememberResult.
func (c *client) remember(ctx context.Context, session, text string, o memory.RememberOptions) (memory.RememberResult, error) {
	var resp server.RememberResponse
	req := server.RememberRequest{Session: session, Text: text, Context: o.Context, Source: o.Source, Tags: o.Tags, Importance: o.Importance, Metadata: o.Metadata}
	if err := c.do(ctx, http.MethodPost, "/v1/remember", req, &resp); err != nil {
		return memory.RememberResult{}, err
	}
	return memory.RememberResult{IDs: resp.IDs, Merged: resp.Merged, Superseded: resp.Superseded, Older: resp.Older}, nil
}

// recall runs req and returns the results and whether the session is empty.
func (c *client) recall(ctx context.Context, req server.RecallRequest) ([]memory.Result, bool, error) {
	var resp server.RecallResponse
	if err := c.do(ctx, http.MethodPost, "/v1/recall", req, &resp); err != nil {
		return nil, false, err
	}
	out := make([]memory.Result, len(resp.Results))
	for i := range resp.Results {
		out[i] = memory.Result{Memory: resp.Results[i].Memory(), Score: resp.Results[i].Score}
	}
	return out, resp.SessionEmpty, nil
}

// get returns the memories of ids that exist, in order; the others are
// left out, as memory.Store.Get does.
func (c *client) get(ctx context.Context, ids []string, vector bool) ([]memory.Memory, error) {
	var out []memory.Memory
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		path := "/v1/memories/" + url.PathEscape(id)
		if vector {
			path += "?vector=true"
		}
		var j memory.MemoryJSON
		if err := c.do(ctx, http.MethodGet, path, nil, &j); err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, j.Memory())
	}
	return out, nil
}

// list returns one page of the memories f selects.
func (c *client) list(ctx context.Context, o memory.ListOptions) (memory.ListPage, error) {
	q := url.Values{}
	if o.Filter != nil {
		w, err := json.Marshal(o.Filter)
		if err != nil {
			return memory.ListPage{}, err
		}
		q.Set("where", string(w))
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	var resp server.ListResponse
	if err := c.do(ctx, http.MethodGet, "/v1/memories?"+q.Encode(), nil, &resp); err != nil {
		return memory.ListPage{}, err
	}
	p := memory.ListPage{Memories: make([]memory.Memory, len(resp.Memories)), Next: resp.NextCursor}
	for i := range resp.Memories {
		p.Memories[i] = resp.Memories[i].Memory()
	}
	return p, nil
}

// update applies o to memory id.
func (c *client) update(ctx context.Context, id string, o memory.UpdateOptions) (memory.Memory, error) {
	req := server.UpdateRequest{Text: o.Text, Source: o.Source, Tags: o.Tags, Importance: o.Importance, Metadata: o.Metadata}
	var j memory.MemoryJSON
	if err := c.do(ctx, http.MethodPatch, "/v1/memories/"+url.PathEscape(id), req, &j); err != nil {
		return memory.Memory{}, err
	}
	return j.Memory(), nil
}

// history returns the earlier versions of memory id, in JSON form.
func (c *client) history(ctx context.Context, id string) ([]memory.VersionJSON, error) {
	var resp server.HistoryResponse
	if err := c.do(ctx, http.MethodGet, "/v1/memories/"+url.PathEscape(id)+"/history", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Versions, nil
}

// revert brings version n of memory id back.
func (c *client) revert(ctx context.Context, id string, n int) (memory.Memory, error) {
	var j memory.MemoryJSON
	if err := c.do(ctx, http.MethodPost, "/v1/memories/"+url.PathEscape(id)+"/revert", map[string]int{"version": n}, &j); err != nil {
		return memory.Memory{}, err
	}
	return j.Memory(), nil
}

func (c *client) tasks(ctx context.Context) ([]memory.Task, error) {
	var resp struct {
		Tasks []memory.Task `json:"tasks"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tasks", nil, &resp)
	return resp.Tasks, err
}

// task sends body (nil: a GET) to the task route path and returns the task it answers.
func (c *client) task(ctx context.Context, method, path string, body any) (memory.Task, error) {
	var t memory.Task
	err := c.do(ctx, method, path, body, &t)
	return t, err
}

// taskPath is the route of task id (then sub, such as "/steps"), of session
// when it is not nil (task IDs are per session).
func taskPath(id, sub string, session *string) string {
	p := "/v1/tasks/" + url.PathEscape(id) + sub
	if session != nil {
		p += "?session=" + url.QueryEscape(*session)
	}
	return p
}

// contextPath is the route of a session's conversation. The default session
// ("") has none: a path segment cannot be empty.
func contextPath(session string) (string, error) {
	if session == "" {
		return "", errors.New("the default session's conversation is not reachable through the server's API (it has no path); stop the server or name a session")
	}
	return "/v1/sessions/" + url.PathEscape(session) + "/context", nil
}

// conversation sends body (nil: a GET) to a session's context route.
func (c *client) conversation(ctx context.Context, method, session, suffix string, body any) (memory.Conversation, error) {
	var conv memory.Conversation
	path, err := contextPath(session)
	if err != nil {
		return conv, err
	}
	if suffix != "" {
		path = strings.TrimSuffix(path, "/context") + suffix
	}
	err = c.do(ctx, method, path, body, &conv)
	return conv, err
}

// remoteChat is chat's store through a server: the server's summarizer
// compresses the conversation.
type remoteChat struct{ c *client }

func (r remoteChat) Context(ctx context.Context, session string) (memory.Conversation, error) {
	return r.c.conversation(ctx, http.MethodGet, session, "", nil)
}

func (r remoteChat) AddTurn(ctx context.Context, session string, t memory.Turn) (memory.Conversation, error) {
	return r.c.conversation(ctx, http.MethodPost, session, "/turns", t)
}

func (r remoteChat) Remember(ctx context.Context, session, text string, o memory.RememberOptions) (memory.RememberResult, error) {
	return r.c.remember(ctx, session, text, o)
}

func (r remoteChat) Recall(ctx context.Context, query string, o memory.RecallOptions) ([]memory.Result, error) {
	if o.Mode != memory.ModeHybrid || o.Fusion != memory.FusionWeighted {
		return nil, errors.New("chat through a server recalls with the default mode and fusion only")
	}
	rs, _, err := r.c.recall(ctx, server.RecallRequest{Query: query, Session: o.Session, AllSessions: o.AllSessions, K: o.K,
		MinScore: o.MinScore, NoTouch: o.NoTouch, Turns: o.Turns, Filter: o.Filter})
	return rs, err
}
