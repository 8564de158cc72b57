package memory

import "strings"

// Scopes: mem0 names memories by the user, the agent and the run (one conversation or task) they
// belong to. In engram the session stays the isolation boundary, the unit that keys are scoped to
// and that Recall, AddTurn and the doors take; a Scope maps onto it:
//
//   - The session is the user_id when given, else the agent_id, else the run_id (Scope.Session).
//   - The IDs the session does not take are stored on each memory under the reserved metadata
//     keys MetaAgentID and MetaRunID (Scope.Metadata), and a recall, list or forget that names
//     them selects exactly those memories of the session (Scope.Filter); one that does not name
//     them selects the whole session, as mem0 does.
//   - A memory belongs to the one scope its metadata says: Remember merges a near-duplicate only
//     into, and supersedes only, a memory of the same scope (sameScope: the same agent_id and
//     run_id, or none), and a distillation updates or deletes only memories of the scope it
//     writes to. Update keeps a
//     memory's scope unless its new metadata names another.
//
// So user "alex" with run "trip-42" is session "alex", metadata run_id "trip-42"; agent "planner"
// alone is session "planner". A user and an agent of the same name share a session: name them
// apart (a prefix) where both kinds write. importer/mem0 maps mem0's exports the same way.

// The reserved metadata keys of a memory's scope (see Scope). Their values are non-empty
// strings; Remember refuses others.
const (
	MetaAgentID = "agent_id"
	MetaRunID   = "run_id"
)

// Scope is mem0's user_id, agent_id and run_id. The zero Scope names the session "" (the default
// session) with no further condition.
type Scope struct {
	User, Agent, Run string
}

// IsZero reports whether sc names no ID.
func (sc Scope) IsZero() bool { return sc == Scope{} }

// Session returns the session sc's memories live in: User, else Agent, else Run ("" when sc is
// zero), and the mem0 key it came from ("user_id", "agent_id", "run_id", or "").
func (sc Scope) Session() (session, from string) {
	switch {
	case sc.User != "":
		return sc.User, "user_id"
	case sc.Agent != "":
		return sc.Agent, MetaAgentID
	case sc.Run != "":
		return sc.Run, MetaRunID
	}
	return "", ""
}

// rest returns the agent and run IDs the session does not hold.
func (sc Scope) rest() (agent, run string) {
	_, from := sc.Session()
	switch from {
	case "user_id":
		return sc.Agent, sc.Run
	case MetaAgentID:
		return "", sc.Run
	}
	return "", ""
}

// Metadata returns the IDs of sc that its session does not hold, under MetaAgentID and
// MetaRunID: what Remember stores on the scope's memories (nil when there are none).
func (sc Scope) Metadata() map[string]any {
	agent, run := sc.rest()
	var md map[string]any
	for k, v := range map[string]string{MetaAgentID: agent, MetaRunID: run} {
		if v != "" {
			if md == nil {
				md = map[string]any{}
			}
			md[k] = v
		}
	}
	return md
}

// Filter returns the condition that selects sc's memories within its session: the agent_id and
// run_id that Metadata holds; nil when it holds none (the session alone selects). It does not
// name the session: callers pass that as the session of their request.
func (sc Scope) Filter() *Filter {
	agent, run := sc.rest()
	var fs []*Filter
	if agent != "" {
		fs = append(fs, Eq(MetaField(MetaAgentID), agent))
	}
	if run != "" {
		fs = append(fs, Eq(MetaField(MetaRunID), run))
	}
	return AllOf(fs...)
}

// ScopeOf returns the agent and run IDs a memory's metadata holds (Scope.User is left empty: the
// session holds it).
func ScopeOf(md map[string]any) Scope {
	a, _ := md[MetaAgentID].(string)
	r, _ := md[MetaRunID].(string)
	return Scope{Agent: a, Run: r}
}

// sameScope matches the memories whose scope keys are exactly md's: the same agent_id and run_id,
// absent where md has none. A write merges into and distils against these only.
func sameScope(md map[string]any) *Filter {
	var fs []*Filter
	for _, k := range []string{MetaAgentID, MetaRunID} {
		if v, ok := md[k].(string); ok {
			fs = append(fs, Eq(MetaField(k), v))
		} else {
			fs = append(fs, Not(Exists(MetaField(k))))
		}
	}
	return And(fs...)
}

// checkScopeMetadata refuses scope keys whose values are not non-empty strings of valid length.
func checkScopeMetadata(md map[string]any) error {
	for _, k := range []string{MetaAgentID, MetaRunID} {
		v, ok := md[k]
		if !ok {
			continue
		}
		s, isString := v.(string)
		if !isString || strings.TrimSpace(s) == "" {
			return errorf(ErrInvalidInput, "metadata %q is a scope (see Scope): a non-empty string, not %v", k, v)
		}
	}
	return nil
}
