package server

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engramdb/engram/memory"
)

// Defaults for Options' zero values.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRequestTimeout = 30 * time.Second
)

//go:embed openapi.json
var openAPI []byte

// Options configure a Handler. The zero value of each field means its
// documented default; Store is required.
type Options struct {
	Store *memory.Store
	// Token, when set, is the bearer token every request but /healthz must carry.
	Token string
	// AllowedHosts are extra names (besides loopback names and the bound
	// address) that clients may use in the Host and Origin headers, such as
	// the server's LAN DNS name.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's work (DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Registry receives the metrics; nil means a new registry of its own.
	Registry *prometheus.Registry
	// Logger logs failed requests; nil discards.
	Logger *slog.Logger
}

// Handler is the service's http.Handler.
type Handler struct {
	opts    Options
	store   *memory.Store
	mux     *http.ServeMux
	metrics *metrics
	guard   *guard
}

// New returns the service handler for opts.
func New(opts Options) (*Handler, error) {
	if opts.Store == nil {
		return nil, errors.New("server: no store")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, store: opts.Store, mux: http.NewServeMux(), guard: newGuard(opts.AllowedHosts)}
	m, err := newMetrics(opts.Registry, opts.Store)
	if err != nil {
		return nil, err
	}
	h.metrics = m

	h.route("GET /healthz", h.health)
	h.route("GET /openapi.json", h.openapi)
	h.mux.Handle("GET /metrics", h.metrics.handler(opts.Registry))
	h.route("POST /v1/remember", h.remember)
	h.route("POST /v1/recall", h.recall)
	h.route("POST /v1/forget", h.forget)
	h.route("GET /v1/sessions", h.sessions)
	h.route("GET /v1/sessions/{session}/context", h.context)
	h.route("POST /v1/sessions/{session}/turns", h.addTurn)
	h.route("DELETE /v1/sessions/{session}/context", h.clearContext)
	h.route("GET /v1/tasks", h.listTasks)
	h.route("POST /v1/tasks", h.startTask)
	h.route("GET /v1/tasks/{id}", h.getTask)
	h.route("POST /v1/tasks/{id}/steps", h.updateStep)
	h.route("POST /v1/tasks/{id}/finish", h.finishTask)
	h.route("DELETE /v1/tasks/{id}", h.deleteTask)
	h.route("GET /v1/stats", h.stats)
	mcpServer := NewMCP(opts.Store)
	// The guard in ServeHTTP checks Host, Origin and content type for /mcp as
	// for every route, so the SDK's narrower Host check is off.
	h.mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s (see /openapi.json)", r.Method, r.URL.Path))
	})
	return h, nil
}

// route registers fn under pattern with timing, the timeout and JSON errors.
func (h *Handler) route(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
	name := pattern
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
		status := http.StatusOK
		if err := fn(w, r); err != nil {
			status = statusOf(err)
			if status >= 500 {
				h.opts.Logger.Error("request failed", "route", name, "err", err)
			}
			writeError(w, status, err)
		}
		h.metrics.observe(name, status, time.Since(start))
	})
}

// ServeHTTP checks Host, Origin and content type (see guard), then the
// token, then dispatches. /healthz is open to all.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		h.mux.ServeHTTP(w, r)
		return
	}
	if status, err := h.guard.check(r); err != nil {
		writeError(w, status, err)
		return
	}
	if h.opts.Token != "" && r.URL.Path != "/healthz" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
		writeError(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) == 1
}

// errBadRequest marks request decoding errors.
var errBadRequest = errors.New("bad request")

func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBadRequest), errors.Is(err, memory.ErrInvalidInput), errors.Is(err, memory.ErrInvalidFilter):
		return http.StatusBadRequest
	case errors.Is(err, memory.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decode reads one JSON object from the body into v, rejecting unknown
// fields and trailing data so typos fail loudly instead of being ignored.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body, expected a JSON object", errBadRequest)
		}
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", errBadRequest)
	}
	return nil
}

// IsLoopback reports whether addr (host:port) binds only loopback interfaces.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrTokenRequired is returned by ListenAndServe for a non-loopback address
// without a token.
var ErrTokenRequired = errors.New("server: binding a non-loopback address requires an auth token (set --token or ENGRAM_TOKEN)")

// ListenAndServe serves h on addr until ctx is cancelled, then shuts down
// gracefully, giving in-flight requests up to grace to finish. ready, if not
// nil, receives the bound address once listening.
func ListenAndServe(ctx context.Context, addr string, h *Handler, grace time.Duration, ready func(net.Addr)) error {
	if !IsLoopback(addr) && h.opts.Token == "" {
		return ErrTokenRequired
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.guard.setBound(ln.Addr().String())
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       h.opts.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}
