package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/engramdb/engram/memory"
)

// ErrBadRequest marks a request the layer refuses before it runs: a value
// out of range, an unknown mode, a missing argument (HTTP 400). Nothing was
// changed. The memory layer's own refusals match memory.ErrInvalidInput.
var ErrBadRequest = errors.New("bad request")

// badRequest returns an error matching ErrBadRequest.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

// Options configure a Local. The zero value of each field means its
// documented default.
type Options struct {
	// Dir is the store's directory, for the check's report of files engram
	// did not write; empty leaves that part out.
	Dir string
	// NewEmbedder builds the embedder Reembed migrates to from its spec
	// (lexical, onnx:DIR, ollama:MODEL); nil refuses reembeds.
	NewEmbedder func(spec string) (memory.Embedder, error)
	// Reembedded, if set, is called after Reembed switched the store to the
	// embedder spec (memctl records it in the store).
	Reembedded func(spec string)
	// Now is the clock of relative times (since=7d) and of the purge dates
	// forget answers; nil is time.Now.
	Now func() time.Time
}

// Local runs the operations on a store this process holds, each under the
// caller its context carries (CallerFrom): it checks the caller's right and
// sessions, confines store-wide queries to the caller's scope, and reports
// a memory or task outside the scope as missing. It is safe for concurrent
// use, as the store is.
type Local struct {
	store *memory.Store
	opts  Options
}

// New returns the operations on store. The caller keeps ownership of store.
func New(store *memory.Store, opts Options) *Local {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Local{store: store, opts: opts}
}

// Store returns the store l runs on.
func (l *Local) Store() *memory.Store { return l.store }

var _ Ops = (*Local)(nil)

// scopeFilter returns the memory filter that restricts a store-wide query
// (recall with all_sessions, listings, exports) to the sessions c may use:
// nil when c sees every session. ok is false when c's scope matches no
// session of the store; the operation then answers an empty result without
// querying (an empty In filter is not a valid filter).
func (l *Local) scopeFilter(ctx context.Context, c *Caller) (f *memory.Filter, ok bool, err error) {
	if c.SeesAll() {
		return nil, true, nil
	}
	names, exact := c.Scope.exact()
	if !exact {
		// Globs: expand them against the sessions the store holds.
		ss, err := l.store.Sessions(ctx)
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

// scoped ANDs f with c's scope; ok is false when c may see no session.
func (l *Local) scoped(ctx context.Context, c *Caller, f *memory.Filter) (*memory.Filter, bool, error) {
	sf, ok, err := l.scopeFilter(ctx, c)
	if err != nil || !ok {
		return nil, false, err
	}
	switch {
	case sf == nil:
		return f, true, nil
	case f == nil:
		return sf, true, nil
	}
	return memory.And(f, sf), true, nil
}

// scopeIDs returns the IDs among ids of memories that exist and lie in c's
// scope, in their order. The rest are dropped, so that an out-of-scope
// memory is indistinguishable from a missing one.
func (l *Local) scopeIDs(ctx context.Context, c *Caller, ids []string) ([]string, error) {
	if c.SeesAll() {
		return ids, nil
	}
	ms, err := l.store.Get(ctx, ids...)
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

// scopedMemory returns memory id when the caller holds right and the
// memory's session lies in its scope; a memory outside the scope is a
// *memory.NotFoundError, like a missing one.
func (l *Local) scopedMemory(ctx context.Context, id string, right Right) (memory.Memory, error) {
	return scopedLoad(ctx, right, id, l.store.Lookup, func(m memory.Memory) string { return m.Session },
		func(id string) error { return &memory.NotFoundError{IDs: []string{id}} })
}

// scopedLoad loads what id names when the caller holds right, and answers
// it when its session lies in the caller's scope, missing(id) otherwise.
func scopedLoad[T any](ctx context.Context, right Right, id string, load func(context.Context, string) (T, error),
	session func(T) string, missing func(id string) error) (T, error) {
	var zero T
	c := CallerFrom(ctx)
	if err := c.Check(right); err != nil {
		return zero, err
	}
	v, err := load(ctx, id)
	if err != nil {
		return zero, err
	}
	if !c.MayUse(session(v)) {
		return zero, missing(id)
	}
	return v, nil
}

// distinct returns ids without repeats, in their first order.
func distinct(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
