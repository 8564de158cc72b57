package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// Caller is who sent a request: the key it authenticated with, its rights
// and the sessions it may use. Handlers get it with CallerFrom and ask it
// with Can, MayUse, Check and the filters below; they never see the secret.
type Caller struct {
	// Name is the key's name: a key file entry, "token" for Options.Token,
	// or "local" when the service runs open on loopback (no keys, no token).
	Name   string
	Rights Right
	Scope  Scope
}

// LocalCaller is the caller of every request when the service has neither a
// key file nor a token (loopback only): every right, every session.
var LocalCaller = &Caller{Name: "local", Rights: AllRights, Scope: Scope{"*"}}

// nobody has no rights and no sessions: what CallerFrom returns for a
// context no authentication passed through, so a mistake fails closed.
var nobody = &Caller{Name: "-"}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller a request's context carries. Inside a
// route's handler that is always the authenticated key; elsewhere it is a
// caller with no rights and no sessions, so a forgotten check denies.
func CallerFrom(ctx context.Context) *Caller {
	if c, ok := ctx.Value(callerKey{}).(*Caller); ok && c != nil {
		return c
	}
	return nobody
}

// ErrForbidden marks a request its key may not make: a right it lacks or a
// session outside its scope. It maps to 403.
var ErrForbidden = errors.New("forbidden")

// ErrUnauthorized marks a request without a valid key. It maps to 401.
var ErrUnauthorized = errors.New("missing or wrong bearer key")

// Can reports whether c holds every right in want.
func (c *Caller) Can(want Right) bool { return c.Rights.Has(want) }

// MayUse reports whether session lies in c's scope.
func (c *Caller) MayUse(session string) bool { return c.Scope.Contains(session) }

// SeesAll reports whether c's scope covers every session, so store-wide
// listings need no filtering.
func (c *Caller) SeesAll() bool { return c.Scope.All() }

// Check returns nil when c holds want and every session lies in its scope,
// and an error matching ErrForbidden that says which is missing otherwise.
func (c *Caller) Check(want Right, sessions ...string) error {
	if !c.Can(want) {
		return fmt.Errorf("%w: key %q lacks the %s right", ErrForbidden, c.Name, (want &^ c.Rights).String())
	}
	for _, s := range sessions {
		if !c.MayUse(s) {
			return fmt.Errorf("%w: session %q is outside the scope of key %q", ErrForbidden, s, c.Name)
		}
	}
	return nil
}

// FilterSessions returns the names in c's scope, in their order.
func (c *Caller) FilterSessions(names []string) []string {
	return VisibleBy(c, names, func(s string) string { return s })
}

// VisibleBy returns the items of xs whose session (as session gives it)
// lies in c's scope, in their order. xs is returned as is when c sees all.
func VisibleBy[T any](c *Caller, xs []T, session func(T) string) []T {
	if c.SeesAll() {
		return xs
	}
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if c.MayUse(session(x)) {
			out = append(out, x)
		}
	}
	return out
}

// scopeFilter returns the memory filter that restricts a store-wide query
// (recall with all_sessions, listings, exports) to the sessions c may use:
// nil when c sees every session. ok is false when c's scope matches no
// session of the store; the handler then answers an empty result without
// querying (an empty In filter is not a valid filter).
func (h *Handler) scopeFilter(ctx context.Context, c *Caller) (f *memory.Filter, ok bool, err error) {
	if c.SeesAll() {
		return nil, true, nil
	}
	names, exact := c.Scope.exact()
	if !exact {
		// Globs: expand them against the sessions the store holds.
		ss, err := h.store.Sessions(ctx)
		if err != nil {
			return nil, false, err
		}
		names = names[:0]
		for _, s := range ss {
			if c.MayUse(s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil, false, nil
	}
	return memory.In(memory.FieldSession, names...), true, nil
}

// scopeIDs returns the IDs among ids of memories that exist and lie in c's
// scope, in their order. The rest are dropped, so that an out-of-scope
// memory is indistinguishable from a missing one.
func (h *Handler) scopeIDs(ctx context.Context, c *Caller, ids []string) ([]string, error) {
	return scopeIDs(ctx, h.store, c, ids)
}

func scopeIDs(ctx context.Context, store *memory.Store, c *Caller, ids []string) ([]string, error) {
	if c.SeesAll() {
		return ids, nil
	}
	ms, err := store.Get(ctx, ids...)
	if err != nil {
		return nil, err
	}
	ok := make(map[string]bool, len(ms))
	for _, m := range ms {
		if c.MayUse(m.Session) {
			ok[m.ID] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !ok[id] }), nil
}

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
	// SessionHandler: the handler finds the sessions (in its body, or in
	// the memories or tasks it names) and checks them with Caller.Check,
	// scopeFilter, scopeIDs or VisibleBy.
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

// scopeRecall confines a recall to the caller's scope: a single session
// must lie in it; all_sessions becomes "every session the key may read".
// ok is false when the key may read no session of the store, so the
// answer is empty.
func (h *Handler) scopeRecall(ctx context.Context, o *memory.RecallOptions) (ok bool, err error) {
	c := CallerFrom(ctx)
	if !o.AllSessions {
		return true, c.Check(RightRead, o.Session)
	}
	if err := c.Check(RightRead); err != nil {
		return false, err
	}
	f, ok, err := h.scopeFilter(ctx, c)
	if err != nil || !ok {
		return false, err
	}
	if f != nil {
		if o.Filter != nil {
			f = memory.And(o.Filter, f)
		}
		o.Filter = f
	}
	return true, nil
}

// scopedTask returns the task id of r's caller (see findTask); the query
// parameter session names its session.
func (h *Handler) scopedTask(r *http.Request, id string) (memory.Task, error) {
	var session *string
	if q := r.URL.Query(); q.Has("session") {
		v := q.Get("session")
		session = &v
	}
	return findTask(r.Context(), h.store, CallerFrom(r.Context()), session, id)
}

// findTask returns the task id that c may use. Task IDs are per session:
// session, when given, names the task's session; without it the task is the
// one of that ID among c's sessions, and several are ErrInvalidInput (400)
// naming them. A task outside c's scope is reported missing (ErrNotFound),
// like an unknown one, and never counts.
func findTask(ctx context.Context, store *memory.Store, c *Caller, session *string, id string) (memory.Task, error) {
	if session != nil {
		if !c.MayUse(*session) {
			return memory.Task{}, fmt.Errorf("%w: task %q in session %q", memory.ErrNotFound, id, *session)
		}
		return store.SessionTask(ctx, *session, id)
	}
	ts, err := store.TasksByID(ctx, id)
	if err != nil {
		return memory.Task{}, err
	}
	ts = VisibleBy(c, ts, func(t memory.Task) string { return t.Session })
	switch len(ts) {
	case 0:
		return memory.Task{}, fmt.Errorf("%w: task %q", memory.ErrNotFound, id)
	case 1:
		return ts[0], nil
	}
	sessions := make([]string, len(ts))
	for i, t := range ts {
		sessions[i] = t.Session
	}
	return memory.Task{}, fmt.Errorf("%w (send its session: ?session=NAME over HTTP, \"session\" to the MCP tools)",
		&memory.AmbiguousTaskError{ID: id, Sessions: sessions})
}
