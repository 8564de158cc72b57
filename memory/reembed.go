package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// reembedState is kept in the KV namespace while a Reembed runs, so a crashed one resumes.
type reembedState struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Fingerprint string `json:"fingerprint"`
	Dim         int    `json:"dim"`
}

// ReembedBatch is how many memories Reembed embeds and writes at a time.
const ReembedBatch = 256

// Reembed rebuilds every memory's vector with e from the stored text, into a new collection,
// then switches the store to it and to e in one durable step and drops the old collection.
// Memories keep their IDs, metadata, timestamps and access statistics. progress, if not nil, is
// called after each batch with the memories done so far and the total.
//
// Writes wait while Reembed runs; recalls continue against the old collection until the switch
// (access statistics they record reach the new collection, except for recalls that land in the
// moment between copying the last batch and the switch).
// If the process dies part way, calling Reembed again with an embedder of the same fingerprint
// resumes (memories already rebuilt are not embedded again); once the switch is durable, the
// next New finishes the cleanup and expects the new embedder.
func (s *Store) Reembed(ctx context.Context, e Embedder, progress func(done, total int)) error {
	if e == nil || e.Dim() < 1 {
		return errorf(ErrInvalidInput, "Reembed needs an embedder with a positive dimension")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	from, _, err := s.current()
	if err != nil {
		return err
	}
	var st reembedState
	ok, err := s.getJSON(keyReembed, &st)
	if err != nil {
		return err
	}
	if !ok || st.Fingerprint != e.Fingerprint() || st.Dim != e.Dim() || st.From != from.Spec().Name {
		if ok { // an abandoned migration to another model: throw its work away
			if err := s.b.DropCollection(ctx, st.To); err != nil {
				return err
			}
		}
		st = reembedState{From: from.Spec().Name, To: nextCollectionName(from.Spec().Name, s.opts.Collection),
			Fingerprint: e.Fingerprint(), Dim: e.Dim()}
		if err := s.putJSON(keyReembed, st); err != nil {
			return err
		}
	}
	to, err := s.b.Collection(ctx, st.To)
	if errors.Is(err, ErrNoCollection) {
		to, err = s.b.CreateCollection(ctx, CollectionSpec{Name: st.To, Dim: e.Dim(), Fingerprint: e.Fingerprint()})
	}
	if err != nil {
		return fmt.Errorf("memory: reembed target %q: %w", st.To, err)
	}
	if err := checkModel(to.Spec(), e); err != nil {
		return err
	}
	total, err := from.Count(ctx, nil)
	if err != nil {
		return err
	}
	done := 0
	var batch []Memory
	flush := func() error {
		n, err := s.reembedBatch(ctx, e, to, batch)
		done += n
		batch = batch[:0]
		if err == nil && progress != nil {
			progress(done, total)
		}
		return err
	}
	// Collect first: Scan's callback must not call into a collection.
	var all []Memory
	if err := from.Scan(ctx, nil, func(m Memory) error { m.Vector = nil; all = append(all, m); return nil }); err != nil {
		return err
	}
	for _, m := range all {
		batch = append(batch, m)
		if len(batch) == ReembedBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// The switch: one durable write. Before it the old collection is live, after it the new one.
	if err := s.kv.Put(keyActive, []byte(st.To)); err != nil {
		return err
	}
	s.mu.Lock()
	s.coll, s.emb = to, e
	s.mu.Unlock()
	return s.finishReembed(ctx, st.To)
}

// reembedBatch embeds and writes the memories of batch not yet present in to.
func (s *Store) reembedBatch(ctx context.Context, e Embedder, to Collection, batch []Memory) (int, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	ids := make([]string, len(batch))
	for i := range batch {
		ids[i] = batch[i].ID
	}
	have, err := to.Get(ctx, ids)
	if err != nil {
		return 0, err
	}
	done := map[string]Memory{}
	for _, m := range have {
		done[m.ID] = m
	}
	var todo, stale []Memory
	var texts []string
	for _, m := range batch {
		d, ok := done[m.ID]
		switch {
		case !ok:
			todo = append(todo, m)
			texts = append(texts, m.Text)
		case d.AccessCount != m.AccessCount || !d.LastAccess.Equal(m.LastAccess):
			// Recalled since this memory was copied (before a crash): carry the statistics over.
			m.Vector = d.Vector
			stale = append(stale, m)
		}
	}
	if len(todo) > 0 {
		vecs, err := s.embed(ctx, e, texts)
		if err != nil {
			return 0, err
		}
		for i := range todo {
			todo[i].Vector = vecs[i]
		}
	}
	if up := append(todo, stale...); len(up) > 0 {
		if err := upsert(ctx, to, up); err != nil {
			return 0, err
		}
	}
	return len(batch), nil
}

// finishReembed completes a migration whose switch is durable: it drops the old collection
// and forgets the state. It does nothing when no migration to live is pending.
func (s *Store) finishReembed(ctx context.Context, live string) error {
	var st reembedState
	ok, err := s.getJSON(keyReembed, &st)
	if err != nil || !ok || st.To != live {
		return err
	}
	if err := s.b.DropCollection(ctx, st.From); err != nil {
		return fmt.Errorf("memory: dropping the pre-reembed collection %q: %w", st.From, err)
	}
	return s.kv.Delete(keyReembed)
}

// nextCollectionName returns base.N+1 for a collection named base or base.N.
func nextCollectionName(cur, base string) string {
	n := 0
	if len(cur) > len(base)+1 && cur[:len(base)+1] == base+"." {
		_ = json.Unmarshal([]byte(cur[len(base)+1:]), &n)
	}
	return fmt.Sprintf("%s.%d", base, n+1)
}
