package api

import (
	"maps"

	"github.com/engramdb/engram/memory"
)

// ScopeIDs is mem0's user_id, agent_id and run_id, which remember, recall, list and forget take
// besides or instead of the session. memory.Scope maps them onto it: the session is the user_id
// (which is the session's other name: give either, or both equal), else the agent_id, else the
// run_id; the IDs the session does not take are stored on the memories as the metadata agent_id
// and run_id, and a request that names them selects exactly those memories of the session.
type ScopeIDs struct {
	UserID  string `json:"user_id,omitempty" jsonschema:"mem0's user_id: another name for the session (give one, or both equal)"`
	AgentID string `json:"agent_id,omitempty" jsonschema:"mem0's agent_id: the session when neither session nor user_id is given, else only memories of this agent"`
	RunID   string `json:"run_id,omitempty" jsonschema:"mem0's run_id (one conversation or task): the session when nothing else names one, else only memories of this run"`
}

// given reports whether sc names any ID.
func (sc ScopeIDs) given() bool { return sc != ScopeIDs{} }

// resolve returns the memory scope of a request that names session (nil: none) and sc: the
// session is its user. ok is false when neither names anything. A session and a user_id that
// differ are refused.
func (sc ScopeIDs) resolve(session *string) (ms memory.Scope, ok bool, err error) {
	user := sc.UserID
	if session != nil {
		if user != "" && user != *session {
			return ms, false, badRequest("session %q and user_id %q differ: the user_id is the session, give one of them", *session, user)
		}
		user = *session
	}
	ms = memory.Scope{User: user, Agent: sc.AgentID, Run: sc.RunID}
	return ms, session != nil || sc.given(), nil
}

// session returns the session a request naming session and sc is about, and the condition on
// the memories' scope within it (nil: the whole session). ok is false when neither names a
// session.
func (sc ScopeIDs) session(session *string) (s string, cond *memory.Filter, ok bool, err error) {
	ms, ok, err := sc.resolve(session)
	if err != nil || !ok {
		return "", nil, ok, err
	}
	s, _ = ms.Session()
	return s, ms.Filter(), true, nil
}

// sessionString is session for requests whose session is a plain string ("" counts as not
// given when a scope ID names the session, and is the default session otherwise).
func (sc ScopeIDs) sessionString(session string) (string, *memory.Filter, error) {
	var p *string
	if session != "" || !sc.given() {
		p = &session
	}
	s, cond, _, err := sc.session(p)
	return s, cond, err
}

// metadata returns md with the scope's agent_id and run_id (those the session does not hold)
// added; md itself is not changed. A key of md that names another value is refused.
func (sc ScopeIDs) metadata(session string, md map[string]any) (map[string]any, error) {
	var p *string
	if session != "" || !sc.given() {
		p = &session
	}
	ms, _, err := sc.resolve(p)
	if err != nil {
		return nil, err
	}
	add := ms.Metadata()
	if len(add) == 0 {
		return md, nil
	}
	out := maps.Clone(md)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range add {
		// A value of the caller's may be anything JSON holds (a map is not comparable): only the
		// same string agrees.
		if have, ok := out[k]; ok {
			if hs, isString := have.(string); !isString || hs != v {
				return nil, badRequest("metadata %q is %v, but the request's %s is %v", k, have, k, v)
			}
		}
		out[k] = v
	}
	return out, nil
}

// SessionOf returns the session a request that names session and sc is about ("" also when they
// conflict, which the operation refuses).
func (sc ScopeIDs) SessionOf(session string) string {
	s, _, _ := sc.sessionString(session)
	return s
}
