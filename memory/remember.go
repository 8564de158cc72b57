package memory

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/memory/chunk"
	"github.com/engramdb/engram/quant"
)

// RememberOptions describe the memories one Remember call writes.
type RememberOptions struct {
	// Source says where the text came from ("chat", "doc:handbook.pdf"); Recall can weight by it.
	Source string
	// Tags are free-form labels (at most MaxTags of at most MaxTagBytes each), filterable by FieldTag.
	Tags []string
	// Importance in [0, 1]; 0 means DefaultImportance.
	Importance float64
	// Time is when the memory was formed; the zero time means the store's clock.
	Time time.Time
	// Metadata are the caller's own attributes (see CheckMetadata), filterable by MetaField; a
	// merge adds them to the memory's, replacing values of the same keys.
	Metadata map[string]any

	// Context is text around the memory that keyword search should match it by at a third of
	// the weight of its own words (Memory.Context), given to every chunk: for a conversation
	// turn, its neighbouring turns. Text and Context together must fit Options.MaxTextBytes.
	Context string

	// NoSupersede skips supersede detection against the session's other memories (see
	// supersede.go): the chunks mark no older memory as superseded. Near-duplicates still merge.
	// A chunk with a Context (a conversation turn) never supersedes: it records what was said.
	NoSupersede bool
}

// RememberResult reports what one Remember call did, one entry per chunk in text order.
type RememberResult struct {
	// IDs of the memories written; a merged chunk carries the ID of the memory it updated.
	IDs []string
	// Merged[i] is true when chunk i was a near-duplicate of an existing memory of the same
	// session, whose text, vector, time and importance it replaced instead of inserting.
	Merged []bool
	// Superseded[i] is true when chunk i changed a fact: it merged into a memory whose fact it
	// contradicts (a negation, another number or date: the memory now says what chunk i says,
	// and the version it replaced is in its History as ChangeSupersede), or it superseded
	// another memory of the session (Supersedes[i]).
	Superseded []bool
	// Supersedes[i] is the ID of the older memory of the session that chunk i superseded as a
	// memory of its own (supersede.go): that memory stays, marked with SupersededBy = IDs[i], and
	// its previous version is in its History as ChangeSupersede. Empty when chunk i superseded no
	// other memory.
	Supersedes []string
	// Older[i] is true when chunk i was a near-duplicate written with an earlier Time than the
	// memory's last update: the memory keeps its newer text, and chunk i is in its History as
	// ChangeOlder.
	Older []bool
}

// Remember splits text into chunks, embeds them in batches and writes them to session as one
// durable batch (several, each durable, when chunks and vectors exceed 3 MiB: texts near
// MaxTextBytes with vectors of 1024+ dimensions). A ctx that ends before the write begins
// (while embedding) fails the call with nothing written; once the write has begun the call
// finishes it, so that a timeout never leaves some chunks stored and unreported. If one of
// several batches fails, the error is a *PartialWriteError naming the IDs the batches before it
// stored. A chunk whose cosine similarity to an existing memory of the same session (or to
// an earlier chunk of the same call) reaches Options.DedupThreshold updates that memory instead
// of adding one. Empty or whitespace-only text, invalid UTF-8, text over Options.MaxTextBytes and
// invalid options are rejected with ErrInvalidInput, and nothing is written.
func (s *Store) Remember(ctx context.Context, session, text string, opts RememberOptions) (RememberResult, error) {
	var res RememberResult
	if err := s.checkRemember(session, text, &opts); err != nil {
		return res, err
	}
	chunks := s.split(text)
	_, emb, err := s.current()
	if err != nil {
		return res, err
	}
	// Embed outside the write lock (it is the slow part) ...
	vecs, err := s.embed(ctx, emb, chunks)
	if err != nil {
		return res, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb2, err := s.current()
	if err != nil {
		return res, err
	}
	if emb2 != emb { // ... unless a Reembed switched models meanwhile.
		if vecs, err = s.embed(ctx, emb2, chunks); err != nil {
			return res, err
		}
	}
	at := opts.Time
	if at.IsZero() {
		at = s.opts.Clock()
	}
	var batch []Memory // what will be upserted, one entry per distinct ID
	var versions []pendingVersion
	sessionFilter := Eq(FieldSession, session)
	for i, text := range chunks {
		m, merged, err := s.nearDuplicate(ctx, coll, sessionFilter, vecs[i], batch)
		if err != nil {
			return RememberResult{}, err
		}
		var superseded, older bool
		if merged {
			switch conflict(m.Text, text) {
			case conflictName: // another person, place or thing: a fact of its own
				merged = false
			case conflictValue:
				superseded = true
			}
		}
		if merged {
			prev := m.clone()
			switch {
			case at.Before(m.Updated): // an older write never overwrites newer text
				older, superseded = true, false
				stale := prev
				stale.Text, stale.Updated, stale.Importance = text, at, opts.Importance
				if at.Before(stale.Created) {
					stale.Created = at
				}
				versions = append(versions, pendingVersion{old: stale, change: ChangeOlder, at: s.opts.Clock()})
				if at.Before(m.Created) {
					m.Created = at
				}
			default:
				change := ChangeMerge
				if superseded {
					change = ChangeSupersede
				}
				versions = append(versions, pendingVersion{old: prev, change: change, at: at})
				m.Text, m.Context, m.Vector, m.Updated, m.Importance = text, opts.Context, vecs[i], at, opts.Importance
				if opts.Source != "" {
					m.Source = opts.Source
				}
				for _, t := range opts.Tags {
					if !slices.Contains(m.Tags, t) {
						m.Tags = append(m.Tags, t)
					}
				}
				if len(opts.Metadata) > 0 {
					md := maps.Clone(m.Metadata)
					if md == nil {
						md = map[string]any{}
					}
					maps.Copy(md, opts.Metadata)
					if len(md) > MaxMetadataKeys {
						return RememberResult{}, errorf(ErrInvalidInput, "merging into %q would give %d metadata keys, at most %d", m.ID, len(md), MaxMetadataKeys)
					}
					m.Metadata = md
				}
			}
		} else {
			m = &Memory{ID: newID(), Session: session, Text: text, Context: opts.Context, Source: opts.Source, Tags: slices.Clone(opts.Tags),
				Importance: opts.Importance, Metadata: maps.Clone(opts.Metadata), Created: at, Updated: at, Vector: vecs[i]}
		}
		put := func(m *Memory) {
			if j := slices.IndexFunc(batch, func(b Memory) bool { return b.ID == m.ID }); j >= 0 {
				batch[j] = *m
			} else {
				batch = append(batch, *m)
			}
		}
		put(m)
		stale := ""
		if !older && !opts.NoSupersede && opts.Context == "" && !s.opts.NoSupersede {
			o, err := s.findSuperseded(ctx, coll, session, text, vecs[i], at, m.ID)
			if err != nil {
				return RememberResult{}, err
			}
			if o != nil {
				if j := slices.IndexFunc(batch, func(b Memory) bool { return b.ID == o.ID }); j >= 0 {
					c := batch[j].clone()
					o = &c
				}
				versions = append(versions, pendingVersion{old: o.clone(), change: ChangeSupersede, at: at, by: m.ID})
				o.SupersededBy, o.SupersededAt = m.ID, at
				put(o)
				stale, superseded = o.ID, true
			}
		}
		res.Supersedes = append(res.Supersedes, stale)
		res.IDs = append(res.IDs, m.ID)
		res.Merged = append(res.Merged, merged)
		res.Superseded = append(res.Superseded, superseded)
		res.Older = append(res.Older, older)
	}
	// The write starts here. A caller that gave up before it (a timeout during embedding) gets
	// its error and nothing is written. From here on the call finishes what it started whatever
	// ctx does: the batches of a long text are each durable on their own, so stopping between
	// them would leave some chunks stored and none reported. A batch that fails reports the
	// chunks the batches before it stored (PartialWriteError).
	if err := ctx.Err(); err != nil {
		return RememberResult{}, err
	}
	ctx = context.WithoutCancel(ctx)
	// Only versions of stored memories are history; one replaced within this call never was.
	stored := map[string]bool{}
	var ids []string
	for _, v := range versions {
		ids = append(ids, v.old.ID)
	}
	if len(ids) > 0 {
		live, err := coll.Get(ctx, ids)
		if err != nil {
			return RememberResult{}, err
		}
		for _, m := range live {
			stored[m.ID] = true
		}
	}
	versions = slices.DeleteFunc(versions, func(v pendingVersion) bool { return !stored[v.old.ID] })
	if err := s.writeHistory(ctx, versions); err != nil {
		return RememberResult{}, err
	}
	if n, err := upsertCount(ctx, coll, batch); err != nil {
		err = fmt.Errorf("memory: writing %d memories: %w", len(batch), err)
		if n == 0 {
			return RememberResult{}, err
		}
		written := make(map[string]bool, n)
		for _, m := range batch[:n] {
			written[m.ID] = true
		}
		pe := &PartialWriteError{Chunks: len(chunks), Err: err}
		for _, id := range res.IDs {
			if written[id] && !slices.Contains(pe.Stored, id) {
				pe.Stored = append(pe.Stored, id)
			}
		}
		return RememberResult{}, pe
	}
	return res, nil
}

func (s *Store) checkRemember(session, text string, opts *RememberOptions) error {
	if err := checkSession(session); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(text) == "":
		return errorf(ErrInvalidInput, "empty or whitespace-only text")
	case len(text) > s.opts.MaxTextBytes:
		return errorf(ErrInvalidInput, "text of %d bytes exceeds the limit of %d", len(text), s.opts.MaxTextBytes)
	case !utf8.ValidString(text):
		return errorf(ErrInvalidInput, "text is not valid UTF-8")
	case math.IsNaN(opts.Importance) || opts.Importance < 0 || opts.Importance > 1:
		return errorf(ErrInvalidInput, "importance %v outside [0, 1]", opts.Importance)
	case len(opts.Tags) > MaxTags:
		return errorf(ErrInvalidInput, "%d tags, at most %d", len(opts.Tags), MaxTags)
	case len(opts.Source) > MaxTagBytes || !utf8.ValidString(opts.Source):
		return errorf(ErrInvalidInput, "source must be valid UTF-8 of at most %d bytes", MaxTagBytes)
	}
	for _, t := range opts.Tags {
		if t == "" || len(t) > MaxTagBytes || !utf8.ValidString(t) {
			return errorf(ErrInvalidInput, "tag %q: must be non-empty valid UTF-8 of at most %d bytes", t, MaxTagBytes)
		}
	}
	if err := checkTimes("remember time", opts.Time); err != nil {
		return err
	}
	md, err := NormalizeMetadata(opts.Metadata)
	if err != nil {
		return err
	}
	opts.Metadata = md
	if err := s.checkContext(text, opts.Context); err != nil {
		return err
	}
	if opts.Importance == 0 {
		opts.Importance = DefaultImportance
	}
	return nil
}

// checkContext validates a memory's text and context: the backend keeps them as one text split
// at keyword.ContextSeparator, so neither may contain it.
func (s *Store) checkContext(text, context string) error {
	switch {
	case strings.Contains(text, keyword.ContextSeparator):
		return errorf(ErrInvalidInput, "text contains U+001E, which separates a memory's text from its context")
	case context == "":
		return nil
	case !utf8.ValidString(context) || strings.Contains(context, keyword.ContextSeparator):
		return errorf(ErrInvalidInput, "context must be valid UTF-8 without U+001E")
	case len(text)+len(keyword.ContextSeparator)+len(context) > s.opts.MaxTextBytes:
		return errorf(ErrInvalidInput, "text and context of %d bytes exceed the limit of %d", len(text)+len(context)+1, s.opts.MaxTextBytes)
	}
	return nil
}

// split chunks text (package chunk), or keeps it whole when chunking is off. The options were
// validated by New, so Split cannot fail.
func (s *Store) split(text string) []string {
	if s.opts.ChunkChars < 0 {
		return []string{strings.TrimSpace(text)}
	}
	chunks, err := chunk.Split(text, chunk.Options{MaxChars: s.opts.ChunkChars})
	if err != nil || len(chunks) == 0 { // neither happens for valid options and non-blank text
		return []string{strings.TrimSpace(text)}
	}
	return chunks
}

// embed embeds texts in batches of Options.EmbedBatch and L2-normalizes the vectors, so that
// stored vectors compare by dot product. It rejects vectors of the wrong dimension or with NaN.
func (s *Store) embed(ctx context.Context, emb Embedder, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, 0, len(texts))
	for len(texts) > 0 {
		n := min(len(texts), s.opts.EmbedBatch)
		vs, err := emb.Embed(ctx, texts[:n])
		if err != nil {
			return nil, fmt.Errorf("memory: embedding: %w", err)
		}
		if len(vs) != n {
			return nil, fmt.Errorf("memory: embedder returned %d vectors for %d texts", len(vs), n)
		}
		for _, v := range vs {
			if err := normalize(v, emb.Dim()); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		texts = texts[n:]
	}
	return out, nil
}

func normalize(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("memory: embedder returned a vector of %d dimensions, expected %d", len(v), dim)
	}
	n := math.Sqrt(float64(quant.DotFloat32(v, v)))
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return fmt.Errorf("memory: embedder returned a vector with NaN or Inf")
	}
	if n == 0 {
		return nil // an all-zero vector (text without features) stays zero: similar to nothing
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return nil
}

// nearDuplicate finds the memory a new chunk vector should merge into: the most similar of the
// session's stored memories and of the chunks already in this batch, if it reaches the threshold.
// It returns a copy to modify.
func (s *Store) nearDuplicate(ctx context.Context, coll Collection, session *Filter, v []float32, batch []Memory) (*Memory, bool, error) {
	if s.opts.DedupThreshold < 0 {
		return nil, false, nil
	}
	bestScore, best := math.Inf(-1), -1
	for i := range batch {
		if sc := float64(quant.DotFloat32(v, batch[i].Vector)); sc > bestScore {
			bestScore, best = sc, i
		}
	}
	hits, err := coll.SearchVector(ctx, v, 1, session)
	if err != nil {
		return nil, false, fmt.Errorf("memory: near-duplicate search: %w", err)
	}
	if len(hits) == 1 && hits[0].Score > bestScore {
		if hits[0].Score < s.opts.DedupThreshold {
			return nil, false, nil
		}
		// The batch may already hold a newer version of this memory.
		if j := slices.IndexFunc(batch, func(b Memory) bool { return b.ID == hits[0].Memory.ID }); j >= 0 {
			m := batch[j].clone()
			return &m, true, nil
		}
		ms, err := coll.Get(ctx, []string{hits[0].Memory.ID})
		if err != nil || len(ms) != 1 {
			return nil, false, fmt.Errorf("memory: reading near-duplicate %q: %v", hits[0].Memory.ID, err)
		}
		return &ms[0], true, nil
	}
	if best >= 0 && bestScore >= s.opts.DedupThreshold {
		m := batch[best].clone()
		return &m, true, nil
	}
	return nil, false, nil
}

// checkTimes refuses times the store cannot hold exactly (engine.MinTime ..
// engine.MaxTime, about 1677-09-21 .. 2262-04-11; the zero time means unset) with
// ErrInvalidInput, instead of letting them wrap.
func checkTimes(what string, ts ...time.Time) error {
	for _, t := range ts {
		if err := engine.CheckTime(t); err != nil {
			return errorf(ErrInvalidInput, "%s %s is outside %s .. %s, the times a store holds exactly", what,
				t.UTC().Format(time.RFC3339Nano), engine.MinTime.Format(time.RFC3339Nano), engine.MaxTime.Format(time.RFC3339Nano))
		}
	}
	return nil
}
