package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/engramdb/engram/api"
)

// The callers, rights and scopes live in the request layer (package api),
// which every door passes through; these names keep the server's API.
type (
	// Caller is who sent a request: the key it authenticated with, its
	// rights and the sessions it may use (api.Caller).
	Caller = api.Caller
	// Right is one thing a key may do (api.Right).
	Right = api.Right
	// Scope is the set of sessions a key may use, as patterns (api.Scope).
	Scope = api.Scope
)

// The rights a key can hold (see api.Right).
const (
	RightRead  = api.RightRead
	RightWrite = api.RightWrite
	RightAdmin = api.RightAdmin
	AllRights  = api.AllRights
)

// LocalCaller is the caller of every request when the service has neither a
// key file nor a token (loopback only): every right, every session.
var LocalCaller = api.LocalCaller

// ErrForbidden marks a request its key may not make: a right it lacks or a
// session outside its scope. It maps to 403.
var ErrForbidden = api.ErrForbidden

// ErrUnauthorized marks a request without a valid key. It maps to 401.
var ErrUnauthorized = errors.New("missing or wrong bearer key")

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c *Caller) context.Context { return api.WithCaller(ctx, c) }

// CallerFrom returns the caller a request's context carries. Inside a
// route's handler that is always the authenticated key; elsewhere it is a
// caller with no rights and no sessions, so a forgotten check denies.
func CallerFrom(ctx context.Context) *Caller { return api.CallerFrom(ctx) }

// VisibleBy returns the items of xs whose session (as session gives it)
// lies in c's scope, in their order (api.VisibleBy).
func VisibleBy[T any](c *Caller, xs []T, session func(T) string) []T {
	return api.VisibleBy(c, xs, session)
}

// ParseRights parses rights by name ("read", "write", "admin"); names may be
// comma-separated.
func ParseRights(names ...string) (Right, error) { return api.ParseRights(names...) }

// ValidateScope checks the patterns of a scope.
func ValidateScope(s Scope) error { return api.ValidateScope(s) }

// globMatch matches name against pattern (see Scope).
func globMatch(pattern, name string) bool { return Scope{pattern}.Contains(name) }

// SessionFrom says where a route finds the session whose data it touches.
type SessionFrom uint8

// Where routes find their session.
const (
	// SessionNone: the route touches no one session's data. Allowed only
	// with Right 0 for documents that hold no data (openapi.json), or with
	// RightAdmin for store-wide operations.
	SessionNone SessionFrom = iota
	// SessionPath: the {session} path value, checked by the route wrapper
	// before the handler runs.
	SessionPath
	// SessionHandler: the request layer (package api) finds the sessions
	// (in the body, or in the memories or tasks it names) and checks them.
	SessionHandler
)

// Access is what a route demands of its caller. Every route declares one
// when it is registered (Handler.route); the security tests walk the
// route table and probe each route with keys of every right and scope.
type Access struct {
	// Right is what the caller must hold; the wrapper checks it before the
	// handler runs. 0 admits any authenticated caller.
	Right   Right
	Session SessionFrom
	// Public: served without a key to every request that passes the
	// guard (the dashboard's files, which hold no data: a browser cannot
	// send a key when it navigates). Only with Right 0 and SessionNone.
	Public bool
}

// The accesses most routes declare.
var (
	// accessDoc: a document without data, for any authenticated caller.
	accessDoc = Access{}
	// accessPublic: a file without data, served without a key.
	accessPublic = Access{Public: true}
	// accessAdmin: a store-wide operation.
	accessAdmin = Access{Right: RightAdmin}
	// accessAdminWrite: a store-wide operation that deletes data for good.
	accessAdminWrite = Access{Right: RightAdmin | RightWrite}
	// accessRead / accessWrite: data of the session named in the path.
	accessReadPath  = Access{Right: RightRead, Session: SessionPath}
	accessWritePath = Access{Right: RightWrite, Session: SessionPath}
	// accessRead / accessWrite: sessions the handler checks itself.
	accessRead  = Access{Right: RightRead, Session: SessionHandler}
	accessWrite = Access{Right: RightWrite, Session: SessionHandler}
)

// validate refuses an access that would let a scoped key reach data
// outside its scope without any check.
func (a Access) validate(pattern string) error {
	if a.Public && (a.Right != 0 || a.Session != SessionNone) {
		return fmt.Errorf("server: route %s is public but declares a right or a session", pattern)
	}
	if a.Session == SessionNone && a.Right != 0 && !a.Right.Has(RightAdmin) {
		return fmt.Errorf("server: route %s touches data of no declared session but needs only %s: declare SessionPath or SessionHandler, or RightAdmin", pattern, a.Right)
	}
	if a.Session == SessionPath && !strings.Contains(pattern, "{session}") {
		return fmt.Errorf("server: route %s declares SessionPath but has no {session} path value", pattern)
	}
	return nil
}

// routeInfo is one entry of the route table.
type routeInfo struct {
	Pattern string
	Access  Access
}

// authorize checks a against the caller of r, before the handler runs.
func authorize(r *http.Request, a Access) error {
	c := CallerFrom(r.Context())
	if err := c.Check(a.Right); err != nil {
		return err
	}
	if a.Session == SessionPath {
		return c.Check(a.Right, r.PathValue("session"))
	}
	return nil
}

// authenticate resolves the bearer key of r. Without a key file (or before
// an awaited one appears, Options.KeysFileMayAppear) and a token every
// request is LocalCaller (ListenAndServe allows that only on loopback).
func (h *Handler) authenticate(r *http.Request) (*Caller, error) {
	open, err := h.keys.refresh(time.Now())
	if err != nil {
		h.keyFileProblem(err)
	}
	if open {
		return LocalCaller, nil
	}
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, ErrUnauthorized
	}
	c := h.keys.lookup(strings.TrimSpace(secret))
	if c == nil {
		return nil, ErrUnauthorized
	}
	return c, nil
}

// keyFileProblem logs a key file that could not be reloaded, once per
// distinct problem: a bad file leaves the keys last loaded in force, a
// deleted one revokes them all.
func (h *Handler) keyFileProblem(err error) {
	msg := err.Error()
	if old := h.lastKeyErr.Swap(&msg); old == nil || *old != msg {
		if errors.Is(err, fs.ErrNotExist) {
			h.opts.Logger.Error("key file deleted: every key in it is revoked, and requests still need a key (the token, if any); restart the server to serve without keys", "err", err)
			return
		}
		h.opts.Logger.Error("key file not reloaded; the keys last loaded from it stay in force (none if it never loaded)", "err", err)
	}
}
