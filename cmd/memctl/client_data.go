package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

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
	req := server.RememberRequest{Session: session, Text: text, Source: o.Source, Tags: o.Tags, Importance: o.Importance, Metadata: o.Metadata}
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
