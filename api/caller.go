package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Caller is who makes a request: the key it authenticated with, its rights
// and the sessions it may use. Every operation of the layer asks the caller
// its context carries (CallerFrom) before it touches the store; a door puts
// it there (WithCaller) once it knows who calls.
type Caller struct {
	// Name is the key's name: a key file entry, "token" for the server's
	// admin token, or "local" for LocalCaller.
	Name   string
	Rights Right
	Scope  Scope
}

// LocalCaller may do everything to every session: the caller of a store this
// process opened itself (the library, memctl on a closed store, memctl mcp on
// stdio) and of a server that runs open on loopback.
var LocalCaller = &Caller{Name: "local", Rights: AllRights, Scope: Scope{"*"}}

// nobody has no rights and no sessions: what CallerFrom returns for a
// context no door put a caller in, so a forgotten WithCaller fails closed.
var nobody = &Caller{Name: "-"}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries: a caller with no rights and no
// sessions when it carries none, so a missing check denies.
func CallerFrom(ctx context.Context) *Caller {
	if c, ok := ctx.Value(callerKey{}).(*Caller); ok && c != nil {
		return c
	}
	return nobody
}

// ErrForbidden marks a request its caller may not make: a right it lacks or
// a session outside its scope (HTTP 403).
var ErrForbidden = errors.New("forbidden")

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

// Right is one thing a key may do. Rights are independent: a key holds any
// combination of them.
type Right uint8

// The rights a key can hold.
const (
	// RightRead: recall, list and read the memories, short-term context and
	// tasks of the sessions in the key's scope.
	RightRead Right = 1 << iota
	// RightWrite: remember, forget and change them.
	RightWrite
	// RightAdmin: store-wide operations (stats, metrics, maintenance, backup,
	// export). These reach every session, so an admin key must have the
	// scope "*".
	RightAdmin
)

// AllRights is read, write and admin.
const AllRights = RightRead | RightWrite | RightAdmin

var rightNames = []struct {
	r    Right
	name string
}{{RightRead, "read"}, {RightWrite, "write"}, {RightAdmin, "admin"}}

// Has reports whether rs includes every right of want.
func (rs Right) Has(want Right) bool { return rs&want == want }

// Names lists the rights in rs by name, in the order read, write, admin.
func (rs Right) Names() []string {
	var out []string
	for _, rn := range rightNames {
		if rs&rn.r != 0 {
			out = append(out, rn.name)
		}
	}
	return out
}

func (rs Right) String() string {
	if rs == 0 {
		return "none"
	}
	return strings.Join(rs.Names(), ",")
}

// ParseRights parses rights by name ("read", "write", "admin"); names may be
// comma-separated.
func ParseRights(names ...string) (Right, error) {
	var rs Right
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			part = strings.ToLower(strings.TrimSpace(part))
			if part == "" {
				continue
			}
			i := slices.IndexFunc(rightNames, func(rn struct {
				r    Right
				name string
			}) bool {
				return rn.name == part
			})
			if i < 0 {
				return 0, fmt.Errorf("unknown right %q (want read, write or admin)", part)
			}
			rs |= rightNames[i].r
		}
	}
	return rs, nil
}

// MarshalJSON writes rights as a list of names.
func (rs Right) MarshalJSON() ([]byte, error) {
	names := rs.Names()
	if names == nil {
		names = []string{}
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads a list of right names.
func (rs *Right) UnmarshalJSON(data []byte) error {
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	r, err := ParseRights(names...)
	if err != nil {
		return err
	}
	*rs = r
	return nil
}

// Scope is the set of sessions a key may use, as patterns: an exact session
// name, or a glob where * matches any run of characters (slashes included)
// and ? any one character, so "team-*" is every session starting with
// "team-" and "*" is every session. A backslash makes the next character
// literal.
type Scope []string

// ValidateScope checks the patterns of a scope.
func ValidateScope(s Scope) error {
	if len(s) == 0 {
		return errors.New("a key needs at least one session pattern (\"*\" for all sessions)")
	}
	for _, p := range s {
		if p == "" || !utf8.ValidString(p) || len(p) > 1024 {
			return fmt.Errorf("session pattern %q must be non-empty valid UTF-8 of at most 1024 bytes", p)
		}
		if strings.HasSuffix(p, `\`) && !strings.HasSuffix(p, `\\`) {
			return fmt.Errorf("session pattern %q ends in a lone backslash", p)
		}
	}
	return nil
}

// All reports whether the scope covers every session.
func (s Scope) All() bool { return slices.Contains(s, "*") }

// Contains reports whether session lies in the scope.
func (s Scope) Contains(session string) bool {
	for _, p := range s {
		if globMatch(p, session) {
			return true
		}
	}
	return false
}

// exact returns the scope's session names when every pattern is an exact
// name (no wildcard), so a filter can be built without listing sessions.
func (s Scope) exact() ([]string, bool) {
	out := make([]string, 0, len(s))
	for _, p := range s {
		lit, ok := literal(p)
		if !ok {
			return nil, false
		}
		out = append(out, lit)
	}
	return out, true
}

// literal unescapes p; ok is false when p has a wildcard.
func literal(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?':
			return "", false
		case '\\':
			if i+1 < len(p) {
				i++
			}
		}
		b.WriteByte(p[i])
	}
	return b.String(), true
}

// globMatch matches name against pattern (see Scope) without recursion:
// the classic backtracking over the last star, linear in practice.
func globMatch(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	pi, ni := 0, 0
	starP, starN := -1, 0
	for ni < len(n) {
		if pi < len(p) {
			switch c := p[pi]; {
			case c == '*':
				starP, starN = pi, ni
				pi++
				continue
			case c == '?':
				pi++
				ni++
				continue
			case c == '\\' && pi+1 < len(p):
				if p[pi+1] == n[ni] {
					pi += 2
					ni++
					continue
				}
			case c == n[ni]:
				pi++
				ni++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starN++
		pi, ni = starP+1, starN
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
