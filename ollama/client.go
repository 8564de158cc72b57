package ollama

import (
	"bufio"
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
	"syscall"
	"time"
)

// DefaultBaseURL is where a local Ollama server listens.
const DefaultBaseURL = "http://127.0.0.1:11434"

// DefaultChatModel is the chat model used when none is configured.
const DefaultChatModel = "qwen2.5:7b"

// ErrNotRunning means no Ollama server answered at the configured address.
var ErrNotRunning = errors.New("ollama: server not running")

// Config configures a Client. The zero value means the documented defaults.
type Config struct {
	// BaseURL of the server. Default: $OLLAMA_HOST, else DefaultBaseURL.
	BaseURL string
	// Timeout bounds one non-streaming request and the wait for the first
	// byte of a streaming one. Default 2 minutes (a cold model load is slow).
	Timeout time.Duration
	// Retries is how often a refused connection is retried. Default 3;
	// negative means none.
	Retries int
	// HTTPClient overrides the transport (tests). Default: a client with no
	// overall timeout, so streams are bounded by the context instead.
	HTTPClient *http.Client
}

// Client talks to one Ollama server. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	timeout time.Duration
	retries int
	http    *http.Client
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	raw := cfg.BaseURL
	if raw == "" {
		raw = os.Getenv("OLLAMA_HOST")
	}
	if raw == "" {
		raw = DefaultBaseURL
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("ollama: invalid base URL %q", cfg.BaseURL)
	}
	c := &Client{base: u, timeout: cfg.Timeout, retries: cfg.Retries, http: cfg.HTTPClient}
	if c.timeout <= 0 {
		c.timeout = 2 * time.Minute
	}
	if c.retries == 0 {
		c.retries = 3
	} else if c.retries < 0 {
		c.retries = 0
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// BaseURL returns the server address the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// APIError is an error status returned by the server.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("ollama: server returned %d: %s", e.Status, e.Message)
}

// post sends body as JSON to path and returns the response once its headers
// arrive; the caller closes the body. Refused connections are retried.
func (c *Client) post(ctx context.Context, path string, body any) (*http.Response, error) {
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("ollama: encoding request: %w", err)
	}
	endpoint := c.base.JoinPath(path).String()
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(buf))
		if err != nil {
			return nil, fmt.Errorf("ollama: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.doWithHeaderTimeout(req)
		if err == nil {
			if resp.StatusCode/100 != 2 {
				defer resp.Body.Close()
				return nil, readAPIError(resp)
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("ollama: %s: %w", endpoint, err)
		}
		if attempt >= c.retries {
			return nil, fmt.Errorf("%w at %s (start it with `ollama serve`, or set OLLAMA_HOST): %v", ErrNotRunning, c.base, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// doWithHeaderTimeout bounds the wait for response headers by c.timeout
// without bounding how long a stream may then run.
func (c *Client) doWithHeaderTimeout(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(c.timeout, cancel)
	resp, err := c.http.Do(req.WithContext(ctx))
	if !timer.Stop() && err != nil && req.Context().Err() == nil {
		cancel()
		return nil, fmt.Errorf("no response within %v", c.timeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func readAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		msg = body.Error
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &APIError{Status: resp.StatusCode, Message: msg}
}

// Embed returns one embedding per input from model (POST /api/embed).
func (c *Client) Embed(ctx context.Context, model string, inputs []string) ([][]float32, error) {
	if model == "" {
		return nil, errors.New("ollama: embed: model name is empty")
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	resp, err := c.post(ctx, "/api/embed", map[string]any{"model": model, "input": inputs})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("ollama: embed: decoding response: %w", err)
	}
	if len(out.Embeddings) != len(inputs) {
		return nil, fmt.Errorf("ollama: embed: got %d embeddings for %d inputs", len(out.Embeddings), len(inputs))
	}
	return out.Embeddings, nil
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatRequest is a chat completion request.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Options are model parameters passed through (temperature, num_ctx, ...).
	Options map[string]any
	// Format constrains the answer (Ollama's structured outputs): the JSON string "json" for
	// any JSON value, or a JSON schema object. Nil means free text.
	Format json.RawMessage
}

// ChatResponse is the complete answer of a chat call.
type ChatResponse struct {
	Message Message
	// PromptTokens and AnswerTokens are Ollama's counts (prompt_eval_count,
	// eval_count), zero when the server does not report them.
	PromptTokens, AnswerTokens int
}

// Chat streams a chat completion: onDelta (may be nil) receives each piece of
// the answer as it arrives; an error from onDelta stops the stream. The full
// answer is returned at the end.
func (c *Client) Chat(ctx context.Context, req ChatRequest, onDelta func(string) error) (ChatResponse, error) {
	if req.Model == "" {
		req.Model = DefaultChatModel
	}
	if len(req.Messages) == 0 {
		return ChatResponse{}, errors.New("ollama: chat: no messages")
	}
	body := map[string]any{"model": req.Model, "messages": req.Messages, "stream": true}
	if req.Options != nil {
		body["options"] = req.Options
	}
	if req.Format != nil {
		body["format"] = req.Format
	}
	resp, err := c.post(ctx, "/api/chat", body)
	if err != nil {
		return ChatResponse{}, err
	}
	defer resp.Body.Close()

	var out ChatResponse
	var answer strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var chunk struct {
			Message         Message `json:"message"`
			Done            bool    `json:"done"`
			Error           string  `json:"error"`
			PromptEvalCount int     `json:"prompt_eval_count"`
			EvalCount       int     `json:"eval_count"`
		}
		if err := json.Unmarshal(line, &chunk); err != nil {
			return out, fmt.Errorf("ollama: chat: bad stream line: %w", err)
		}
		if chunk.Error != "" {
			return out, &APIError{Status: resp.StatusCode, Message: chunk.Error}
		}
		if chunk.Message.Content != "" {
			answer.WriteString(chunk.Message.Content)
			if onDelta != nil {
				if err := onDelta(chunk.Message.Content); err != nil {
					return out, err
				}
			}
		}
		if chunk.Done {
			out.Message = Message{Role: "assistant", Content: answer.String()}
			out.PromptTokens, out.AnswerTokens = chunk.PromptEvalCount, chunk.EvalCount
			return out, nil
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, fmt.Errorf("ollama: chat: reading stream: %w", err)
	}
	return out, errors.New("ollama: chat: stream ended before the answer was done")
}
