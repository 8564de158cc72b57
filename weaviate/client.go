package weaviate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client is a minimal Weaviate REST/GraphQL client.
type client struct {
	base  *url.URL
	http  *http.Client
	token string
}

// statusError is a non-2xx answer.
type statusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("weaviate: %s %s: %d %s", e.Method, e.Path, e.Status, strings.TrimSpace(e.Body))
}

func isStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.Status == code
}

func newClient(rawURL, token string, timeout time.Duration) (*client, error) {
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("weaviate: invalid URL %q", rawURL)
	}
	switch u.Scheme {
	case "weaviate", "http":
		u.Scheme = "http"
	case "weaviates", "https":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("weaviate: unsupported scheme in %q (want http, https or weaviate)", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &client{base: u, http: &http.Client{Timeout: timeout}, token: token}, nil
}

// do sends body as JSON and decodes a JSON answer into out (when not nil).
func (c *client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("weaviate: encoding request: %w", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("weaviate: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("weaviate: %s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{Method: method, Path: path, Status: resp.StatusCode, Body: string(data)}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("weaviate: %s %s: decoding answer: %w", method, path, err)
		}
	}
	return nil
}

// graphql runs a GraphQL query and decodes its data into out.
func (c *client) graphql(ctx context.Context, query string, out any) error {
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/graphql", nil, map[string]string{"query": query}, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, len(resp.Errors))
		for i, e := range resp.Errors {
			msgs[i] = e.Message
		}
		return fmt.Errorf("weaviate: graphql: %s", strings.Join(msgs, "; "))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp.Data, out)
}

// batchObject is one object of a batch write.
type batchObject struct {
	Class      string         `json:"class"`
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties"`
	Vector     []float32      `json:"vector,omitempty"`
}

// batchWrite upserts objects; any per-object error fails the call.
func (c *client) batchWrite(ctx context.Context, objs []batchObject, consistency string) error {
	if len(objs) == 0 {
		return nil
	}
	var results []struct {
		ID     string `json:"id"`
		Result struct {
			Errors *struct {
				Error []struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"errors"`
		} `json:"result"`
	}
	q := url.Values{"consistency_level": {consistency}}
	if err := c.do(ctx, http.MethodPost, "/v1/batch/objects", q, map[string]any{"objects": objs}, &results); err != nil {
		return err
	}
	for _, r := range results {
		if r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
			return fmt.Errorf("weaviate: writing object %s: %s", r.ID, r.Result.Errors.Error[0].Message)
		}
	}
	if len(results) != len(objs) {
		return fmt.Errorf("weaviate: batch wrote %d of %d objects", len(results), len(objs))
	}
	return nil
}

// batchDelete deletes the objects of class matching where and returns how many.
func (c *client) batchDelete(ctx context.Context, class string, where map[string]any, consistency string) (int, error) {
	var resp struct {
		Results struct {
			Matches    int `json:"matches"`
			Successful int `json:"successful"`
			Failed     int `json:"failed"`
		} `json:"results"`
	}
	body := map[string]any{"match": map[string]any{"class": class, "where": where}, "output": "minimal"}
	q := url.Values{"consistency_level": {consistency}}
	if err := c.do(ctx, http.MethodDelete, "/v1/batch/objects", q, body, &resp); err != nil {
		return 0, err
	}
	if resp.Results.Failed > 0 {
		return resp.Results.Successful, fmt.Errorf("weaviate: %d of %d deletes failed", resp.Results.Failed, resp.Results.Matches)
	}
	return resp.Results.Successful, nil
}

// object is an object as the REST API returns it.
type object struct {
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties"`
	Vector     []float32       `json:"vector"`
}

// list returns up to limit objects of class after the UUID after (cursor
// order), vectors included when withVector.
func (c *client) list(ctx context.Context, class, after string, limit int, withVector bool) ([]object, error) {
	q := url.Values{"class": {class}, "limit": {fmt.Sprint(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	if withVector {
		q.Set("include", "vector")
	}
	var resp struct {
		Objects []object `json:"objects"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/objects", q, nil, &resp); err != nil {
		return nil, err
	}
	return resp.Objects, nil
}
