package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// lockNotePrefix starts the LOCK note `memctl serve` leaves: "serve URL".
const lockNotePrefix = "serve "

// client runs memctl commands through the API of a running `memctl serve`
// when that server holds the store (or --server names one).
type client struct {
	base  string // http://host:port, no trailing slash
	token string
	http  *http.Client
}

// apiError is a non-2xx answer of the server.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func newClient(base, token string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("invalid server address %q (want http://HOST:PORT)", base)
	}
	return &client{base: strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), token: token, http: &http.Client{}}, nil
}

func (c *client) request(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct{ Error string }
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return nil, &apiError{status: resp.StatusCode, msg: fmt.Sprintf("server %s: %s%s", c.base, msg, c.keyHint(resp.StatusCode))}
	}
	return resp, nil
}

// keyHint tells the user how to send a key when the server refused the
// request for the key (401: none, or not one of its keys; 403: a key
// without the right or session). It names the flag and the variable the
// key is read from (serverToken), never the key.
func (c *client) keyHint(status int) string {
	const how = "ENGRAM_TOKEN=KEY (or --server-token KEY)"
	switch {
	case status == http.StatusUnauthorized && c.token == "":
		return "; this server needs a key: send one with " + how + "; `memctl keys add` makes one"
	case status == http.StatusUnauthorized:
		return "; the key sent (ENGRAM_TOKEN or --server-token) is not one of this server's keys: revoked or mistyped? `memctl keys list` shows them"
	case status == http.StatusForbidden:
		return "; send a key that may do this with " + how + "; `memctl keys list` shows each key's sessions and rights"
	}
	return ""
}

// do sends body as JSON (nil: none; POSTs send {}) and decodes the answer into out.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil || method == http.MethodPost {
		if body == nil {
			body = struct{}{}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	resp, err := c.request(ctx, method, path, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("server %s: undecodable answer to %s %s: %w", c.base, method, path, err)
	}
	return nil
}

// jobPoll is how often a job's progress is read.
const jobPoll = 200 * time.Millisecond

// job starts the job POST path body and follows it to its end.
func (c *client) job(ctx context.Context, path string, body any, prog func(done, total int64)) (server.Job, error) {
	var j server.Job
	if err := c.doRaw(ctx, path, body, &j); err != nil {
		return j, err
	}
	return c.follow(ctx, j, prog)
}

// follow polls job j until it ends, calling prog with its progress. If ctx
// ends first (Ctrl-C), the job is cancelled on the server. A job that fails
// or is cancelled is an error.
func (c *client) follow(ctx context.Context, j server.Job, prog func(done, total int64)) (server.Job, error) {
	for j.State == server.JobRunning {
		if prog != nil {
			prog(j.Done, j.Total)
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.do(cctx, http.MethodPost, "/v1/jobs/"+j.ID+"/cancel", nil, nil)
			cancel()
			return j, fmt.Errorf("cancelled %s job %s on the server: %w", j.Kind, j.ID, ctx.Err())
		case <-time.After(jobPoll):
		}
		if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+j.ID, nil, &j); err != nil && ctx.Err() == nil {
			return j, err
		}
	}
	if prog != nil {
		prog(j.Done, j.Total)
	}
	if j.State != server.JobDone {
		return j, fmt.Errorf("%s", j.Error)
	}
	return j, nil
}

// doRaw is do with a body that may already be encoded (a string is sent as is).
func (c *client) doRaw(ctx context.Context, path string, body, out any) error {
	s, ok := body.(string)
	if !ok {
		return c.do(ctx, http.MethodPost, path, body, out)
	}
	resp, err := c.request(ctx, http.MethodPost, path, strings.NewReader(s))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// jobResult decodes a finished job's result.
func jobResult[T any](j server.Job) (T, error) {
	var v T
	if err := json.Unmarshal(j.Result, &v); err != nil {
		return v, fmt.Errorf("%s job %s: undecodable result: %w", j.Kind, j.ID, err)
	}
	return v, nil
}

// serverToken is the credential sent to a server: --server-token, else
// ENGRAM_TOKEN (what `memctl serve` reads its token from).
func (a *app) serverToken() string {
	if a.serverKey != "" {
		return a.serverKey
	}
	return os.Getenv("ENGRAM_TOKEN")
}

// openOrRemote opens the store for a command that can also run through a
// server: with --server (ENGRAM_SERVER) it returns a client for it; else it
// opens --dir, and when a running `memctl serve` holds that store (its
// address is in the LOCK file) it returns a client for that server instead
// of the "locked" error.
func (a *app) openOrRemote(ctx context.Context) (*memory.Store, *client, error) {
	return a.openOrRemoteWith(ctx, memory.Options{})
}

// openOrRemoteWith is openOrRemote opening the store with opts (openStoreWith).
func (a *app) openOrRemoteWith(ctx context.Context, opts memory.Options) (*memory.Store, *client, error) {
	if a.server != "" {
		c, err := newClient(a.server, a.serverToken())
		return nil, c, err
	}
	s, err := a.openStoreWith(opts)
	if err == nil || !errors.Is(err, engine.ErrLocked) || isRemote(a.dir) {
		return s, nil, err
	}
	info, rerr := engine.ReadLock(a.dir)
	addr, ok := strings.CutPrefix(info.Note, lockNotePrefix)
	if rerr != nil || !ok {
		return nil, nil, err
	}
	c, cerr := newClient(addr, a.serverToken())
	if cerr != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if perr := c.do(pctx, http.MethodGet, "/healthz", nil, nil); perr != nil {
		return nil, nil, fmt.Errorf("%w; it serves %s, which did not answer: %v", err, addr, perr)
	}
	return nil, c, nil
}
