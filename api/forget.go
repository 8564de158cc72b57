package api

import (
	"context"
	"slices"
	"time"

	"github.com/engramdb/engram/memory"
)

// Forget forgets what req names: IDs (all or nothing: an unknown ID, or one outside the
// caller's scope, is a *memory.NotFoundError naming it, and nothing is forgotten), every memory
// of a session or of a scope within it (All with session, user_id, agent_id or run_id), or what a
// filter selects within the session (and scope) or the caller's scope.
// Forgotten memories go to the trash when the store keeps them; Purge deletes for good.
func (l *Local) Forget(ctx context.Context, req ForgetRequest) (ForgetResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite); err != nil {
		return ForgetResponse{}, err
	}
	ways := 0
	for _, b := range []bool{len(req.IDs) > 0, req.All, req.Filter != nil} {
		if b {
			ways++
		}
	}
	where := l.store.ForgetWhere
	if req.Purge {
		where = l.store.PurgeWhere
	}
	session, cond, hasSession, err := req.ScopeIDs.session(req.Session)
	if err != nil {
		return ForgetResponse{}, err
	}
	var n int
	switch {
	case ways > 1:
		return ForgetResponse{}, badRequest("give one of ids, session with all=true, or filter")
	case len(req.IDs) > 0 && req.ScopeIDs.given():
		return ForgetResponse{}, badRequest("ids name the memories to forget: give no user_id, agent_id or run_id with them")
	case len(req.IDs) > 0 && req.Purge:
		n, err = l.purgeIDs(ctx, c, req.IDs)
	case len(req.IDs) > 0:
		n, err = l.forgetIDs(ctx, c, req.IDs)
	case req.All && hasSession:
		if err := c.Check(RightWrite, session); err != nil {
			return ForgetResponse{}, err
		}
		n, err = where(ctx, memory.AllOf(memory.Eq(memory.FieldSession, session), cond))
	case req.Filter != nil:
		f := req.Filter
		if hasSession {
			if err := c.Check(RightWrite, session); err != nil {
				return ForgetResponse{}, err
			}
			f = memory.AllOf(f, memory.Eq(memory.FieldSession, session), cond)
		}
		var ok bool
		if f, ok, err = l.scoped(ctx, c, f); err == nil && ok {
			n, err = where(ctx, f)
		}
	default:
		return ForgetResponse{}, badRequest("give ids, session (or user_id, agent_id, run_id) with all=true, or filter")
	}
	if err != nil {
		return ForgetResponse{}, err
	}
	resp := ForgetResponse{Forgotten: n, Purged: req.Purge}
	if ret := l.store.ForgetRetention(); ret > 0 && !req.Purge {
		resp.Restorable, resp.PurgeAfter = true, l.opts.Now().UTC().Add(ret).Truncate(time.Second)
	}
	return resp, nil
}

// forgetIDs forgets memories by ID, all or nothing.
func (l *Local) forgetIDs(ctx context.Context, c *Caller, ids []string) (int, error) {
	ids = distinct(ids)
	in, err := l.scopeIDs(ctx, c, ids)
	if err != nil {
		return 0, err
	}
	var missing []string
	for _, id := range ids {
		if !slices.Contains(in, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &memory.NotFoundError{IDs: missing}
	}
	ms, err := l.store.Get(ctx, in...)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if err := c.Check(RightWrite, m.Session); err != nil {
			return 0, err
		}
	}
	if err := l.store.Delete(ctx, in...); err != nil {
		return 0, err
	}
	return len(ms), nil
}

// purgeIDs deletes memories for good by ID, wherever they are (live, in the trash, in the
// archive), all or nothing: an ID found nowhere in the caller's scope is a
// *memory.NotFoundError.
func (l *Local) purgeIDs(ctx context.Context, c *Caller, ids []string) (int, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	sessions := map[string][]string{}
	live, err := l.store.Get(ctx, ids...)
	if err != nil {
		return 0, err
	}
	for _, m := range live {
		sessions[m.ID] = append(sessions[m.ID], m.Session)
	}
	fs, err := l.store.Forgotten(ctx, ids...)
	if err != nil {
		return 0, err
	}
	for _, f := range fs {
		sessions[f.ID] = append(sessions[f.ID], f.Session)
	}
	archived, err := l.store.Archived(ctx)
	if err != nil {
		return 0, err
	}
	for _, m := range archived {
		if slices.Contains(ids, m.ID) {
			sessions[m.ID] = append(sessions[m.ID], m.Session)
		}
	}
	var missing []string
	for _, id := range ids {
		ss := sessions[id]
		if len(ss) == 0 || slices.ContainsFunc(ss, func(s string) bool { return !c.MayUse(s) }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &memory.NotFoundError{IDs: missing}
	}
	for _, ss := range sessions {
		for _, s := range ss {
			if err := c.Check(RightWrite, s); err != nil {
				return 0, err
			}
		}
	}
	return l.store.Purge(ctx, ids...)
}

// RestoreForgotten brings forgotten memories back by ID, all or nothing: an ID not in the
// trash, or of a session outside the caller's scope, is a *memory.NotFoundError naming it.
func (l *Local) RestoreForgotten(ctx context.Context, req RestoreForgottenRequest) (RestoredResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite); err != nil {
		return RestoredResponse{}, err
	}
	if len(req.IDs) == 0 {
		return RestoredResponse{}, badRequest("restore needs ids")
	}
	if slices.Contains(req.IDs, "") {
		return RestoredResponse{}, badRequest("empty memory ID")
	}
	fs, err := l.store.Forgotten(ctx, req.IDs...)
	if err != nil {
		return RestoredResponse{}, err
	}
	var missing []string
	for _, id := range distinct(req.IDs) {
		i := slices.IndexFunc(fs, func(f memory.ForgottenMemory) bool { return f.ID == id })
		if i < 0 || !c.MayUse(fs[i].Session) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return RestoredResponse{}, &memory.NotFoundError{Kind: "forgotten memory", IDs: missing}
	}
	for _, f := range fs {
		if err := c.Check(RightWrite, f.Session); err != nil {
			return RestoredResponse{}, err
		}
	}
	n, err := l.store.Unforget(ctx, req.IDs...)
	return RestoredResponse{Restored: n}, err
}

// Forgotten lists the trash within the caller's scope (and req.Session when given).
func (l *Local) Forgotten(ctx context.Context, req ForgottenRequest) (ForgottenResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return ForgottenResponse{}, err
	}
	if req.Session != nil {
		if err := c.Check(RightRead, *req.Session); err != nil {
			return ForgottenResponse{}, err
		}
	}
	fs, err := l.store.Forgotten(ctx)
	if err != nil {
		return ForgottenResponse{}, err
	}
	out := ForgottenResponse{Memories: make([]ForgottenJSON, 0, len(fs))}
	for _, f := range fs {
		if !c.MayUse(f.Session) || (req.Session != nil && f.Session != *req.Session) {
			continue
		}
		out.Memories = append(out.Memories, ForgottenJSON{MemoryJSON: memory.ToJSON(&f.Memory, false), Forgotten: f.Forgotten, PurgeAfter: f.PurgeAfter})
	}
	return out, nil
}

// PurgeForgotten empties the trash of every session for good (admin and write rights).
func (l *Local) PurgeForgotten(ctx context.Context) (PurgedResponse, error) {
	if err := CallerFrom(ctx).Check(RightAdmin | RightWrite); err != nil {
		return PurgedResponse{}, err
	}
	n, err := l.store.PurgeForgotten(ctx)
	return PurgedResponse{Purged: n}, err
}
