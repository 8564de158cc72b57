package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for Options' MCP session bounds. A session costs some kilobytes of server memory
// until it is closed; clients that find theirs gone (404) start a new one, as the MCP
// specification requires.
const (
	DefaultMCPSessionIdle = 30 * time.Minute
	DefaultMCPMaxSessions = 1000
)

// errTooManySessions refuses a new MCP session while every session is in use (503).
var errTooManySessions = errors.New("too many MCP sessions")

// mcpSessions keeps the MCP sessions of one Handler within bounds. The SDK closes a session
// idle for Options.MCPSessionIdle (its SessionTimeout); mcpSessions counts, per session, the
// requests in flight (a tool call, an open event stream) and when the last one ended, so that
// a new session past Options.MCPMaxSessions closes the session idle the longest, or is refused
// while every session has a request in flight. Sessions are created one at a time (an
// initialize is quick), so the bound holds however many arrive at once.
type mcpSessions struct {
	server *mcp.Server
	max    int
	idle   time.Duration
	create sync.Mutex // held while a new session is created
	mu     sync.Mutex
	use    map[string]*sessionUse // by session ID
}

type sessionUse struct {
	inflight int
	last     time.Time
}

func newMCPSessions(s *mcp.Server, max int, idle time.Duration) *mcpSessions {
	return &mcpSessions{server: s, max: max, idle: idle, use: map[string]*sessionUse{}}
}

// begin marks a request of session sid in flight; end marks it done. Only
// sessions created through added are tracked: a request naming an unknown
// session (the SDK answers 404) adds nothing.
func (m *mcpSessions) begin(sid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.use[sid]; u != nil {
		u.inflight++
		u.last = time.Now()
	}
}

func (m *mcpSessions) end(sid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.use[sid]; u != nil {
		u.inflight--
		u.last = time.Now()
	}
}

// count is how many sessions the server holds.
func (m *mcpSessions) count() int {
	n := 0
	for range m.server.Sessions() {
		n++
	}
	return n
}

// makeRoom makes room for one more session: below the bound there is room; at it, the session
// idle the longest is closed; when every session has a request in flight it returns an error
// matching errTooManySessions. The caller holds m.create.
func (m *mcpSessions) makeRoom() error {
	live := slices.Collect(m.server.Sessions())
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make(map[string]bool, len(live))
	for _, ss := range live {
		ids[ss.ID()] = true
	}
	for sid := range m.use { // forget sessions the SDK closed (idle, DELETE, failed initialize)
		if !ids[sid] {
			delete(m.use, sid)
		}
	}
	for len(live) >= m.max {
		victim := -1
		for i, ss := range live {
			u := m.use[ss.ID()]
			if u != nil && u.inflight > 0 {
				continue
			}
			if victim < 0 || u == nil || (m.use[live[victim].ID()] != nil && u.last.Before(m.use[live[victim].ID()].last)) {
				victim = i
			}
		}
		if victim < 0 {
			return fmt.Errorf("%w: the server holds %d (memctl serve --mcp-sessions), each with a request in flight; "+
				"retry later, or end a session (DELETE /mcp); idle sessions close after %v", errTooManySessions, m.max, m.idle)
		}
		// Closing under m.mu: a request of the victim that begins now waits and then finds it
		// gone (404), which tells its client to start a new session.
		_ = live[victim].Close()
		delete(m.use, live[victim].ID())
		live = slices.Delete(live, victim, victim+1)
	}
	return nil
}

// added records the new session sid.
func (m *mcpSessions) added(sid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.use[sid] == nil {
		m.use[sid] = &sessionUse{last: time.Now()}
	}
}

// mcpTimeout runs every MCP request under timeout, as the HTTP routes run under
// Options.RequestTimeout: the SDK hands a tool a context of the session, not of the HTTP request
// that carried the call.
func mcpTimeout(timeout time.Duration) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return next(ctx, method, req)
		}
	}
}

// mcpSessionCount is how many MCP sessions h holds.
func (h *Handler) mcpSessionCount() int { return h.mcpSessions.count() }
