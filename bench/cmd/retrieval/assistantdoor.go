package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// assistantDoor is where the assistant evaluation writes and asks: the library (a store it
// opens) or a running `memctl serve` (-server), so the figures can be taken through the door an
// assistant would use, with that door's defaults.
type assistantDoor interface {
	remember(ctx context.Context, session, text string, at time.Time) (memory.RememberResult, error)
	recall(ctx context.Context, query string, o memory.RecallOptions) ([]memory.Result, error)
	count(ctx context.Context) (int, error)
}

type libraryDoor struct{ s *memory.Store }

func (l libraryDoor) remember(ctx context.Context, session, text string, at time.Time) (memory.RememberResult, error) {
	return l.s.Remember(ctx, session, text, memory.RememberOptions{Time: at})
}

func (l libraryDoor) recall(ctx context.Context, query string, o memory.RecallOptions) ([]memory.Result, error) {
	return l.s.Recall(ctx, query, o)
}

func (l libraryDoor) count(ctx context.Context) (int, error) { return l.s.Count(ctx, nil) }

// httpDoor speaks the HTTP API of a running server (its key from ENGRAM_TOKEN). Recall sends the
// session and k only, so every other option is the server's default.
type httpDoor struct {
	base  string
	token string
	c     *http.Client
}

func newHTTPDoor(base string) *httpDoor {
	return &httpDoor{base: strings.TrimRight(base, "/"), token: os.Getenv("ENGRAM_TOKEN"), c: &http.Client{Timeout: time.Minute}}
}

func (h *httpDoor) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.300s", method, path, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

func (h *httpDoor) remember(ctx context.Context, session, text string, at time.Time) (memory.RememberResult, error) {
	var r api.RememberResponse
	err := h.do(ctx, "POST", "/v1/remember", map[string]any{"session": session, "text": text, "time": at}, &r)
	return memory.RememberResult{IDs: r.IDs, Merged: r.Merged, Superseded: r.Superseded, Older: r.Older}, err
}

func (h *httpDoor) recall(ctx context.Context, query string, o memory.RecallOptions) ([]memory.Result, error) {
	var r api.RecallResponse
	if err := h.do(ctx, "POST", "/v1/recall", map[string]any{"session": o.Session, "query": query, "k": o.K}, &r); err != nil {
		return nil, err
	}
	out := make([]memory.Result, len(r.Results))
	for i, j := range r.Results {
		out[i] = memory.Result{Memory: j.Memory(), Score: j.Score, Stale: j.Stale, Newer: j.Newer, Replaces: j.Replaces}
	}
	return out, nil
}

func (h *httpDoor) count(ctx context.Context) (int, error) {
	var r api.SessionsResponse
	if err := h.do(ctx, "GET", "/v1/sessions", nil, &r); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range r.Sessions {
		n += s.Memories
	}
	return n, nil
}
