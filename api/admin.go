package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// The store-wide operations: statistics, flush, check, compact, cleanup, the
// archive and reembed. They need the admin right (an admin key has the
// scope "*"), except Cleanup, which a writer runs on the sessions of its
// scope, and Export, which a reader runs likewise. The long ones take a
// progress callback, prog(done, total) (nil: none); a server runs them as
// jobs (GET /v1/jobs/{id}), memctl in the foreground with a progress bar.

// Progress reports done units of total (total <= 0: not known yet).
type Progress func(done, total int64)

func (p Progress) set(done, total int64) {
	if p != nil {
		p(done, total)
	}
}

// StatsResponse is the store's statistics and where it lives (GET /v1/admin/stats).
type StatsResponse struct {
	memory.Stats
	Dir string `json:"dir,omitempty"`
}

// Stats answers the store's statistics.
func (l *Local) Stats(ctx context.Context) (StatsResponse, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return StatsResponse{}, err
	}
	st, err := l.store.Stats(ctx)
	return StatsResponse{Stats: st, Dir: l.opts.Dir}, err
}

// FlushResponse answers a flush with the storage figures after it.
type FlushResponse struct {
	Flushed bool                `json:"flushed"`
	Backend memory.BackendStats `json:"backend"`
}

// Flush writes what the store holds in memory to its segments.
func (l *Local) Flush(ctx context.Context) (FlushResponse, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return FlushResponse{}, err
	}
	if err := l.store.Flush(ctx); err != nil {
		return FlushResponse{}, err
	}
	st, err := l.store.Stats(ctx)
	return FlushResponse{Flushed: true, Backend: st.Backend}, err
}

// CheckResult is the result of a check. OK is false when the store's
// files are damaged (Problem "corrupt") or the vector graph misses records
// (Problem "unreachable", with Unreachable); Error says what was found.
type CheckResult struct {
	OK          bool                     `json:"ok"`
	Problem     string                   `json:"problem,omitempty"`
	Error       string                   `json:"error,omitempty"`
	Unreachable *engine.UnreachableError `json:"unreachable,omitempty"`
	// Unknown lists files in the store directory engram did not write
	// (ignored, never removed).
	Unknown []string `json:"unknown,omitempty"`
	// Actions lists what opening the store for writing would do (a torn
	// log tail to cut, say), and Notes what the check could not cover: only
	// a check of a store no process holds, which opens nothing for writing
	// (memctl check), has them.
	Actions []string `json:"actions,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Check verifies every file of the store (progress in records). Damage is
// a result (OK false), not an error.
func (l *Local) Check(ctx context.Context, prog Progress) (CheckResult, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return CheckResult{}, err
	}
	var res CheckResult
	err := l.store.CheckProgress(ctx, prog.set)
	var unreachable *engine.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		res.Problem, res.Error, res.Unreachable = "unreachable", err.Error(), unreachable
	case errors.Is(err, memory.ErrUnsupported), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CheckResult{}, err
	case err != nil:
		res.Problem, res.Error = "corrupt", err.Error()
	default:
		res.OK = true
	}
	if l.opts.Dir != "" && res.OK {
		unknown, err := engine.UnknownFiles(l.opts.Dir)
		if err != nil {
			return CheckResult{}, err
		}
		res.Unknown = unknown
	}
	return res, nil
}

// CompactResult is the result of a compaction: storage figures before and after.
type CompactResult struct {
	Before memory.BackendStats `json:"before"`
	After  memory.BackendStats `json:"after"`
}

// Compact flushes, then merges segments and drops deleted records (progress in records).
func (l *Local) Compact(ctx context.Context, prog Progress) (CompactResult, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return CompactResult{}, err
	}
	before, err := l.store.Stats(ctx)
	if err != nil {
		return CompactResult{}, err
	}
	if err := l.store.Flush(ctx); err != nil {
		return CompactResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return CompactResult{}, err
	}
	if err := l.store.CompactProgress(ctx, prog.set); err != nil {
		return CompactResult{}, err
	}
	after, err := l.store.Stats(ctx)
	if err != nil {
		return CompactResult{}, err
	}
	return CompactResult{Before: before.Backend, After: after.Backend}, nil
}

// CleanupRequest is the body of POST /v1/cleanup and POST /v1/admin/cleanup.
type CleanupRequest struct {
	DryRun          bool    `json:"dry_run,omitempty"`
	OlderThan       string  `json:"older_than,omitempty"` // e.g. 180d, 72h; default 180d
	IncludeRecalled bool    `json:"include_recalled,omitempty"`
	Session         *string `json:"session,omitempty"`
	// Filter further restricts the selection (docs/format/filter.md).
	Filter *memory.Filter `json:"filter,omitempty"`
}

// Policy returns the cleanup policy req asks for.
func (req *CleanupRequest) Policy() (memory.CleanupPolicy, error) {
	p := memory.CleanupPolicy{DryRun: req.DryRun, IncludeRecalled: req.IncludeRecalled, Filter: req.Filter}
	if req.OlderThan != "" {
		d, err := memory.ParseAge(req.OlderThan)
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		p.OlderThan = d
	}
	if req.Session != nil {
		p.Filter = memory.AllOf(p.Filter, memory.Eq(memory.FieldSession, *req.Session))
	}
	return p, nil
}

// CleanupResult is the result of a cleanup: the IDs of the memories it moved
// to the archive (or, in a dry run, would move) and their count, and the
// memories themselves for a caller with the read right (absent for a key
// without it).
type CleanupResult struct {
	DryRun   bool                `json:"dry_run"`
	Batch    string              `json:"batch"`
	IDs      []string            `json:"ids"`
	Count    int                 `json:"count"`
	Memories []memory.MemoryJSON `json:"memories,omitzero"`
}

// Cleanup moves the stale memories of the sessions in the caller's scope to the archive
// (write right; progress in memories).
func (l *Local) Cleanup(ctx context.Context, req CleanupRequest, prog Progress) (CleanupResult, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite); err != nil {
		return CleanupResult{}, err
	}
	return l.cleanup(ctx, c, req, c.Can(RightRead), prog)
}

// AdminCleanup is Cleanup for an admin key, which reaches every session
// without the write right and sees the memories it moves.
func (l *Local) AdminCleanup(ctx context.Context, req CleanupRequest, prog Progress) (CleanupResult, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightAdmin); err != nil {
		return CleanupResult{}, err
	}
	return l.cleanup(ctx, c, req, true, prog)
}

// cleanup runs req in c's scope; read says whether the answer holds the memories.
func (l *Local) cleanup(ctx context.Context, c *Caller, req CleanupRequest, read bool, prog Progress) (CleanupResult, error) {
	p, err := req.Policy()
	if err != nil {
		return CleanupResult{}, err
	}
	if req.Session != nil && !c.MayUse(*req.Session) {
		return CleanupResult{}, c.Check(RightWrite, *req.Session)
	}
	f, ok, err := l.scoped(ctx, c, p.Filter)
	if err != nil {
		return CleanupResult{}, err
	}
	var res memory.CleanupResult
	if ok {
		p.Filter, p.Progress = f, prog
		if res, err = l.store.Cleanup(ctx, p); err != nil {
			return CleanupResult{}, err
		}
	}
	return cleanupAnswer(read, req.DryRun, res), nil
}

func memoriesJSON(ms []memory.Memory) []memory.MemoryJSON {
	out := make([]memory.MemoryJSON, 0, len(ms))
	for i := range ms {
		out = append(out, memory.ToJSON(&ms[i], false))
	}
	return out
}

// ArchiveResponse lists the archived memories.
type ArchiveResponse struct {
	Memories []memory.MemoryJSON `json:"memories"`
}

// Archived lists the memories cleanup moved to the archive.
func (l *Local) Archived(ctx context.Context) (ArchiveResponse, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return ArchiveResponse{}, err
	}
	ms, err := l.store.Archived(ctx)
	if err != nil {
		return ArchiveResponse{}, err
	}
	return ArchiveResponse{Memories: memoriesJSON(ms)}, nil
}

// RestoreRequest is the body of POST /v1/admin/archive/restore: the IDs to
// restore, or All.
type RestoreRequest struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// restoreStep is how many archived memories a restore moves between
// progress reports and cancellation points.
const restoreStep = 256

// RestoreArchived brings archived memories back (progress in memories).
// It checks req first (CheckRestore): nothing is restored when an ID is not
// in the archive.
func (l *Local) RestoreArchived(ctx context.Context, req RestoreRequest, prog Progress) (RestoredResponse, error) {
	if err := l.CheckRestore(ctx, req); err != nil {
		return RestoredResponse{}, err
	}
	ids := req.IDs
	if req.All {
		ms, err := l.store.Archived(ctx)
		if err != nil {
			return RestoredResponse{}, err
		}
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
	}
	prog.set(0, int64(len(ids)))
	restored := 0
	for i := 0; i < len(ids); i += restoreStep {
		if err := ctx.Err(); err != nil {
			return RestoredResponse{}, fmt.Errorf("restored %d memories, then: %w", restored, err)
		}
		n, err := l.store.Restore(ctx, ids[i:min(i+restoreStep, len(ids))]...)
		restored += n
		if err != nil {
			return RestoredResponse{}, fmt.Errorf("restored %d memories, then: %w", restored, err)
		}
		prog.set(int64(min(i+restoreStep, len(ids))), int64(len(ids)))
	}
	return RestoredResponse{Restored: restored}, nil
}

// CheckRestore refuses a restore that names neither IDs nor all, or both
// (ErrBadRequest), or an ID that is not in the archive (a
// *memory.NotFoundError naming every such ID), so a server refuses it
// before it starts a job.
func (l *Local) CheckRestore(ctx context.Context, req RestoreRequest) error {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return err
	}
	if len(req.IDs) > 0 == req.All {
		return badRequest("give ids, or all=true")
	}
	if slices.Contains(req.IDs, "") {
		return badRequest("empty memory ID")
	}
	if req.All {
		return nil
	}
	ms, err := l.store.Archived(ctx)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range distinct(req.IDs) {
		if !slices.ContainsFunc(ms, func(m memory.Memory) bool { return m.ID == id }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return &memory.NotFoundError{Kind: "archived memory", IDs: missing}
	}
	return nil
}

// ReembedRequest is the body of POST /v1/admin/reembed.
type ReembedRequest struct {
	To string `json:"to"`
}

// ReembedResult is the result of a reembed.
type ReembedResult struct {
	Fingerprint string `json:"fingerprint"`
	To          string `json:"to"`
}

// Embedder builds the embedder a reembed to req.To migrates to; Reembed
// takes it, so a server refuses a bad spec before it starts a job.
func (l *Local) Embedder(req ReembedRequest) (memory.Embedder, error) {
	if l.opts.NewEmbedder == nil {
		return nil, fmt.Errorf("%w: this server cannot build embedders (no NewEmbedder)", ErrForbidden)
	}
	if req.To == "" {
		return nil, badRequest("reembed needs \"to\" (lexical, onnx:DIR or ollama:MODEL)")
	}
	e, err := l.opts.NewEmbedder(req.To)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return e, nil
}

// Reembed migrates every memory to target, built by Embedder from req (progress in memories).
func (l *Local) Reembed(ctx context.Context, req ReembedRequest, target memory.Embedder, prog Progress) (ReembedResult, error) {
	if err := CallerFrom(ctx).Check(RightAdmin); err != nil {
		return ReembedResult{}, err
	}
	err := l.store.Reembed(ctx, target, func(done, total int) { prog.set(int64(done), int64(total)) })
	if err != nil {
		return ReembedResult{}, err
	}
	if f := l.opts.Reembedded; f != nil {
		f(req.To)
	}
	return ReembedResult{Fingerprint: target.Fingerprint(), To: req.To}, nil
}

// ExportRequest is the body of POST /v1/export.
type ExportRequest struct {
	Filter  *memory.Filter `json:"filter,omitempty"`
	Vectors bool           `json:"vectors,omitempty"`
}

// Export writes the memories req selects within the caller's scope to w in the export format
// (docs/format/export.md; read right) and returns how many it wrote. An error after the first
// line leaves w cut short.
func (l *Local) Export(ctx context.Context, w io.Writer, req ExportRequest) (int, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return 0, err
	}
	f, ok, err := l.scoped(ctx, c, req.Filter)
	if err != nil {
		return 0, err
	}
	if !ok { // the key sees no session: the header alone
		f = memory.And(memory.Exists(memory.FieldCreated), memory.Not(memory.Exists(memory.FieldCreated)))
	}
	if err := f.Validate(); err != nil {
		return 0, err
	}
	return l.store.Export(ctx, w, memory.ExportOptions{Filter: f, Vectors: req.Vectors})
}
