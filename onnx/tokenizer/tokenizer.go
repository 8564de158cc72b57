package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"unicode/utf8"
)

// DefaultMaxLength is the truncation length (special tokens included) used
// when tokenizer.json configures none: BGE-M3's context length.
const DefaultMaxLength = 8192

// ErrInvalidUTF8 is returned (wrapped) for text that is not valid UTF-8;
// HF tokenizers only accept valid strings, so no replacement is attempted.
var ErrInvalidUTF8 = errors.New("tokenizer: text is not valid UTF-8")

// Encoding is the tokenized form of one text, special tokens included.
// All slices have the same length.
type Encoding struct {
	IDs           []int32
	AttentionMask []int32 // 1 for real tokens, 0 for padding
	TypeIDs       []int32
	Tokens        []string // the piece of each token
	Truncated     bool     // tokens were dropped to fit the maximum length
}

func (e *Encoding) add(id int32, tok string) {
	e.IDs = append(e.IDs, id)
	e.Tokens = append(e.Tokens, tok)
}

// PadStrategy says how EncodeBatch pads.
type PadStrategy int

const (
	PadNone    PadStrategy = iota // no padding
	PadLongest                    // to the longest encoding of the batch
	PadFixed                      // to Padding.Length
)

// Padding configures padding. The pad id is the tokenizer's PadID.
type Padding struct {
	Strategy PadStrategy
	Length   int   // PadFixed: the target length
	Multiple int   // if > 0, round the target length up to a multiple of it
	Left     bool  // pad on the left instead of the right
	TypeID   int32 // type id of padding tokens
}

type truncation struct {
	maxLength int
	left      bool
}

// Tokenizer encodes text as a HuggingFace tokenizer.json of the
// XLM-RoBERTa / sentencepiece-Unigram kind does. It is immutable and safe for
// concurrent use; With* methods return modified copies.
type Tokenizer struct {
	model      *unigram
	norm       normalizer   // nil: none
	pre        preTokenizer // nil: none
	post       *postProcessor
	added      *addedMatcher // tokens matched in the raw text
	addedNorm  *addedMatcher // tokens matched in normalized text
	addedByTok []addedToken
	trunc      *truncation // nil: no truncation
	pad        *Padding    // nil: no padding
	padID      int32
	padToken   string
	vocabSize  int
	pool       *sync.Pool
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return t, nil
}

// Parse builds a tokenizer from the contents of a tokenizer.json. Components
// it does not implement give an *UnsupportedError.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: not a tokenizer.json: %w", err)
	}
	t := &Tokenizer{pool: newPool()}
	var err error
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, err
	}
	if !isNull(f.Normalizer) {
		if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
			return nil, err
		}
	}
	if !isNull(f.PreTokenizer) {
		if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
			return nil, err
		}
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if err := t.setAddedTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	tr, ok, err := parseTruncation(f.Truncation)
	if err != nil {
		return nil, err
	}
	if !ok {
		tr = truncation{maxLength: DefaultMaxLength}
	}
	if tr.maxLength < t.post.added() {
		return nil, fmt.Errorf("tokenizer: truncation max_length %d leaves no room for %d special tokens", tr.maxLength, t.post.added())
	}
	t.trunc = &tr
	pad, padID, err := parsePadding(f.Padding)
	if err != nil {
		return nil, err
	}
	t.pad = pad
	t.padToken = "<pad>"
	t.padID = 0
	if id, ok := t.TokenID(t.padToken); ok {
		t.padID = id
	}
	if padID >= 0 {
		t.padID = int32(padID)
		t.padToken = t.tokenString(t.padID)
	}
	// Every id Encode can produce must be below VocabSize.
	for _, sp := range append(slices.Clip(t.post.prefix), t.post.suffix...) {
		t.vocabSize = max(t.vocabSize, int(sp.id)+1)
	}
	t.vocabSize = max(t.vocabSize, int(t.padID)+1)
	return t, nil
}

func newPool() *sync.Pool {
	return &sync.Pool{New: func() any { return new(scratch) }}
}

// scratch is per-call working memory.
type scratch struct {
	segs, subs []segment
	in, out    []piece
	lat        lattice
}

func (t *Tokenizer) setAddedTokens(list []addedTokenJSON) error {
	var raw, norm []addedToken
	maxID := len(t.model.pieces) - 1
	for i, a := range list {
		if a.Content == "" {
			return fmt.Errorf("tokenizer: added token %d is empty", i)
		}
		tok := addedToken{content: a.Content, singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip,
			normalized: a.Normalized, special: a.Special}
		// As in HF, the model's id wins over the one written in the file.
		if id, ok := t.model.ids[a.Content]; ok {
			tok.id = id
		} else if a.ID != nil && *a.ID >= 0 && *a.ID <= 1<<31-1 {
			tok.id = int32(*a.ID)
		} else {
			return fmt.Errorf("tokenizer: added token %q has no valid id", a.Content)
		}
		maxID = max(maxID, int(tok.id))
		t.addedByTok = append(t.addedByTok, tok)
		if !a.Normalized {
			raw = append(raw, tok)
			continue
		}
		// HF matches normalized tokens by their normalized form.
		if t.norm != nil {
			tok.content = t.norm.normalize(tok.content)
		}
		if tok.content != "" {
			norm = append(norm, tok)
		}
	}
	t.added, t.addedNorm = newAddedMatcher(raw), newAddedMatcher(norm)
	t.vocabSize = maxID + 1
	return nil
}

// TokenID returns the id of a vocabulary piece or added token.
func (t *Tokenizer) TokenID(token string) (int32, bool) {
	for _, a := range t.addedByTok {
		if a.content == token {
			return a.id, true
		}
	}
	id, ok := t.model.ids[token]
	return id, ok
}

func (t *Tokenizer) tokenString(id int32) string {
	for _, a := range t.addedByTok {
		if a.id == id {
			return a.content
		}
	}
	if int(id) < len(t.model.pieces) {
		return t.model.pieces[id]
	}
	return ""
}

// VocabSize is one more than the largest id Encode can produce (vocabulary,
// added tokens, post-processor tokens, padding): the number of rows an
// embedding table for this tokenizer needs.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// PadID is the id used for padding: the file's padding pad_id, else the id of
// "<pad>", else 0.
func (t *Tokenizer) PadID() int32 { return t.padID }

// MaxLength is the truncation length including special tokens, 0 when
// truncation is off.
func (t *Tokenizer) MaxLength() int {
	if t.trunc == nil {
		return 0
	}
	return t.trunc.maxLength
}

// SpecialTokens is the number of special tokens Encode adds around a text.
func (t *Tokenizer) SpecialTokens() int { return t.post.added() }

// WithTruncation returns a copy that truncates encodings (special tokens
// included) to maxLength tokens, keeping the start of the text.
func (t *Tokenizer) WithTruncation(maxLength int) (*Tokenizer, error) {
	if maxLength < t.post.added() || maxLength < 1 {
		return nil, fmt.Errorf("tokenizer: truncation length %d leaves no room for text with %d special tokens", maxLength, t.post.added())
	}
	c := t.clone()
	c.trunc = &truncation{maxLength: maxLength}
	return c, nil
}

// WithoutTruncation returns a copy that never truncates.
func (t *Tokenizer) WithoutTruncation() *Tokenizer {
	c := t.clone()
	c.trunc = nil
	return c
}

// WithPadding returns a copy that pads as p says (PadNone turns padding off).
func (t *Tokenizer) WithPadding(p Padding) (*Tokenizer, error) {
	switch {
	case p.Strategy < PadNone || p.Strategy > PadFixed:
		return nil, fmt.Errorf("tokenizer: unknown padding strategy %d", p.Strategy)
	case p.Strategy == PadFixed && p.Length <= 0:
		return nil, fmt.Errorf("tokenizer: fixed padding needs a positive length, got %d", p.Length)
	case p.Multiple < 0:
		return nil, fmt.Errorf("tokenizer: padding multiple %d is negative", p.Multiple)
	}
	c := t.clone()
	c.pad = nil
	if p.Strategy != PadNone {
		c.pad = &p
	}
	return c, nil
}

func (t *Tokenizer) clone() *Tokenizer {
	c := *t
	c.pool = newPool()
	return &c
}

// Encode tokenizes one text, adds the special tokens and applies truncation
// and fixed padding. Text must be valid UTF-8.
func (t *Tokenizer) Encode(text string) (Encoding, error) {
	e, err := t.encode(text)
	if err != nil {
		return Encoding{}, err
	}
	if t.pad != nil {
		t.padTo(&e, t.padLength(len(e.IDs)))
	}
	return e, nil
}

// EncodeBatch encodes texts in order and pads them per the padding config
// (to the longest of the batch, or to a fixed length). An error names the
// index of the offending text.
func (t *Tokenizer) EncodeBatch(texts []string) ([]Encoding, error) {
	out := make([]Encoding, len(texts))
	longest := 0
	for i, s := range texts {
		e, err := t.encode(s)
		if err != nil {
			return nil, fmt.Errorf("text %d: %w", i, err)
		}
		out[i] = e
		longest = max(longest, len(e.IDs))
	}
	if t.pad != nil {
		n := t.padLength(longest)
		for i := range out {
			t.padTo(&out[i], n)
		}
	}
	return out, nil
}

func (t *Tokenizer) encode(text string) (Encoding, error) {
	if !utf8.ValidString(text) {
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				return Encoding{}, fmt.Errorf("%w: bad byte 0x%02x at offset %d", ErrInvalidUTF8, text[i], i)
			}
			i += n
		}
	}
	st := t.pool.Get().(*scratch)
	defer t.release(st)
	// With right truncation, tokens past the limit are dropped anyway: stop
	// once one more than fits has been produced (that one says "truncated").
	// Pre-tokenized pieces are encoded independently, so the kept tokens are
	// the same as with a full pass.
	stop := -1
	if t.trunc != nil && !t.trunc.left {
		stop = t.trunc.maxLength - t.post.added() + 1
	}
	// The encoding is built in place: prefix special tokens, model tokens,
	// truncation, suffix special tokens.
	est := len(text)/3 + t.post.added() + 1
	if stop >= 0 {
		est = min(est, stop+t.post.added())
	}
	e := Encoding{IDs: make([]int32, 0, est), Tokens: make([]string, 0, est)}
	for _, sp := range t.post.prefix {
		e.add(sp.id, sp.token)
	}
	np := len(e.IDs)
	if stop >= 0 {
		stop += np
	}
	if err := t.tokenize(&e, text, st, stop); err != nil {
		return Encoding{}, err
	}
	t.postProcess(&e, np)
	return e, nil
}

// maxPooledLattice bounds the scratch memory kept between calls (16 bytes
// per byte of the longest piece seen).
const maxPooledLattice = 1 << 16

func (t *Tokenizer) release(st *scratch) {
	if cap(st.lat.score) > maxPooledLattice {
		st.lat = lattice{}
	}
	t.pool.Put(st)
}

// tokenize appends the model tokens of text to e: added tokens are split off
// the raw text, the rest is normalized, split off normalized added tokens,
// pre-tokenized and run through the model — HF's order. With stop >= 0 it
// returns early once e holds at least stop tokens.
func (t *Tokenizer) tokenize(e *Encoding, text string, st *scratch, stop int) error {
	st.segs = t.added.split(st.segs[:0], text, 0)
	for _, seg := range st.segs {
		if stop >= 0 && len(e.IDs) >= stop {
			return nil
		}
		if seg.tok >= 0 {
			e.add(t.added.tokens[seg.tok].id, seg.text)
			continue
		}
		norm := seg.text
		if t.norm != nil {
			norm = t.norm.normalize(norm)
		}
		st.subs = t.addedNorm.split(st.subs[:0], norm, 0)
		for _, sub := range st.subs {
			if sub.tok >= 0 {
				e.add(t.addedNorm.tokens[sub.tok].id, sub.text)
				continue
			}
			st.in = append(st.in[:0], piece{sub.text, seg.start == 0 && sub.start == 0})
			pieces := st.in
			if t.pre != nil {
				st.out = t.pre.preTokenize(st.out[:0], st.in)
				pieces = st.out
			}
			for _, p := range pieces {
				if stop >= 0 && len(e.IDs) >= stop {
					return nil
				}
				if err := t.model.encode(e, p.text, &st.lat); err != nil {
					return fmt.Errorf("tokenizer: %w", err)
				}
			}
		}
	}
	return nil
}

// postProcess truncates the model tokens (e's tokens after the np prefix
// special tokens) to leave room for all special tokens, then appends the
// suffix special tokens and fills the type ids and attention mask (HF:
// truncate, then post-process).
func (t *Tokenizer) postProcess(e *Encoding, np int) {
	if n := len(e.IDs) - np; t.trunc != nil {
		if limit := t.trunc.maxLength - t.post.added(); n > limit {
			e.Truncated = true
			if t.trunc.left {
				copy(e.IDs[np:], e.IDs[np+n-limit:])
				copy(e.Tokens[np:], e.Tokens[np+n-limit:])
			}
			e.IDs, e.Tokens = e.IDs[:np+limit], e.Tokens[:np+limit]
		}
	}
	end := len(e.IDs)
	for _, sp := range t.post.suffix {
		e.add(sp.id, sp.token)
	}
	n := len(e.IDs)
	e.TypeIDs = make([]int32, n)
	e.AttentionMask = make([]int32, n)
	for i := range n {
		e.AttentionMask[i] = 1
		switch {
		case i < np:
			e.TypeIDs[i] = t.post.prefix[i].typeID
		case i < end:
			e.TypeIDs[i] = t.post.seqType
		default:
			e.TypeIDs[i] = t.post.suffix[i-end].typeID
		}
	}
}

// padLength is HF's target length: fixed or the batch's longest, rounded up
// to the multiple.
func (t *Tokenizer) padLength(longest int) int {
	n := longest
	if t.pad.Strategy == PadFixed {
		n = t.pad.Length
	}
	if m := t.pad.Multiple; m > 0 && n%m != 0 {
		n += m - n%m
	}
	return n
}

func (t *Tokenizer) padTo(e *Encoding, n int) {
	k := n - len(e.IDs)
	if k <= 0 {
		return
	}
	grow := func(s []int32, v int32) []int32 {
		out := make([]int32, 0, n)
		if !t.pad.Left {
			out = append(out, s...)
		}
		for range k {
			out = append(out, v)
		}
		if t.pad.Left {
			out = append(out, s...)
		}
		return out
	}
	e.IDs = grow(e.IDs, t.padID)
	e.TypeIDs = grow(e.TypeIDs, t.pad.TypeID)
	e.AttentionMask = grow(e.AttentionMask, 0)
	toks := make([]string, 0, n)
	if !t.pad.Left {
		toks = append(toks, e.Tokens...)
	}
	for range k {
		toks = append(toks, t.padToken)
	}
	if t.pad.Left {
		toks = append(toks, e.Tokens...)
	}
	e.Tokens = toks
}
