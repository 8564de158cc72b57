package api

import (
	"context"
	"time"

	"github.com/engramdb/engram/memory"
)

// Remember stores req.Text, or req.Messages, in the session req names (write right, the session
// in scope); the scope IDs the session does not take go into each memory's metadata (ScopeIDs).
func (l *Local) Remember(ctx context.Context, req RememberRequest) (RememberResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite); err != nil {
		return RememberResponse{}, err
	}
	session, _, err := req.ScopeIDs.sessionString(req.Session)
	if err != nil {
		return RememberResponse{}, err
	}
	if err := c.Check(RightWrite, session); err != nil {
		return RememberResponse{}, err
	}
	if err := req.check(); err != nil {
		return RememberResponse{}, err
	}
	md, err := req.ScopeIDs.metadata(req.Session, req.Metadata)
	if err != nil {
		return RememberResponse{}, err
	}
	o := memory.RememberOptions{Context: req.Context, Source: req.Source, Tags: req.Tags, Importance: req.Importance, Time: req.Time, Metadata: md}
	if req.Messages != nil {
		res, err := l.store.RememberMessages(ctx, session, req.Messages, memory.MessagesOptions{Infer: req.Infer, RememberOptions: o})
		if err != nil {
			return RememberResponse{}, err
		}
		d := distillAnswer(c, res)
		return RememberResponse{Turns: d.Turns, Events: d.Events, Fallback: d.Fallback}, nil
	}
	res, err := l.store.Remember(ctx, session, req.Text, o)
	if err != nil {
		return RememberResponse{}, err
	}
	return RememberResponse{IDs: res.IDs, Merged: res.Merged, Superseded: res.Superseded, Older: res.Older}, nil
}

// Options returns the memory.RecallOptions req asks for: its mode, fusion, superseded policy and
// as_of parsed (a relative as_of against now), its floors mapped (nil: the defaults, 0: none), its
// session and scope resolved (ScopeIDs; the scope's condition ANDed with the filter).
func (req *RecallRequest) Options(now time.Time) (memory.RecallOptions, error) {
	o := memory.RecallOptions{
		Session: req.Session, AllSessions: req.AllSessions, K: req.K,
		VectorWeight: req.VectorWeight, KeywordWeight: req.KeywordWeight,
		MinScore: floor(req.MinScore), MinRelative: floor(req.MinRelative), SourceWeights: req.SourceWeights, NoTouch: req.NoTouch,
		Decay: memory.Decay{Off: req.NoDecay}, Filter: req.Filter, Turns: req.Turns,
	}
	if req.AsOf != "" {
		t, err := ParseWhen(req.AsOf, now, true)
		if err != nil {
			return o, badRequest("as_of: %v", err)
		}
		o.AsOf = t
	}
	var err error
	if o.Superseded, err = ParseSuperseded(req.Superseded); err != nil {
		return o, err
	}
	if req.AllSessions && req.ScopeIDs.given() {
		return o, badRequest("all_sessions recalls from every session; user_id, agent_id and run_id name one (across sessions, filter on metadata.agent_id or metadata.run_id)")
	}
	session, cond, err := req.ScopeIDs.sessionString(req.Session)
	if err != nil {
		return o, err
	}
	o.Session, o.Filter = session, memory.AllOf(req.Filter, cond)
	if o.Mode, err = ParseMode(req.Mode); err != nil {
		return o, err
	}
	o.Fusion, err = ParseFusion(req.Fusion)
	return o, err
}

// floor maps a request's score floor onto memory.RecallOptions': nil is the default (0 there),
// 0 none (negative there).
func floor(f *float64) float64 {
	switch {
	case f == nil:
		return 0
	case *f == 0:
		return -1
	}
	return *f
}

// Recall answers the memories of req.Session (or of every session the caller may read, with
// AllSessions) most relevant to the query, says whether an empty answer comes from an empty
// session, and builds the prompt block when PromptTokens asks for one.
func (l *Local) Recall(ctx context.Context, req RecallRequest) (RecallResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return RecallResponse{}, err
	}
	if err := req.check(); err != nil {
		return RecallResponse{}, err
	}
	o, err := req.Options(l.opts.Now())
	if err != nil {
		return RecallResponse{}, err
	}
	var results []memory.Result
	if ok, err := l.scopeRecall(ctx, c, &o); err != nil {
		return RecallResponse{}, err
	} else if ok {
		if results, err = l.store.Recall(ctx, req.Query, o); err != nil {
			return RecallResponse{}, err
		}
	}
	resp := RecallResponse{Results: make([]RecallResult, 0, len(results))}
	for i := range results {
		resp.Results = append(resp.Results, memory.ResultToJSON(&results[i]))
	}
	if len(results) == 0 && !req.AllSessions {
		n, err := l.store.Count(ctx, memory.Eq(memory.FieldSession, o.Session))
		if err != nil {
			return RecallResponse{}, err
		}
		resp.SessionEmpty = n == 0
	}
	if req.PromptTokens > 0 {
		p, err := memory.BuildPrompt(req.Query, results, memory.PromptOptions{TokenBudget: req.PromptTokens})
		if err != nil {
			return RecallResponse{}, err
		}
		resp.Prompt = p.Text
	}
	return resp, nil
}

// scopeRecall confines a recall to c's scope: a single session must lie in
// it; all_sessions becomes "every session the key may read". ok is false
// when the key may read no session of the store, so the answer is empty.
func (l *Local) scopeRecall(ctx context.Context, c *Caller, o *memory.RecallOptions) (ok bool, err error) {
	if !o.AllSessions {
		return true, c.Check(RightRead, o.Session)
	}
	f, ok, err := l.scopeFilter(ctx, c)
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

// Get answers one memory (read right; a memory outside the scope is missing).
func (l *Local) Get(ctx context.Context, req GetRequest) (memory.MemoryJSON, error) {
	m, err := l.scopedMemory(ctx, req.ID, RightRead)
	if err != nil {
		return memory.MemoryJSON{}, err
	}
	return memory.ToJSON(&m, req.Vector), nil
}

// List answers a page of the memories req selects, newest first, within the caller's scope.
func (l *Local) List(ctx context.Context, req ListRequest) (ListResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return ListResponse{}, err
	}
	f, err := req.filter(l.opts.Now())
	if err != nil {
		return ListResponse{}, err
	}
	if s, ok, err := req.session(); err != nil {
		return ListResponse{}, err
	} else if ok {
		if err := c.Check(RightRead, s); err != nil {
			return ListResponse{}, err
		}
	}
	if req.Limit < 0 {
		return ListResponse{}, badRequest("limit %d is not positive", req.Limit)
	}
	resp := ListResponse{Memories: []memory.MemoryJSON{}}
	f, ok, err := l.scoped(ctx, c, f)
	if err != nil || !ok {
		return resp, err
	}
	page, err := l.store.List(ctx, memory.ListOptions{Filter: f, Limit: req.Limit, Cursor: req.Cursor})
	if err != nil {
		return ListResponse{}, err
	}
	for i := range page.Memories {
		resp.Memories = append(resp.Memories, memory.ToJSON(&page.Memories[i], false))
	}
	resp.NextCursor = page.Next
	return resp, nil
}

// filter is the conditions of req ANDed: Filter, the Selection, the session and scope.
func (req *ListRequest) filter(now time.Time) (*memory.Filter, error) {
	f, err := req.Selection.Filter(req.Filter, now)
	if err != nil {
		return nil, err
	}
	if session, cond, ok, err := req.ScopeIDs.session(req.Session); err != nil {
		return nil, err
	} else if ok {
		f = memory.AllOf(f, memory.Eq(memory.FieldSession, session), cond)
	}
	return f, nil
}

// session returns the session req names (directly or by its scope), if any.
func (req *ListRequest) session() (string, bool, error) {
	s, _, ok, err := req.ScopeIDs.session(req.Session)
	return s, ok, err
}

// Update replaces the fields req gives of memory id (write right); the old version goes to
// its history. It answers the memory as it now is, or a receipt to a caller without the read
// right.
func (l *Local) Update(ctx context.Context, id string, req UpdateRequest) (MemoryAnswer, error) {
	if _, err := l.scopedMemory(ctx, id, RightWrite); err != nil {
		return MemoryAnswer{}, err
	}
	m, err := l.store.Update(ctx, id, memory.UpdateOptions{Text: req.Text, Source: req.Source, Tags: req.Tags,
		Importance: req.Importance, Metadata: req.Metadata})
	if err != nil {
		return MemoryAnswer{}, err
	}
	return memoryAnswer(CallerFrom(ctx), &m), nil
}

// Delete forgets memory id (write right), as Forget does with one ID.
func (l *Local) Delete(ctx context.Context, id string) (DeleteResponse, error) {
	if _, err := l.scopedMemory(ctx, id, RightWrite); err != nil {
		return DeleteResponse{}, err
	}
	if err := l.store.Delete(ctx, id); err != nil {
		return DeleteResponse{}, err
	}
	return DeleteResponse{Deleted: id}, nil
}

// History answers the earlier versions of memory id, oldest first (read right). The memory
// must be live and in scope (an archived one is restored first).
func (l *Local) History(ctx context.Context, id string) (HistoryResponse, error) {
	if _, err := l.scopedMemory(ctx, id, RightRead); err != nil {
		return HistoryResponse{}, err
	}
	vs, err := l.store.History(ctx, id)
	if err != nil {
		return HistoryResponse{}, err
	}
	resp := HistoryResponse{ID: id, Versions: make([]memory.VersionJSON, 0, len(vs))}
	for i := range vs {
		resp.Versions = append(resp.Versions, memory.VersionToJSON(&vs[i]))
	}
	return resp, nil
}

// Revert brings version req.Version of memory id back (write right); the current one goes to
// its history. It answers as Update does.
func (l *Local) Revert(ctx context.Context, id string, req RevertRequest) (MemoryAnswer, error) {
	if _, err := l.scopedMemory(ctx, id, RightWrite); err != nil {
		return MemoryAnswer{}, err
	}
	m, err := l.store.Revert(ctx, id, req.Version)
	if err != nil {
		return MemoryAnswer{}, err
	}
	return memoryAnswer(CallerFrom(ctx), &m), nil
}

// Sessions lists the sessions the caller may read, with their memory counts.
func (l *Local) Sessions(ctx context.Context) (SessionsResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return SessionsResponse{}, err
	}
	ss, err := l.store.Sessions(ctx)
	if err != nil {
		return SessionsResponse{}, err
	}
	ss = VisibleBy(c, ss, func(s memory.SessionInfo) string { return s.Name })
	out := SessionsResponse{Sessions: make([]SessionJSON, 0, len(ss))}
	for _, s := range ss {
		out.Sessions = append(out.Sessions, SessionJSON{Name: s.Name, Memories: s.Memories, Newest: s.Newest})
	}
	return out, nil
}
