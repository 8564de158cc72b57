package server

import (
	"bytes"
	"context"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server/dashboard"
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
	// Token, when set, is a bearer secret for one admin key named "token"
	// (every right, every session).
	Token string
	// KeysFile, when set, is a key file (see keys.go, docs/format/keys.md)
	// whose keys, each with its sessions and rights, the service accepts. It
	// is re-read when it changes, so revoking a key takes effect within
	// KeyReloadInterval. With neither Token nor KeysFile the service is
	// open (LocalCaller), which ListenAndServe allows on loopback only.
	KeysFile string
	// KeysFileMayAppear lets KeysFile not exist yet (memctl serve's default
	// key file before the first `memctl keys add`); without it a missing
	// KeysFile fails New. Until the file appears the service is as without
	// it; the first request after it appears already needs one of its keys,
	// which is logged, and that lasts: deleting the file later revokes its
	// keys but does not open the service again.
	KeysFileMayAppear bool
	// TLS, when set, makes ListenAndServe speak HTTPS only (LoadTLS,
	// SelfSignedTLS; TLS 1.2 or later).
	TLS *tls.Config
	// InsecureHTTP lets ListenAndServe bind a non-loopback address without
	// TLS, sending bearer keys in clear. Dangerous; say so explicitly.
	InsecureHTTP bool
	// AllowedHosts are extra names (besides loopback names and the bound
	// address) that clients may use in the Host and Origin headers, such as
	// the server's LAN DNS name.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's work (DefaultRequestTimeout), an MCP
	// tool call's included.
	RequestTimeout time.Duration
	// MCPSessionIdle is how long an MCP session may go without a request
	// before it is closed (DefaultMCPSessionIdle); its client then starts a
	// new one.
	MCPSessionIdle time.Duration
	// MCPMaxSessions bounds the MCP sessions held at once
	// (DefaultMCPMaxSessions): a new session past it closes the one idle the
	// longest, or is refused (503) while every session has a request in
	// flight.
	MCPMaxSessions int
	// Registry receives the metrics; nil means a new registry of its own.
	Registry *prometheus.Registry
	// Logger logs failed requests; nil discards.
	Logger *slog.Logger
	// Admin configures the admin routes and jobs (admin.go).
	Admin AdminOptions
}

// Handler is the service's http.Handler.
type Handler struct {
	opts    Options
	store   *memory.Store
	mux     *http.ServeMux
	metrics *metrics
	guard   *guard
	keys    *keyring
	// routes is the route table: every pattern with its declared Access.
	routes      []routeInfo
	lastKeyErr  atomic.Pointer[string]
	jobs        *jobs
	series      *series
	mcpSessions *mcpSessions
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
	if opts.MCPSessionIdle <= 0 {
		opts.MCPSessionIdle = DefaultMCPSessionIdle
	}
	if opts.MCPMaxSessions <= 0 {
		opts.MCPMaxSessions = DefaultMCPMaxSessions
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	keys, err := newKeyring(opts.KeysFile, opts.Token, opts.KeysFileMayAppear, opts.Logger)
	if err != nil {
		return nil, err
	}
	h := &Handler{opts: opts, store: opts.Store, mux: http.NewServeMux(), guard: newGuard(opts.AllowedHosts), keys: keys}
	m, err := newMetrics(opts.Registry, opts.Store)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	h.jobs = newJobs(opts.Logger.Warn)
	h.series = newSeries(opts.Store, opts.Admin.SampleEvery, opts.Admin.SamplesKept)
	go h.series.run(h.jobs.base)

	// Every route declares the right it needs and where its session comes
	// from (Access, auth.go); the security tests walk this table.
	h.route("GET /healthz", accessDoc, h.health)
	h.route("GET /openapi.json", accessDoc, h.openapi)
	metricsHandler := h.metrics.handler(opts.Registry)
	h.route("GET /metrics", accessAdmin, func(w http.ResponseWriter, r *http.Request) error {
		metricsHandler.ServeHTTP(w, r)
		return nil
	})
	h.route("POST /v1/remember", accessWrite, h.remember)
	h.route("POST /v1/recall", accessRead, h.recall)
	h.route("POST /v1/forget", accessWrite, h.forget)
	h.route("GET /v1/sessions", accessRead, h.sessions)
	h.route("GET /v1/sessions/{session}/context", accessReadPath, h.context)
	h.route("POST /v1/sessions/{session}/turns", accessWritePath, h.addTurn)
	h.route("DELETE /v1/sessions/{session}/context", accessWritePath, h.clearContext)
	h.route("GET /v1/tasks", accessRead, h.listTasks)
	h.route("POST /v1/tasks", accessWrite, h.startTask)
	h.route("GET /v1/tasks/{id}", accessRead, h.getTask)
	h.route("POST /v1/tasks/{id}/steps", accessWrite, h.updateStep)
	h.route("POST /v1/tasks/{id}/finish", accessWrite, h.finishTask)
	h.route("DELETE /v1/tasks/{id}", accessWrite, h.deleteTask)
	h.route("GET /v1/stats", accessAdmin, h.stats)
	h.registerMemoryRoutes() // memories.go
	h.registerTrashRoutes()  // trash.go
	h.mcpRoute("/mcp", newMCP(opts.Store, nil))
	h.adminRoutes()
	// The dashboard's files: no data, and ServeHTTP serves them without a key
	// (a browser navigating cannot send one), past the guard only; the page
	// sends the user's key with every API call.
	h.assetRoute("GET /{$}")
	h.assetRoute("GET /ui/")
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s (see /openapi.json)", r.Method, r.URL.Path))
	})
	return h, nil
}

// assetRoute registers a dashboard file route (accessPublic). ServeHTTP lets
// exactly these requests through without a key (dashboard.IsAsset).
func (h *Handler) assetRoute(pattern string) {
	h.routes = append(h.routes, routeInfo{Pattern: pattern, Access: accessPublic})
	h.mux.Handle(pattern, dashboardFiles)
}

// route registers fn under pattern with its access check (see Access),
// timing, the timeout and JSON errors. An access that skips the scope check
// is a programming error and panics here, when New runs.
func (h *Handler) route(pattern string, a Access, fn func(http.ResponseWriter, *http.Request) error) {
	if err := a.validate(pattern); err != nil {
		panic(err)
	}
	h.routes = append(h.routes, routeInfo{Pattern: pattern, Access: a})
	name := pattern
	isRecall := pattern == "POST /v1/recall"
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes)
		err := authorize(r, a)
		if err == nil {
			err = fn(rec, r)
		}
		if err != nil {
			status := statusOf(err)
			if status >= 500 {
				h.opts.Logger.Error("request failed", "route", name, "err", err)
			}
			if rec.wrote {
				// The answer has begun; it cannot become an error any more.
				h.opts.Logger.Error("request failed after its response began", "route", name, "err", err)
			} else {
				writeError(rec, status, explain(err))
			}
		}
		if rec.encodeErr != nil {
			h.opts.Logger.Error("response could not be encoded; answered 500", "route", name, "err", rec.encodeErr)
		}
		h.metrics.observe(name, CallerFrom(r.Context()).Name, rec.status, time.Since(start))
		if isRecall && rec.status == http.StatusOK {
			h.series.observeRecall(time.Since(start))
		}
	})
}

// mcpRoute serves the MCP server s at pattern for any authenticated caller;
// each tool checks its right and session (see newMCP). The caller reaches
// the tools as the SDK's TokenInfo, which also binds an MCP session to the
// key that opened it. MCP has the limits of the other routes: a body over
// Options.MaxBodyBytes is refused (413) before the SDK reads it, every
// call runs under Options.RequestTimeout, and sessions are bounded in
// idle time and number (mcpsessions.go).
func (h *Handler) mcpRoute(pattern string, s *mcp.Server) {
	h.routes = append(h.routes, routeInfo{Pattern: pattern, Access: Access{Session: SessionHandler}})
	s.AddReceivingMiddleware(mcpTimeout(h.opts.RequestTimeout))
	h.mcpSessions = newMCPSessions(s, h.opts.MCPMaxSessions, h.opts.MCPSessionIdle)
	// The guard in ServeHTTP checks Host, Origin and content type for /mcp as
	// for every route, so the SDK's narrower Host check is off.
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true, MaxRequestBodyBytes: h.opts.MaxBodyBytes, SessionTimeout: h.opts.MCPSessionIdle})
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		c := CallerFrom(ctx)
		return &auth.TokenInfo{UserID: c.Name, Extra: map[string]any{mcpCallerKey: c}}, nil
	}
	withCaller := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	inner := withCaller(streamable)
	h.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The key was checked in ServeHTTP. The SDK's middleware wants a
		// bearer header (which the open loopback mode lacks) and hands the
		// request's headers to the tools, so it gets a stand-in, never the
		// secret.
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer checked")
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() { h.metrics.observe(pattern, CallerFrom(r.Context()).Name, rec.status, time.Since(start)) }()
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(rec, r.Body, h.opts.MaxBodyBytes))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeError(rec, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", h.opts.MaxBodyBytes))
				} else {
					writeError(rec, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err))
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		sid := r.Header.Get("Mcp-Session-Id")
		if sid != "" {
			h.mcpSessions.begin(sid)
			defer h.mcpSessions.end(sid)
			inner.ServeHTTP(rec, r)
			return
		}
		if r.Method != http.MethodPost {
			inner.ServeHTTP(rec, r) // the SDK refuses it
			return
		}
		// A POST without a session starts one (initialize).
		h.mcpSessions.create.Lock()
		defer h.mcpSessions.create.Unlock()
		if err := h.mcpSessions.makeRoom(); err != nil {
			rec.Header().Set("Retry-After", "10")
			writeError(rec, http.StatusServiceUnavailable, err)
			return
		}
		inner.ServeHTTP(rec, r)
		if sid := rec.Header().Get("Mcp-Session-Id"); sid != "" {
			h.mcpSessions.added(sid)
		}
	}))
}

// ServeHTTP checks Sec-Fetch-Site, Host, Origin and content type (see
// guard), then the bearer key, then dispatches with the key's Caller in the
// request context.
// /healthz is open to all, and the dashboard's files (/ and /ui/) to every
// request that passes the guard: they hold no data, and a browser cannot
// send a key when it navigates.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, err := checkFetchSite(r); err != nil {
		writeError(w, status, err)
		return
	}
	if r.URL.Path == "/healthz" {
		h.mux.ServeHTTP(w, r)
		return
	}
	if status, err := h.guard.check(r); err != nil {
		writeError(w, status, err)
		return
	}
	if dashboard.IsAsset(r) {
		h.mux.ServeHTTP(w, r)
		return
	}
	c, err := h.authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
		writeError(w, http.StatusUnauthorized, err)
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
}

// errBadRequest marks request decoding errors.
var errBadRequest = errors.New("bad request")

func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, syscall.ENOSPC):
		return http.StatusInsufficientStorage
	case errors.Is(err, memory.ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, errBadRequest), errors.Is(err, memory.ErrInvalidInput), errors.Is(err, memory.ErrInvalidFilter):
		return http.StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, memory.ErrNotFound), errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, errConflict):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// explain adds what a client should know to errors that need it: a full
// disk failed the write, nothing is wrong with the request, and the server
// takes writes again, without a restart, once space is freed.
func explain(err error) error {
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		err = fmt.Errorf("insufficient storage: the disk holding the store is full and this write failed; "+
			"free space and retry (the server needs no restart): %w", err)
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the request ran past the server's time limit (memctl serve --timeout): %w", err)
	}
	return err
}

// explainTool is explain for an MCP tool's error, which is text only: a write that failed part
// way also names the IDs it stored (over HTTP they come as ErrorResponse.StoredIDs).
func explainTool(err error) error {
	err = explain(err)
	var partial *memory.PartialWriteError
	if errors.As(err, &partial) {
		err = fmt.Errorf("%w; stored IDs: %s", err, strings.Join(partial.Stored, ", "))
	}
	return err
}

func writeError(w http.ResponseWriter, status int, err error) {
	var partial *memory.PartialWriteError
	if errors.As(err, &partial) {
		// Part of the write is stored: say which, so the client need not guess.
		writeJSON(w, status, ErrorResponse{Error: err.Error(), StoredIDs: partial.Stored})
		return
	}
	writeJSON(w, status, ErrorResponse{Error: err.Error()})
}

// ErrorResponse is every error answer. StoredIDs is set when a write failed part way (a
// remember whose later batch failed, memory.PartialWriteError): the memories it did store.
type ErrorResponse struct {
	Error     string   `json:"error"`
	StoredIDs []string `json:"stored_ids,omitempty"`
}

// writeJSON encodes v whole before writing anything, so a value that cannot
// be encoded (an infinite float) is answered 500 and logged by the route
// wrapper, never a 200 with an empty or cut body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if rec, ok := w.(*statusRecorder); ok {
			rec.encodeErr = err
		}
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"the response could not be encoded as JSON"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
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
var ErrTokenRequired = errors.New("server: binding a non-loopback address requires keys (--keys FILE) or a token (--token-file FILE)")

// ErrWeakToken is returned by ListenAndServe for a non-loopback address
// guarded by a token weaker than MinRemoteSecretBits.
var ErrWeakToken = fmt.Errorf("server: the token is too weak for a non-loopback bind (need %d bits: use `memctl keys add` or `openssl rand -hex 32`)", MinRemoteSecretBits)

// ListenAndServe serves h on addr until ctx is cancelled, then shuts down
// gracefully, giving in-flight requests up to grace to finish. ready, if not
// nil, receives the bound address once listening.
func ListenAndServe(ctx context.Context, addr string, h *Handler, grace time.Duration, ready func(net.Addr)) error {
	if !IsLoopback(addr) {
		switch {
		case h.keys.empty():
			return ErrTokenRequired
		case h.opts.Token != "" && SecretBits(h.opts.Token) < MinRemoteSecretBits:
			return ErrWeakToken
		case h.opts.TLS == nil && !h.opts.InsecureHTTP:
			return ErrTLSRequired
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.guard.setBound(ln.Addr().String())
	if h.opts.TLS != nil {
		cfg := h.opts.TLS.Clone()
		if cfg.MinVersion < tls.VersionTLS12 {
			cfg.MinVersion = tls.VersionTLS12
		}
		ln = tls.NewListener(ln, cfg)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       h.opts.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		// TLS handshake failures and the like go to the service's log.
		ErrorLog: slog.NewLogLogger(h.opts.Logger.Handler(), slog.LevelWarn),
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
	err = srv.Shutdown(sctx)
	if jerr := h.Close(sctx); err == nil {
		err = jerr
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}

// statusRecorder remembers the status a wrapped handler wrote, for metrics.
type statusRecorder struct {
	http.ResponseWriter
	status    int
	wrote     bool
	encodeErr error // set by writeJSON when a value could not be encoded
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(p)
}

// Flush lets the MCP handler stream server-sent events through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Close cancels the running job and stops the time series, waiting for the
// job until ctx ends. ListenAndServe calls it on shutdown; call it before
// closing the store when serving h some other way.
func (h *Handler) Close(ctx context.Context) error { return h.jobs.shutdown(ctx) }
