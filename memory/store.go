package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Embedder turns texts into vectors. Embed returns one vector of Dim() dimensions per text, in
// order. Fingerprint identifies the model (weights, tokenizer, dimension, pooling): two embedders
// with the same fingerprint must produce the same vectors. Implementations must be safe for
// concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	Fingerprint() string
}

// Defaults for Options and RecallOptions.
const (
	DefaultCollection     = "memories"
	DefaultChunkChars     = 300
	DefaultDedupThreshold = 0.85
	DefaultMaxTextBytes   = 256 << 10
	DefaultEmbedBatch     = 64
	DefaultImportance     = 0.5
	// MaxSessionBytes bounds a session name; MaxTags and MaxTagBytes bound RememberOptions.Tags.
	MaxSessionBytes = 256
	MaxTags         = 64
	MaxTagBytes     = 256
)

// Options configure a Store. The zero value means the documented defaults.
type Options struct {
	// Embedder embeds memories and queries. Open defaults to the lexical embedder; New requires one.
	Embedder Embedder
	// Collection is the base name of the collection memories live in (DefaultCollection).
	Collection string
	// ChunkChars is the most characters of one chunk (DefaultChunkChars); negative stores each
	// Remember call as one memory, unsplit.
	ChunkChars int
	// DedupThreshold is the cosine similarity at or above which a new chunk is merged into an
	// existing memory of the same session (DefaultDedupThreshold); negative disables merging.
	DedupThreshold float64
	// NoSupersede turns off supersede detection (supersede.go) for every Remember: no memory is
	// marked superseded by another (near-duplicate merges still supersede in place).
	NoSupersede bool
	// MaxTextBytes bounds the text of one Remember call (DefaultMaxTextBytes).
	MaxTextBytes int
	// EmbedBatch is how many texts go to the embedder in one call (DefaultEmbedBatch).
	EmbedBatch int
	// QueryCache is how many query embeddings Recall keeps, keyed by the embedder's fingerprint
	// and the query text (DefaultQueryCache); negative disables the cache.
	QueryCache int
	// Clock returns the current time (time.Now); tests inject a fixed one.
	Clock func() time.Time
	// ShortTermTokens is the token budget of a session's conversation buffer (DefaultShortTermTokens).
	ShortTermTokens int
	// Summarizer compresses overflowing conversation turns (an ExtractiveSummarizer by default).
	Summarizer Summarizer
	// Distiller turns conversation turns into long-term memories (Distill, RememberMessages,
	// and AddTurn as turns leave the window); RuleDistiller by default. Whatever it is, the
	// built-in RuleDistiller stands in when it fails or proposes something invalid.
	Distiller Distiller
	// NoAutoDistill keeps AddTurn from distilling the turns it compresses: they then live on
	// only in the summary, unless Distill read them while they were in the window.
	NoAutoDistill bool
	// VectorWeight and KeywordWeight are the fusion weights of a Recall that sets neither; both 0
	// means 0.5 and 0.5, except that Open with the built-in lexical embedder uses
	// LexicalVectorWeight and LexicalKeywordWeight.
	VectorWeight, KeywordWeight float64
	// VectorGate is the vector gate of weighted fusion (FusionWeighted) for a Recall that sets
	// none, below 1: 0 means the embedder's default (LexicalVectorGate with the built-in lexical
	// embedder, none with any other), negative means none.
	VectorGate float64
	// HistoryVersions is how many earlier versions of each memory History keeps
	// (DefaultHistoryVersions, at most MaxHistoryVersions); negative keeps none.
	HistoryVersions int
	// Logger receives warnings the Store handles itself (a recall whose access statistics could
	// not be recorded); nil means slog.Default().
	Logger *slog.Logger
	// ForgetRetention, when positive, makes forgetting undoable: Delete, Forget and ForgetWhere
	// move memories to the trash for this long (Unforget brings them back; Purge deletes for
	// good; see trash.go). 0 (the default) or negative: forgetting is final.
	ForgetRetention time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Collection == "" {
		o.Collection = DefaultCollection
	}
	if o.ChunkChars == 0 {
		o.ChunkChars = DefaultChunkChars
	}
	if o.DedupThreshold == 0 {
		o.DedupThreshold = DefaultDedupThreshold
	}
	if o.MaxTextBytes == 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.EmbedBatch == 0 {
		o.EmbedBatch = DefaultEmbedBatch
	}
	if o.QueryCache == 0 {
		o.QueryCache = DefaultQueryCache
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.ShortTermTokens == 0 {
		o.ShortTermTokens = DefaultShortTermTokens
	}
	if o.Summarizer == nil {
		o.Summarizer = ExtractiveSummarizer{}
	}
	if o.Distiller == nil {
		o.Distiller = RuleDistiller{}
	}
	if o.VectorWeight == 0 && o.KeywordWeight == 0 {
		o.VectorWeight, o.KeywordWeight = 0.5, 0.5
	}
	if o.HistoryVersions == 0 {
		o.HistoryVersions = DefaultHistoryVersions
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.Collection == RecordsCollection || o.Collection == historyCollection || strings.HasPrefix(o.Collection, "archive-") || strings.HasPrefix(o.Collection, trashPrefix):
		return o, errorf(ErrInvalidInput, "collection name %q is reserved for the memory layer's own data", o.Collection)
	case o.HistoryVersions > MaxHistoryVersions:
		return o, errorf(ErrInvalidInput, "HistoryVersions %d above %d", o.HistoryVersions, MaxHistoryVersions)
	case o.Embedder == nil:
		return o, errorf(ErrInvalidInput, "no embedder")
	case o.Embedder.Dim() < 1:
		return o, errorf(ErrInvalidInput, "embedder dimension %d", o.Embedder.Dim())
	case o.DedupThreshold > 1:
		return o, errorf(ErrInvalidInput, "dedup threshold %v above 1", o.DedupThreshold)
	case o.ChunkChars > 0 && o.ChunkChars < 16:
		return o, errorf(ErrInvalidInput, "ChunkChars %d below 16", o.ChunkChars)
	case !(o.VectorWeight >= 0 && o.KeywordWeight >= 0) || math.IsInf(o.VectorWeight+o.KeywordWeight, 0):
		return o, errorf(ErrInvalidInput, "fusion weights %v, %v must be finite and non-negative", o.VectorWeight, o.KeywordWeight)
	case !(o.VectorGate < 1):
		return o, errorf(ErrInvalidInput, "vector gate %v must be below 1", o.VectorGate)
	case o.MaxTextBytes < 0 || o.EmbedBatch < 0 || o.ShortTermTokens < 0:
		return o, errorf(ErrInvalidInput, "negative MaxTextBytes, EmbedBatch or ShortTermTokens")
	}
	return o, nil
}

// Store is the memory API over a Backend: long-term memories (Remember, Recall, Forget, Cleanup,
// Reembed), short-term conversation buffers and working memory. It is safe for concurrent use;
// writes to long-term memory are serialized.
type Store struct {
	b    Backend
	opts Options
	kv   KV

	// wmu serializes long-term writes: the near-duplicate check and the write it decides must not
	// interleave with another write, and Reembed must see a quiet collection.
	wmu sync.Mutex
	// mu guards coll, emb and closed.
	mu     sync.RWMutex
	coll   Collection
	emb    Embedder
	closed bool
	owned  bool // Close closes b (Open)

	stmu sync.Mutex // serializes short-term and working-memory read-modify-write cycles
	recs Collection // the records collection once opened or created (guarded by stmu)
	// taskKeys is set once the task records of the layout before per-session task IDs are
	// upgraded, which the first task operation does (upgradeTaskKeysLocked; guarded by stmu).
	taskKeys bool

	qcache *queryCache // nil when Options.QueryCache is negative

	histMu sync.Mutex
	hist   Collection // the history collection, once opened (history.go)

	touch touchStats // recall.go

	skMu     sync.Mutex
	sketches map[string]*sketch // sketch.go: Store.sketch's cache
}

// KV keys the memory layer uses; everything it keeps outside collections lives under "memory/".
const (
	keyActive  = "memory/active"  // name of the live collection
	keyReembed = "memory/reembed" // state of an unfinished Reembed
)

// New returns a Store over b. It opens the live collection (creating it on first use) and fails
// with a *ModelMismatchError when the collection was built with another embedding model. An
// unfinished Reembed that had already switched collections is completed here. The Store does not
// own b: Close leaves it open.
func New(ctx context.Context, b Backend, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{b: b, opts: opts, kv: b.KV(), emb: opts.Embedder, qcache: newQueryCache(opts.QueryCache)}
	name := opts.Collection
	if v, ok, err := s.kv.Get(keyActive); err != nil {
		return nil, fmt.Errorf("memory: reading the live collection name: %w", err)
	} else if ok {
		name = string(v)
	}
	if err := s.finishReembed(ctx, name); err != nil {
		return nil, err
	}
	c, err := b.Collection(ctx, name)
	if errors.Is(err, ErrNoCollection) {
		c, err = b.CreateCollection(ctx, CollectionSpec{Name: name, Dim: opts.Embedder.Dim(), Fingerprint: opts.Embedder.Fingerprint()})
	}
	if err != nil {
		return nil, fmt.Errorf("memory: opening collection %q: %w", name, err)
	}
	if err := checkModel(c.Spec(), opts.Embedder); err != nil {
		return nil, err
	}
	s.coll = c
	if err := s.upgradeArchive(ctx); err != nil {
		return nil, err
	}
	if err := s.upgradeRecords(ctx); err != nil {
		return nil, err
	}
	// Forgotten memories past their purge time go now, whatever this store's retention.
	s.wmu.Lock()
	err = s.expireLocked(ctx)
	s.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	return s, nil
}

func checkModel(spec CollectionSpec, e Embedder) error {
	if spec.Fingerprint != e.Fingerprint() || spec.Dim != e.Dim() {
		return &ModelMismatchError{Collection: spec.Name, Stored: spec.Fingerprint, StoredDim: spec.Dim,
			Embedder: e.Fingerprint(), Dim: e.Dim()}
	}
	return nil
}

// Close marks the store closed; later calls fail with ErrClosed. It does not close the backend
// passed to New (a Store from Open closes its engine).
func (s *Store) Close() error {
	s.wmu.Lock() // let a running write finish
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.owned {
		return s.b.Close()
	}
	return nil
}

// current returns the live collection and embedder.
func (s *Store) current() (Collection, Embedder, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	return s.coll, s.emb, nil
}

// Embedder returns the embedder the live collection was built with.
func (s *Store) Embedder() Embedder {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.emb
}

// Count returns how many memories match f (nil: all).
func (s *Store) Count(ctx context.Context, f *Filter) (int, error) {
	c, _, err := s.current()
	if err != nil {
		return 0, err
	}
	return c.Count(ctx, f)
}

// Get returns the memories with the given IDs that exist, vectors included.
func (s *Store) Get(ctx context.Context, ids ...string) ([]Memory, error) {
	c, _, err := s.current()
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, ids)
}

func checkSession(session string) error {
	if len(session) > MaxSessionBytes || !utf8.ValidString(session) {
		return errorf(ErrInvalidInput, "session must be valid UTF-8 of at most %d bytes", MaxSessionBytes)
	}
	return nil
}

// newID returns a random 128-bit identifier in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// maxUpsertBytes bounds the estimated encoded size of one Upsert call (the engine refuses
// batches over 4 MiB, engine.MaxBatchBytes); larger writes are split.
const maxUpsertBytes = 3 << 20

// upsert writes ms in as few Upsert calls as fit maxUpsertBytes each (one for any ordinary
// Remember). Each call is durable on its own.
func upsert(ctx context.Context, c Collection, ms []Memory) error {
	_, err := upsertCount(ctx, c, ms)
	return err
}

// upsertCount is upsert reporting how many of ms (a prefix) were written when it fails.
func upsertCount(ctx context.Context, c Collection, ms []Memory) (int, error) {
	written := 0
	for len(ms) > 0 {
		n, size := 0, 0
		for n < len(ms) {
			m := &ms[n]
			sz := 4*len(m.Vector) + len(m.Text) + len(m.Session) + len(m.Source) + 128
			for _, t := range m.Tags {
				sz += len(t) + 8
			}
			if n > 0 && size+sz > maxUpsertBytes {
				break
			}
			size += sz
			n++
		}
		if err := c.Upsert(ctx, ms[:n]); err != nil {
			return written, err
		}
		written += n
		ms = ms[n:]
	}
	return written, nil
}
