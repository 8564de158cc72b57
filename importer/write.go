package importer

import (
	"context"
	"fmt"

	"github.com/engramdb/engram/memory"
)

// Target is the store an import writes into: a memory.Store here (StoreTarget), or a served
// one through its API (memctl's).
type Target interface {
	// Existing returns which of ids the store holds.
	Existing(ctx context.Context, ids []string) (map[string]bool, error)
	// Import writes the memories as they are (memory.Store.Import: IDs and times kept, texts
	// embedded where the vector is missing or of another dimension).
	Import(ctx context.Context, ms []memory.Memory) error
}

// StoreTarget is a Target over a store this process opened.
type StoreTarget struct{ Store *memory.Store }

// Existing implements Target.
func (t StoreTarget) Existing(ctx context.Context, ids []string) (map[string]bool, error) {
	ms, err := t.Store.Get(ctx, ids...)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(ms))
	for _, m := range ms {
		have[m.ID] = true
	}
	return have, nil
}

// Import implements Target.
func (t StoreTarget) Import(ctx context.Context, ms []memory.Memory) error {
	return t.Store.Import(ctx, ms)
}

// DefaultBatch is how many memories one Import call carries.
const DefaultBatch = 256

// WriteOptions tune Write.
type WriteOptions struct {
	// Batch is how many memories one Target.Import call carries (DefaultBatch).
	Batch int
	// Progress, if set, is called after every batch with the memories done (written or
	// found already there) and the total.
	Progress func(done, total int)
}

// Write imports the memories the store does not hold yet, in batches, counting into r.Written
// and r.Existing. It stops at the first error (ctx's included) with the batches before it
// written; running it again with the same memories writes only what is still missing.
func Write(ctx context.Context, t Target, ms []memory.Memory, o WriteOptions, r *Report) error {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	for i := 0; i < len(ms); i += o.Batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := ms[i:min(i+o.Batch, len(ms))]
		ids := make([]string, len(batch))
		for j := range batch {
			ids[j] = batch[j].ID
		}
		have, err := t.Existing(ctx, ids)
		if err != nil {
			return fmt.Errorf("import: looking up memories %d-%d: %w", i+1, i+len(batch), err)
		}
		todo := make([]memory.Memory, 0, len(batch))
		for _, m := range batch {
			if !have[m.ID] {
				todo = append(todo, m)
			}
		}
		if len(todo) > 0 {
			if err := t.Import(ctx, todo); err != nil {
				return fmt.Errorf("import: writing memories %d-%d: %w (the ones before were written; run the import again to resume)",
					i+1, i+len(batch), err)
			}
		}
		r.Written += len(todo)
		r.Existing += len(batch) - len(todo)
		if o.Progress != nil {
			o.Progress(i+len(batch), len(ms))
		}
	}
	return nil
}
