package memory

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/memory/lexical"
)

// Mode selects the candidate sources of Recall.
type Mode int

// Recall modes.
const (
	ModeHybrid  Mode = iota // vector and keyword candidates, fused (default)
	ModeVector              // vector similarity only; Fused = cosine similarity clamped to [0, 1]
	ModeKeyword             // BM25 only; Fused = BM25 score / the best BM25 score among the candidates
)

// Fusion selects how hybrid recall combines the two candidate lists.
type Fusion int

// Fusion methods.
const (
	// FusionWeighted: Fused = (wv*g*cos + wk*kw) / (wv+wk), with the cosine clamped to [0, 1] and
	// kw the memory's BM25 score over the best BM25 score among the query's candidates (0 when it
	// is not a keyword candidate). g is the vector gate (RecallOptions.VectorGate, γ):
	// g = clamp((kw − γ)/(1 − γ), 0, 1), so the cosine counts only for memories keyword search
	// ranks near its best, in full for the best; γ = 0 means g = 1 (plain weighted fusion), and a
	// query with no keyword candidate has g = 1 too. The gate is what makes hybrid recall with the
	// built-in lexical embedder at least as good as BM25 alone (its vectors see the same words
	// without IDF, so alone they mostly promote memories that share frequent words); a
	// semantic embedder runs ungated. Default fusion.
	FusionWeighted Fusion = iota
	// FusionRRF: reciprocal rank fusion, Fused = (g*wv/(RRFK+rank_v) + wk/(RRFK+rank_k)) ×
	// (RRFK+1)/(wv+wk), ranks from 1, so 1 means first in both lists; a memory missing from one
	// list gets nothing from it; g is the vector gate of FusionWeighted (with the lexical
	// embedder, ungated RRF lowers locomo-dev from BM25's 0.570 to 0.45). Blind to score scales, so a weak list weighs as much as a strong
	// one, and a memory that merely ranks 30th in both lists still scores about 0.5: a MinScore
	// means little under RRF.
	FusionRRF
)

// DecayBasis selects the age that time decay is computed from.
type DecayBasis int

// Decay bases.
const (
	// DecayCreated: age since the memory's text was written (Updated, which equals Created unless
	// a near-duplicate merge or an update rewrote it) (default). Recalling a memory does not make
	// it young again: a memory is as old as what it says.
	DecayCreated DecayBasis = iota
	// DecayLastAccess: age since the memory was last recalled, or since it was last written when
	// that is later (the seed's behaviour: every recall resets the age).
	DecayLastAccess
)

// Decay configures time decay, a bounded multiplier:
//
//	Decay = Floor + (1 − Floor) × ((1 − Slow) × r(age) + Slow × 0.5^(age / SlowHalfLife))
//	r(age) = (1 − PerDay)^age_days  or  0.5^(age / HalfLife)
//
// so the factor falls from 1 (age 0) towards Floor and never below it: an old memory that
// matches the query well still outranks a fresh one that does not (with the default floor 0.5, a
// memory needs more than half the relevance of an old one to outrank it on age alone). The fast
// part (10% a day) orders the last weeks; the slow part (a fifth of the range, halving every
// year) keeps ordering memories by age after that, so that of two equally relevant memories of
// two and nine months the newer still ranks first (the fast part alone puts every memory older
// than about a month at the floor). Ages below zero count as zero.
type Decay struct {
	Off bool
	// PerDay is the fraction of the fast part lost per day, in [0, 1); 0 means
	// DefaultDecayPerDay (0.10: the fast part is multiplied by 0.9 every day).
	PerDay float64
	// HalfLife, when positive, replaces PerDay.
	HalfLife time.Duration
	// Floor is the least the factor reaches, in [0, 1]; 0 means DefaultDecayFloor, a negative
	// value means no floor (pure exponential decay, which buries old memories whatever they match).
	Floor float64
	// Slow is the share of the decaying range that fades slowly, in [0, 1]; 0 means
	// DefaultDecaySlow (0.2), negative means none (the fast part alone, the first release's decay).
	Slow float64
	// SlowHalfLife is the half-life of the slow part; 0 means DefaultDecaySlowHalfLife (365 days).
	SlowHalfLife time.Duration
	Basis        DecayBasis
}

// Limits and defaults of RecallOptions.
const (
	DefaultK                = 5
	MaxK                    = 1000
	MaxCandidates           = 10000
	DefaultRRFK             = 60
	DefaultDecayPerDay      = 0.10
	DefaultDecayFloor       = 0.5
	DefaultDecaySlow        = 0.2
	DefaultImportanceWeight = 0.5
	// DefaultDecaySlowHalfLife is the half-life of the slow part of decay.
	DefaultDecaySlowHalfLife = 365 * 24 * time.Hour
	// DefaultMinScore is the least Final score a result needs by default: below it a memory
	// shares too little with the query to be worth a place in a prompt.
	DefaultMinScore = 0.05
	// DefaultMinRelative is the least fraction of the best result's Final score a result needs
	// by default.
	DefaultMinRelative = 0.2
	// DefaultAttributeWeight is RecallOptions.AttributeWeight's default.
	DefaultAttributeWeight = 0.4
	// StalePenalty multiplies the score of a memory that a newer one changes (Score.Current).
	StalePenalty = 0.5
)

// SupersededPolicy says what Recall does with a memory that a newer memory of its session
// changes: one marked superseded when the newer one was written (Memory.SupersededBy), or one
// that conflicts with a newer result of about the same relevance (see RecallOptions).
type SupersededPolicy int

// Superseded policies.
const (
	// SupersededDemote (default): the stale memory's score is multiplied by StalePenalty
	// (Score.Current) and its successor ranks above it: a successor that the query does not
	// find by itself is added with the stale memory's relevance (Score.Fused), one that it finds
	// less relevant takes that relevance. The stale memory stays in the results, marked (Stale,
	// Newer), so that nothing it says that is still true is lost.
	SupersededDemote SupersededPolicy = iota
	// SupersededHide: as SupersededDemote, but stale memories are left out.
	SupersededHide
	// SupersededKeep: memories rank by their own scores, the first release's ranking; stale
	// ones are still marked.
	SupersededKeep
)

// RecallOptions tune one Recall. The zero value recalls at most the 5 best memories of session
// "" by hybrid search with weighted fusion (and the attribute list for first-person questions),
// decay from the last write, importance weighting, current facts first (SupersededDemote), and
// nothing under DefaultMinScore or DefaultMinRelative of the best.
type RecallOptions struct {
	// Session scopes the recall; a session with no memories gives an empty result.
	Session string
	// AllSessions searches every session; Session is then ignored.
	AllSessions bool
	// K is how many results to return (DefaultK), at most MaxK.
	K      int
	Mode   Mode
	Fusion Fusion
	// VectorWeight and KeywordWeight weigh the two lists in fusion; both 0 means the store's
	// Options.VectorWeight and KeywordWeight. Negative weights are rejected.
	VectorWeight, KeywordWeight float64
	// VectorGate is the vector gate of weighted fusion (see FusionWeighted), below 1; 0 means the
	// store's Options.VectorGate, negative means no gate.
	VectorGate float64
	// RRFK is the RRF rank constant (DefaultRRFK).
	RRFK float64
	// Candidates is how many candidates each list fetches before reranking; 0 means
	// max(10*K, 50), at most MaxCandidates.
	Candidates int
	Decay      Decay
	// SourceWeights multiply the score of memories by source; a source not listed weighs 1.
	SourceWeights map[string]float64
	// ImportanceWeight w scales scores by 1 + w*(importance-0.5); 0 means
	// DefaultImportanceWeight, negative turns importance off; at most 2.
	ImportanceWeight float64
	// MinScore drops results whose Final score is below it; 0 means DefaultMinScore (0.05),
	// negative means no floor (every candidate that shares something with the query, the first
	// release's behaviour).
	MinScore float64
	// MinRelative drops results whose Final score is below this fraction of the best result's,
	// in [0, 1]; 0 means DefaultMinRelative (0.2), negative means none. Together with MinScore it
	// keeps memories that merely share a word with the query from padding K and the prompt.
	MinRelative float64
	// AsOf, when set, answers from what the store held at that time: memories created after it
	// are left out, a memory superseded after it is current (not Stale), a memory whose text was
	// replaced in place after it (a near-duplicate merge, Update) is returned with the text it had
	// then, read from its History (ranked by its current text and vector), and decay counts ages
	// up to AsOf. The zero time means now.
	AsOf time.Time
	// Superseded says what happens to memories that newer ones change (SupersededDemote by
	// default).
	Superseded SupersededPolicy
	// AttributeWeight w weighs the attribute list: when the query asks about a kind of personal
	// fact that attributeLexicon names (where one lives, work, a relationship, diet, drinks,
	// medication ...), a third keyword search with that attribute's words finds the memories
	// that state it, and Fused becomes Fused + w × A × (1 − Fused), A being the memory's score
	// in that list over the list's best (Score.Attribute): "Where do I work now?" finds "Signed
	// the Copperleaf offer today! I start September 8 as their design lead", which shares no word
	// with it. 0 means DefaultAttributeWeight, negative turns the list off; at most 1. Only for a
	// query without Turns, in hybrid and keyword mode.
	AttributeWeight float64
	// Filter further restricts the candidates (the session filter is always added).
	Filter *Filter
	// NoTouch leaves access statistics alone (previews, benchmarks).
	NoTouch bool
	// Turns is the recent conversation, oldest first (at most MaxTurns), for a chat loop that
	// recalls for where the conversation is rather than for one question: the query may then be
	// empty. See conversationQuery for how the query and the turns are read together.
	Turns []Turn
}

// Score explains a result: the raw list scores (0 when the memory was not in that list), the
// keyword score normalized as fusion uses it, the fused relevance, the decay, weight and
// currency factors, and Final = min(1, Fused × Decay × Weight × Current).
//
// Fused, Decay and Final are in [0, 1] in every mode and fusion (see Mode, Fusion and Decay), so
// RecallOptions.MinScore is a fraction of a perfect, fresh match; Weight is 1 for a memory of
// default importance and unweighted source, and above 1 it can lift Final to the cap (results
// are still ordered by the uncapped product).
type Score struct {
	Vector  float64 `json:"vector"`
	Keyword float64 `json:"keyword"`
	// KeywordNorm is Keyword on Fused's [0, 1] scale, as fusion uses it: the BM25 score over
	// the best BM25 score among the query's candidates (raw BM25 is unbounded).
	KeywordNorm float64 `json:"keyword_norm"`
	// Attribute is the memory's score in the attribute list over that list's best (see
	// RecallOptions.AttributeWeight), 0 when the query asks about no attribute.
	Attribute float64 `json:"attribute,omitempty"`
	Fused     float64 `json:"fused"`
	Decay     float64 `json:"decay"`
	// Weight is the product of the source weight and the importance factor.
	Weight float64 `json:"weight"`
	// Current is 1 for a current memory and StalePenalty for one a newer memory changes (see
	// SupersededPolicy; 1 under SupersededKeep).
	Current float64 `json:"current"`
	Final   float64 `json:"final"`
}

// Result is one recalled memory (without its vector) and why it came back. Its LastAccess and
// AccessCount are the values before this recall.
type Result struct {
	Memory
	Score Score
	// Stale is true when a newer memory of the session changes this one's fact: it was marked
	// superseded when the newer one was written (Memory.SupersededBy, as of RecallOptions.AsOf),
	// or the recall found the two in conflict (another value, a negation, a cancellation of the
	// same thing) at about the same relevance. Newer is that memory's ID.
	Stale bool
	Newer string
	// Replaces lists the older memories whose facts this one changes, among this recall's
	// candidates (their results, when returned, are Stale with Newer = this ID).
	Replaces []string
}

type recallPlan struct {
	RecallOptions
	filter *Filter
	now    time.Time
	// attrs are the attributes (sketch.go) the query asks about: a third candidate list finds
	// the memories that state them.
	attrs uint32
	// vecQuery is what the query embedding is computed from, kwQuery what BM25 scores: the
	// query itself, or its composition with the conversation (conversationQuery).
	vecQuery, kwQuery string
}

func (s *Store) plan(query string, o RecallOptions) (recallPlan, error) {
	p := recallPlan{RecallOptions: o, now: s.opts.Clock()}
	if len(query) > s.opts.MaxTextBytes || !utf8.ValidString(query) {
		return p, errorf(ErrInvalidInput, "query must be valid UTF-8 of at most %d bytes", s.opts.MaxTextBytes)
	}
	if len(o.Turns) > MaxTurns {
		return p, errorf(ErrInvalidInput, "%d turns, at most %d", len(o.Turns), MaxTurns)
	}
	size := len(query)
	for i, t := range o.Turns {
		if size += len(t.Text); size > s.opts.MaxTextBytes || !utf8.ValidString(t.Text) {
			return p, errorf(ErrInvalidInput, "turn %d: the query and turns must be valid UTF-8 of at most %d bytes together", i, s.opts.MaxTextBytes)
		}
	}
	turns := o.Turns
	if len(turns) == 0 {
		turns = dialogueLines(query)
		if turns != nil {
			query = ""
		}
	}
	p.vecQuery, p.kwQuery = conversationQuery(query, turns)
	if strings.TrimSpace(p.kwQuery) == "" {
		return p, errorf(ErrInvalidInput, "empty or whitespace-only query (and no turn with text)")
	}
	if len(turns) == 0 {
		p.kwQuery = withoutCurrentWords(p.kwQuery)
		if o.AttributeWeight >= 0 && aboutTheUser(query) {
			p.attrs, _ = attributesOf(strings.ToLower(p.kwQuery))
		}
	}
	if err := checkSession(o.Session); err != nil {
		return p, err
	}
	if p.K == 0 {
		p.K = DefaultK
	}
	if p.Candidates == 0 {
		p.Candidates = max(10*p.K, 50)
	}
	if p.VectorWeight == 0 && p.KeywordWeight == 0 {
		p.VectorWeight, p.KeywordWeight = s.opts.VectorWeight, s.opts.KeywordWeight
	}
	if p.RRFK == 0 {
		p.RRFK = DefaultRRFK
	}
	if p.Decay.PerDay == 0 {
		p.Decay.PerDay = DefaultDecayPerDay
	}
	switch {
	case p.Decay.Floor == 0:
		p.Decay.Floor = DefaultDecayFloor
	case p.Decay.Floor < 0 && !math.IsInf(p.Decay.Floor, 0):
		p.Decay.Floor = 0
	}
	switch {
	case p.Decay.Slow == 0:
		p.Decay.Slow = DefaultDecaySlow
	case p.Decay.Slow < 0 && !math.IsInf(p.Decay.Slow, 0):
		p.Decay.Slow = 0
	}
	if p.Decay.SlowHalfLife == 0 {
		p.Decay.SlowHalfLife = DefaultDecaySlowHalfLife
	}
	if p.ImportanceWeight == 0 {
		p.ImportanceWeight = DefaultImportanceWeight
	}
	switch {
	case p.AttributeWeight == 0:
		p.AttributeWeight = DefaultAttributeWeight
	case p.AttributeWeight < 0 && !math.IsInf(p.AttributeWeight, 0):
		p.AttributeWeight = 0
	}
	switch {
	case p.MinScore == 0:
		p.MinScore = DefaultMinScore
	case p.MinScore < 0:
		p.MinScore = math.Inf(-1)
	}
	switch {
	case p.MinRelative == 0:
		p.MinRelative = DefaultMinRelative
	case p.MinRelative < 0 && !math.IsInf(p.MinRelative, 0):
		p.MinRelative = 0
	}
	if !o.AsOf.IsZero() {
		if err := checkTimes("AsOf", o.AsOf); err != nil {
			return p, err
		}
		p.now = o.AsOf
	}
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case p.K < 1 || p.K > MaxK:
		return p, errorf(ErrInvalidInput, "K = %d, must be in [1, %d]", o.K, MaxK)
	case p.Candidates < p.K || p.Candidates > MaxCandidates:
		return p, errorf(ErrInvalidInput, "Candidates = %d, must be in [K, %d]", o.Candidates, MaxCandidates)
	case p.Mode < ModeHybrid || p.Mode > ModeKeyword:
		return p, errorf(ErrInvalidInput, "unknown mode %d", p.Mode)
	case p.Fusion < FusionWeighted || p.Fusion > FusionRRF:
		return p, errorf(ErrInvalidInput, "unknown fusion %d", p.Fusion)
	case bad(p.VectorWeight) || bad(p.KeywordWeight) || p.VectorWeight < 0 || p.KeywordWeight < 0:
		return p, errorf(ErrInvalidInput, "fusion weights %v, %v must be finite and non-negative", o.VectorWeight, o.KeywordWeight)
	case bad(p.VectorGate) || p.VectorGate >= 1:
		return p, errorf(ErrInvalidInput, "vector gate %v must be below 1", o.VectorGate)
	case bad(p.RRFK) || p.RRFK <= 0:
		return p, errorf(ErrInvalidInput, "RRFK %v must be positive", o.RRFK)
	case bad(p.Decay.PerDay) || p.Decay.PerDay < 0 || p.Decay.PerDay >= 1:
		return p, errorf(ErrInvalidInput, "decay per day %v must be in [0, 1)", o.Decay.PerDay)
	case bad(p.Decay.Floor) || p.Decay.Floor > 1:
		return p, errorf(ErrInvalidInput, "decay floor %v must be at most 1 (negative: no floor)", o.Decay.Floor)
	case p.Decay.HalfLife < 0:
		return p, errorf(ErrInvalidInput, "negative decay half-life %v", p.Decay.HalfLife)
	case p.Decay.Basis < DecayCreated || p.Decay.Basis > DecayLastAccess:
		return p, errorf(ErrInvalidInput, "unknown decay basis %d", p.Decay.Basis)
	case bad(p.ImportanceWeight) || p.ImportanceWeight > 2:
		return p, errorf(ErrInvalidInput, "importance weight %v must be at most 2", o.ImportanceWeight)
	case math.IsNaN(p.MinScore) || math.IsInf(o.MinScore, 0):
		return p, errorf(ErrInvalidInput, "MinScore %v", o.MinScore)
	case bad(p.AttributeWeight) || p.AttributeWeight > 1:
		return p, errorf(ErrInvalidInput, "attribute weight %v must be at most 1 (negative: none)", o.AttributeWeight)
	case bad(p.MinRelative) || p.MinRelative > 1:
		return p, errorf(ErrInvalidInput, "MinRelative %v must be at most 1 (negative: none)", o.MinRelative)
	case bad(p.Decay.Slow) || p.Decay.Slow > 1:
		return p, errorf(ErrInvalidInput, "decay slow share %v must be at most 1 (negative: none)", o.Decay.Slow)
	case p.Decay.SlowHalfLife < 0:
		return p, errorf(ErrInvalidInput, "negative decay slow half-life %v", o.Decay.SlowHalfLife)
	case p.Superseded < SupersededDemote || p.Superseded > SupersededKeep:
		return p, errorf(ErrInvalidInput, "unknown superseded policy %d", p.Superseded)
	}
	for src, w := range p.SourceWeights {
		if bad(w) || w < 0 {
			return p, errorf(ErrInvalidInput, "source weight %v for %q must be finite and non-negative", w, src)
		}
	}
	if err := o.Filter.Validate(); err != nil {
		return p, err
	}
	p.filter = o.Filter
	if !o.AllSessions {
		p.filter = Eq(FieldSession, o.Session)
		if o.Filter != nil {
			p.filter = And(p.filter, o.Filter)
		}
	}
	if !o.AsOf.IsZero() {
		p.filter = AllOf(p.filter, TimeRange(FieldCreated, time.Time{}, o.AsOf))
	}
	return p, nil
}

// Recall returns the memories most relevant to query, best first: candidates from vector and/or
// keyword search (session-scoped unless AllSessions; a candidate with a cosine or BM25 score of
// zero or less shares nothing with the query and is dropped from its list, so a memory matching
// neither list never comes back), fused, multiplied by time decay and
// source/importance weights, cut to K. Unless NoTouch, the returned memories' access counts and
// last access times are updated durably in one batch, best effort: when that write fails (a full
// disk) the recall still answers, and the failure is counted (TouchFailures) and logged once per
// burst. Invalid options give ErrInvalidInput.
func (s *Store) Recall(ctx context.Context, query string, opts RecallOptions) ([]Result, error) {
	return s.recall(ctx, query, nil, opts)
}

// RecallWithVector is Recall with the query's embedding computed by the caller (for instance
// cached, or to measure recall without the embedder). vec must have the embedder's dimension;
// it is normalized on a copy.
func (s *Store) RecallWithVector(ctx context.Context, query string, vec []float32, opts RecallOptions) ([]Result, error) {
	if vec == nil {
		return nil, errorf(ErrInvalidInput, "nil query vector")
	}
	return s.recall(ctx, query, slices.Clone(vec), opts)
}

// vectorSide returns recall's vector candidates (none in ModeKeyword),
// embedding the query when vec is nil.
func (s *Store) vectorSide(ctx context.Context, search func(context.Context, []float32, int, *Filter) ([]Hit, error), emb Embedder, vec []float32, p *recallPlan) ([]Hit, error) {
	if p.Mode == ModeKeyword {
		return nil, nil
	}
	if vec == nil {
		var err error
		if vec, err = s.embedQuery(ctx, emb, p.vecQuery); err != nil {
			return nil, err
		}
	} else if err := normalize(vec, emb.Dim()); err != nil {
		return nil, errorf(ErrInvalidInput, "query vector: %v", err)
	}
	hits, err := search(ctx, vec, p.Candidates, p.filter)
	if err != nil {
		return nil, fmt.Errorf("memory: vector search: %w", err)
	}
	return hits, nil
}

type candidate struct {
	hit          Hit
	vec, kw      float64
	attr         float64 // score in the attribute list
	vRank, kRank int     // 1-based; 0 = not in that list
}

func (s *Store) recall(ctx context.Context, query string, vec []float32, opts RecallOptions) ([]Result, error) {
	p, err := s.plan(query, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	coll, emb, err := s.current()
	if err != nil {
		return nil, err
	}
	p.VectorGate = s.vectorGate(p.VectorGate, emb)
	// Candidates may come without their text (CandidateSearcher); the results get it below.
	searchVector, searchText := coll.SearchVector, coll.SearchText
	cs, lean := coll.(CandidateSearcher)
	if lean {
		searchVector, searchText = cs.SearchVectorCandidates, cs.SearchTextCandidates
	}
	byID := map[string]*candidate{}
	get := func(h Hit) *candidate {
		c := byID[h.Memory.ID]
		if c == nil {
			c = &candidate{hit: h}
			byID[h.Memory.ID] = c
		}
		return c
	}
	// The keyword side runs beside the vector side (embedding included) when
	// a second core is free: a hybrid recall then waits for the slower of the
	// two, not their sum. Results are merged in the same order either way.
	var (
		kwHits, attrHits []Hit
		kwErr, attrErr   error
	)
	textSide := func() {
		if p.Mode == ModeVector {
			return
		}
		if kwHits, kwErr = searchText(ctx, p.kwQuery, p.Candidates, p.filter); kwErr != nil {
			return
		}
		if p.attrs != 0 && p.AttributeWeight > 0 {
			attrHits, attrErr = searchText(ctx, attributeQuery(p.attrs), p.Candidates, p.filter)
		}
	}
	textDone := make(chan struct{})
	if p.Mode == ModeHybrid && runtime.GOMAXPROCS(0) > 1 {
		go func() {
			defer close(textDone)
			textSide()
		}()
	} else {
		textSide()
		close(textDone)
	}
	vecHits, err := s.vectorSide(ctx, searchVector, emb, vec, &p)
	<-textDone
	if err != nil {
		return nil, err
	}
	for i, h := range vecHits {
		if h.Score <= 0 {
			break // sorted: the rest share nothing with the query either
		}
		c := get(h)
		c.vec, c.vRank = h.Score, i+1
	}
	if kwErr != nil {
		return nil, fmt.Errorf("memory: keyword search: %w", kwErr)
	}
	if attrErr != nil {
		return nil, fmt.Errorf("memory: attribute search: %w", attrErr)
	}
	var maxKW float64
	for i, h := range kwHits {
		if h.Score <= 0 {
			break
		}
		c := get(h)
		c.kw, c.kRank = h.Score, i+1
		maxKW = max(maxKW, h.Score)
	}
	var maxAttr float64
	for _, h := range attrHits {
		if h.Score <= 0 {
			break
		}
		c := get(h)
		c.attr = h.Score
		maxAttr = max(maxAttr, h.Score)
	}
	all := make([]ranked, 0, len(byID))
	for _, c := range byID {
		sc := Score{Vector: c.vec, Keyword: c.kw, KeywordNorm: normKW(c.kw, maxKW), Fused: p.fuse(c, maxKW)}
		if c.attr > 0 {
			sc.Attribute = c.attr / maxAttr
			sc.Fused += p.AttributeWeight * sc.Attribute * (1 - sc.Fused)
		}
		r := ranked{Result: Result{Memory: c.hit.Memory, Score: sc}, raw: max(0, min(1, c.vec))}
		if c.vRank > 0 {
			r.lists++
		}
		if c.kRank > 0 {
			r.lists++
			r.raw += c.kw / maxKW
		}
		p.score(&r)
		all = append(all, r)
	}
	if all, err = s.currentFirst(ctx, coll, &p, all); err != nil {
		return nil, err
	}
	sortRanked(all)
	floor := p.MinScore
	if len(all) > 0 {
		floor = max(floor, p.MinRelative*all[0].Score.Final)
	}
	results := make([]Result, 0, min(p.K, len(all)))
	for i := 0; i < len(all) && len(results) < p.K; i++ {
		if all[i].Score.Final >= floor {
			results = append(results, all[i].Result)
		}
	}
	if lean && len(results) > 0 {
		if results, err = fillTexts(ctx, coll, results); err != nil {
			return nil, err
		}
		for i := range results {
			results[i].Context = "" // as lean candidates come (currentFirst may have read it)
		}
	}
	if !p.AsOf.IsZero() {
		if err := s.asOfTexts(ctx, results, p.AsOf); err != nil {
			return nil, err
		}
	}
	if !p.NoTouch && len(results) > 0 {
		ids := make([]string, len(results))
		for i := range results {
			ids[i] = results[i].ID
		}
		s.touch.record(s.opts.Logger, coll.Touch(ctx, ids, p.now))
	}
	return results, nil
}

// touchStats counts the recalls whose access statistics could not be recorded. Those are best
// effort: a recall has its answer before it records the access, and a full disk (or any other
// write failure) must not turn a read into an error. A burst of failures is logged once, when
// it starts, and once more when recording works again.
type touchStats struct {
	failures atomic.Int64
	mu       sync.Mutex
	burst    int64 // failures since the last success; 0 outside a burst
}

func (t *touchStats) record(log *slog.Logger, err error) {
	if err == nil {
		if t.failures.Load() == 0 {
			return // the common case: never failed, no lock
		}
		t.mu.Lock()
		n := t.burst
		t.burst = 0
		t.mu.Unlock()
		if n > 0 {
			log.Info("memory: recording recall access statistics works again", "failed_recalls", n)
		}
		return
	}
	t.failures.Add(1)
	t.mu.Lock()
	t.burst++
	first := t.burst == 1
	t.mu.Unlock()
	if first {
		log.Warn("memory: recording recall access statistics failed; recalls still answer, the access counts of "+
			"the failed ones are lost (logged once until it works again)", "err", err)
	}
}

// TouchFailures returns how many recalls since the Store was made could not record their access
// statistics (access count, last access). Those recalls answered anyway.
func (s *Store) TouchFailures() int64 { return s.touch.failures.Load() }

// fillTexts reads the texts of results that came from a CandidateSearcher. A memory forgotten
// since the search is dropped.
func fillTexts(ctx context.Context, coll Collection, results []Result) ([]Result, error) {
	ids := make([]string, len(results))
	for i := range results {
		ids[i] = results[i].ID
	}
	ms, err := getLight(ctx, coll, ids)
	if err != nil {
		return nil, fmt.Errorf("memory: reading recalled memories: %w", err)
	}
	text := make(map[string]string, len(ms))
	for _, m := range ms {
		text[m.ID] = m.Text
	}
	out := results[:0]
	for _, r := range results {
		if r.Text == "" {
			t, ok := text[r.ID]
			if !ok {
				continue
			}
			r.Text = t
		}
		out = append(out, r)
	}
	return out, nil
}

// currentWords are words that ask for the present state of a fact ("How much is my rent
// now?", 我现在住在哪里): they say nothing about which memory answers, and match memories that
// mention the present ("my sessions are now Wednesdays"), so keyword search leaves them out.
var (
	currentWordsRE = regexp.MustCompile(`(?i)\b(?:now|these days|nowadays|at the moment|at present|presently|still|anymore|any more|any longer)\b`)
	currentWordsZH = strings.NewReplacer("现在", " ", "目前", " ", "如今", " ", "仍然", " ", "依然", " ", "还在", "在")
)

// withoutCurrentWords removes currentWords from a query, unless nothing else would remain.
func withoutCurrentWords(q string) string {
	out := currentWordsZH.Replace(currentWordsRE.ReplaceAllString(q, " "))
	if strings.TrimFunc(out, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) == "" {
		return q
	}
	return out
}

// firstPersonRE matches the words with which a user asks about themselves.
var firstPersonRE = regexp.MustCompile(`(?i)\b(?:i|i'm|i’m|i've|i’ve|me|my|mine|myself|we|we're|we’re|us|our|ours)\b|我|咱`)

// questionRE matches a question: a question mark, or an English question word first, or a
// Chinese question word or particle.
var questionRE = regexp.MustCompile(`(?i)[?？]\s*$|^(?:what|what's|where|where's|when|when's|who|who's|whom|whose|which|why|how|do|does|did|is|are|am|was|were|can|could|should|will|would|have|has|had)\b|什么|哪|几|吗|多少|怎么|谁|是否`)

// aboutTheUser reports whether a query is a question about the user's own facts, which the
// attribute list (RecallOptions.AttributeWeight) is for: a question (not a statement, such as a
// claim searched for its evidence) in the first person ("I", "my", "me", "we", 我, 咱). Other
// questions ask about someone else or about the world, and there the list's words mean other
// things ("flat plate", "work done on"): without this rule it cost locomo-dev, cranfield and
// rgb 0.002 to 0.005 nDCG@10.
func aboutTheUser(q string) bool {
	return questionRE.MatchString(strings.TrimSpace(q)) && firstPersonRE.MatchString(q)
}

// normKW is a BM25 score over the best among the query's candidates (0 when there is none).
func normKW(kw, maxKW float64) float64 {
	if maxKW <= 0 {
		return 0
	}
	return kw / maxKW
}

// fuse returns the relevance of c in [0, 1] (see Fusion and Mode).
func (p *recallPlan) fuse(c *candidate, maxKW float64) float64 {
	cos := max(0, min(1, c.vec))
	kw := normKW(c.kw, maxKW)
	switch p.Mode {
	case ModeVector:
		return cos
	case ModeKeyword:
		return kw
	}
	// The vector gate (see FusionWeighted) scales the vector list's part under either fusion.
	gate := 1.0
	if g := p.VectorGate; g > 0 && maxKW > 0 {
		gate = max(0, min(1, (kw-g)/(1-g)))
	}
	if p.Fusion == FusionRRF {
		f := 0.0
		if c.vRank > 0 {
			f += gate * p.VectorWeight / (p.RRFK + float64(c.vRank))
		}
		if c.kRank > 0 {
			f += p.KeywordWeight / (p.RRFK + float64(c.kRank))
		}
		// Scaled by the most RRF can give (first in both lists), so 1 means exactly that.
		return f * (p.RRFK + 1) / (p.VectorWeight + p.KeywordWeight)
	}
	return (p.VectorWeight*gate*cos + p.KeywordWeight*kw) / (p.VectorWeight + p.KeywordWeight)
}

// vectorGate resolves a recall's vector gate: its own when set (negative: none), else the
// store's Options.VectorGate, else the embedder's default (LexicalVectorGate for the built-in
// lexical embedder, none for any other). The embedder is the store's current one, so a store
// re-embedded with a semantic model loses the lexical gate.
func (s *Store) vectorGate(g float64, emb Embedder) float64 {
	if g == 0 {
		g = s.opts.VectorGate
	}
	if g == 0 {
		if _, ok := emb.(*lexical.Embedder); ok {
			g = LexicalVectorGate
		}
	}
	return max(0, g)
}

// decay returns the time-decay factor of m at p.now, in [Floor, 1].
func (p *recallPlan) decay(m *Memory) float64 {
	if p.Decay.Off {
		return 1
	}
	t := m.Updated
	if p.Decay.Basis == DecayLastAccess && m.LastAccess.After(t) {
		t = m.LastAccess
	}
	age := p.now.Sub(t)
	if age <= 0 {
		return 1
	}
	var r float64
	if p.Decay.HalfLife > 0 {
		r = math.Exp2(-float64(age) / float64(p.Decay.HalfLife))
	} else {
		r = math.Pow(1-p.Decay.PerDay, age.Hours()/24)
	}
	if slow := p.Decay.Slow; slow > 0 {
		r = (1-slow)*r + slow*math.Exp2(-float64(age)/float64(p.Decay.SlowHalfLife))
	}
	return p.Decay.Floor + (1-p.Decay.Floor)*r
}

// weight returns the source weight times the importance factor of m.
func (p *recallPlan) weight(m *Memory) float64 {
	w := 1.0
	if sw, ok := p.SourceWeights[m.Source]; ok {
		w = sw
	}
	if p.ImportanceWeight > 0 {
		w *= 1 + p.ImportanceWeight*(m.Importance-0.5)
	}
	return w
}
