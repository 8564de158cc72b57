package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/engramdb/engram/memory"
)

// checkpointKey is where Copy records its progress in the destination KV.
const checkpointKey = "migrate/checkpoint"

// DefaultBatch is how many memories one write carries.
const DefaultBatch = 256

// Options tune Copy.
type Options struct {
	// Batch is how many memories each write carries (DefaultBatch).
	Batch int
	// Progress, if set, is called after each batch with the memories copied
	// so far (resumed ones included) and the total.
	Progress func(done, total int)
}

// Report says what Copy did.
type Report struct {
	Memories int // memories in the source collection
	Copied   int // memories written by this call
	Resumed  int // memories skipped because an earlier run copied them
	KVKeys   int // KV entries copied
	Archived int // archived memories in the source (copied with their archive collections)
	Records  int // conversations and tasks in the source (copied with the records collection)
	Versions int // earlier versions in the source's history (copied with its collection)
}

// Copy copies the collection spec names, the memory layer's archive
// collections, its records collection (conversations and tasks), its history
// collection and the whole KV namespace, from src to dst. It resumes an
// interrupted earlier Copy with the same spec.
func Copy(ctx context.Context, src, dst memory.Backend, spec memory.CollectionSpec, opts Options) (Report, error) {
	var rep Report
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if err := copyCollection(ctx, src, dst, spec, opts, checkpointKey, &rep); err != nil {
		return rep, err
	}
	// The cold archive: one collection per model, listed in the KV namespace copied below.
	archives, err := memory.ArchiveSpecs(ctx, src)
	if err != nil {
		return rep, fmt.Errorf("migrate: listing archives: %w", err)
	}
	for _, a := range archives {
		var arep Report
		if err := copyCollection(ctx, src, dst, a, Options{Batch: opts.Batch}, checkpointKey+"/"+a.Name, &arep); err != nil {
			return rep, err
		}
		rep.Archived += arep.Memories
	}
	// Short-term conversations and working-memory tasks.
	if rs, ok, err := memory.RecordsSpec(ctx, src); err != nil {
		return rep, fmt.Errorf("migrate: records: %w", err)
	} else if ok {
		var rrep Report
		if err := copyCollection(ctx, src, dst, rs, Options{Batch: opts.Batch}, checkpointKey+"/"+rs.Name, &rrep); err != nil {
			return rep, err
		}
		rep.Records = rrep.Memories
	}
	// The history of earlier versions, a collection of its own.
	if hs, ok, err := memory.HistorySpec(ctx, src); err != nil {
		return rep, fmt.Errorf("migrate: opening the history: %w", err)
	} else if ok {
		var hrep Report
		if err := copyCollection(ctx, src, dst, hs, Options{Batch: opts.Batch}, checkpointKey+"/"+hs.Name, &hrep); err != nil {
			return rep, err
		}
		rep.Versions = hrep.Memories
	}
	err = src.KV().Scan("", func(key string, value []byte) error {
		if key == checkpointKey || strings.HasPrefix(key, checkpointKey+"/") {
			return nil
		}
		rep.KVKeys++
		return dst.KV().Put(key, value)
	})
	if err != nil {
		return rep, fmt.Errorf("migrate: copying KV: %w", err)
	}
	return rep, nil
}

// copyCollection copies one collection, resuming from the checkpoint under key.
func copyCollection(ctx context.Context, src, dst memory.Backend, spec memory.CollectionSpec, opts Options, key string, rep *Report) error {
	from, err := src.Collection(ctx, spec.Name)
	if err != nil {
		return fmt.Errorf("migrate: source: %w", err)
	}
	if from.Spec() != spec {
		return fmt.Errorf("migrate: source collection is %+v, not %+v", from.Spec(), spec)
	}
	to, err := dst.Collection(ctx, spec.Name)
	switch {
	case errors.Is(err, memory.ErrNoCollection):
		if to, err = dst.CreateCollection(ctx, spec); err != nil {
			return fmt.Errorf("migrate: destination: %w", err)
		}
	case err != nil:
		return fmt.Errorf("migrate: destination: %w", err)
	case to.Spec() != spec: // resuming: it must be the collection an earlier run made
		return fmt.Errorf("migrate: destination already has collection %q as %+v", spec.Name, to.Spec())
	}
	// IDs only in memory: the vectors are read batch by batch.
	var ids []string
	if err := from.Scan(ctx, nil, func(m memory.Memory) error { ids = append(ids, m.ID); return nil }); err != nil {
		return fmt.Errorf("migrate: listing source: %w", err)
	}
	slices.Sort(ids)
	rep.Memories = len(ids)

	last, resumed, err := dst.KV().Get(key)
	if err != nil {
		return err
	}
	start := 0
	if resumed {
		start, _ = slices.BinarySearch(ids, string(last))
		if start < len(ids) && ids[start] == string(last) {
			start++
		}
		rep.Resumed = start
	}
	for i := start; i < len(ids); i += opts.Batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := ids[i:min(i+opts.Batch, len(ids))]
		ms, err := from.Get(ctx, batch)
		if err != nil {
			return fmt.Errorf("migrate: reading source: %w", err)
		}
		if err := to.Upsert(ctx, ms); err != nil {
			return fmt.Errorf("migrate: writing destination: %w", err)
		}
		if err := dst.KV().Put(key, []byte(batch[len(batch)-1])); err != nil {
			return err
		}
		rep.Copied += len(ms)
		if opts.Progress != nil {
			opts.Progress(i+len(batch), len(ids))
		}
	}
	if opts.Progress != nil && start >= len(ids) {
		opts.Progress(len(ids), len(ids))
	}
	return nil
}

// Verification is what Verify found.
type Verification struct {
	SourceCount, DestCount int
	Missing                []string // source IDs absent from the destination (at most 100 listed)
	Queries                int      // sample queries run
	Compared               int      // queries whose source top result is not tied
	Agree                  int      // of those, queries whose top result is the same memory
	Disagreements          []string // the queries that disagree (at most 20)
}

// OK reports whether counts match, nothing is missing and every compared
// recall agrees.
func (v Verification) OK() bool {
	return v.SourceCount == v.DestCount && len(v.Missing) == 0 && v.Agree == v.Compared
}

// Verify compares the store a Copy wrote with its source: counts, every ID,
// and the top result of Recall for each query (in every session, without
// touching access statistics). A query whose source top two results have the
// same score is not compared.
func Verify(ctx context.Context, src, dst *memory.Store, queries []string, ro memory.RecallOptions) (Verification, error) {
	var v Verification
	var err error
	if v.SourceCount, err = src.Count(ctx, nil); err != nil {
		return v, err
	}
	if v.DestCount, err = dst.Count(ctx, nil); err != nil {
		return v, err
	}
	var ids []string
	if err := src.Scan(ctx, nil, func(m memory.Memory) error { ids = append(ids, m.ID); return nil }); err != nil {
		return v, err
	}
	for i := 0; i < len(ids); i += 1000 {
		batch := ids[i:min(i+1000, len(ids))]
		got, err := dst.Get(ctx, batch...)
		if err != nil {
			return v, err
		}
		have := make(map[string]bool, len(got))
		for _, m := range got {
			have[m.ID] = true
		}
		for _, id := range batch {
			if !have[id] && len(v.Missing) < 100 {
				v.Missing = append(v.Missing, id)
			}
		}
	}
	ro.AllSessions, ro.NoTouch = true, true
	if ro.K < 2 {
		ro.K = 2
	}
	for _, q := range queries {
		v.Queries++
		a, err := src.Recall(ctx, q, ro)
		if err != nil {
			return v, err
		}
		b, err := dst.Recall(ctx, q, ro)
		if err != nil {
			return v, err
		}
		if len(a) == 0 || (len(a) > 1 && a[0].Score.Final == a[1].Score.Final) {
			continue
		}
		v.Compared++
		if len(b) > 0 && b[0].ID == a[0].ID {
			v.Agree++
		} else if len(v.Disagreements) < 20 {
			v.Disagreements = append(v.Disagreements, q)
		}
	}
	return v, nil
}

// ErrNotVerified is returned by callers that require a clean Verification.
var ErrNotVerified = errors.New("migrate: verification failed")
