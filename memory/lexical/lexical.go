package lexical

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/engramdb/engram/keyword"
)

// Version identifies the feature extraction; it is part of Fingerprint and
// changes whenever the same text would embed differently.
const Version = 1

// DefaultDim is the default dimension (see doc.go for the measurement).
const DefaultDim = 1024

// Dimension bounds accepted by New.
const (
	MinDim = 16
	MaxDim = 1 << 16
)

// Options configures an Embedder. The zero value means the defaults.
type Options struct {
	// Dim is the vector dimension, MinDim..MaxDim; 0 means DefaultDim.
	Dim int
}

// ErrOptions is wrapped by New's error for invalid options.
var ErrOptions = errors.New("lexical: invalid options")

// Embedder is the built-in hashed n-gram embedder. It is stateless after
// New and safe for concurrent use.
type Embedder struct {
	dim int
	cfg features
}

// features are the extraction parameters; defaultFeatures is what New uses,
// the others exist for the measurements in the tests.
type features struct {
	minN, maxN  int     // character n-gram sizes within Latin words
	ngramWeight float64 // total weight of a word's n-grams relative to the word itself
}

var defaultFeatures = features{minN: 3, maxN: 5, ngramWeight: 1}

// New returns an Embedder with the given options.
func New(opts Options) (*Embedder, error) {
	dim := opts.Dim
	if dim == 0 {
		dim = DefaultDim
	}
	if dim < MinDim || dim > MaxDim {
		return nil, fmt.Errorf("%w: Dim %d outside [%d, %d]", ErrOptions, opts.Dim, MinDim, MaxDim)
	}
	return &Embedder{dim: dim, cfg: defaultFeatures}, nil
}

// Dim returns the vector dimension.
func (e *Embedder) Dim() int { return e.dim }

// Fingerprint identifies the embedding function: two embedders with equal
// fingerprints map every text to the same vector.
func (e *Embedder) Fingerprint() string {
	return fmt.Sprintf("lexical/v%d/analyzer=%d/dim=%d/ngram=%d-%d/w=%g/fnv1a-fmix-signed/tf=log/l2",
		Version, keyword.AnalyzerVersion, e.dim, e.cfg.minN, e.cfg.maxN, e.cfg.ngramWeight)
}

// Embed returns one L2-normalized vector per text, in order. A text without
// any token (punctuation or emoji only, only stopwords) gets a vector of its
// raw character n-grams; only a text of whitespace alone gets the zero
// vector. Embed
// checks ctx between texts and returns ctx's error, and no vectors, once it
// is done.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	counts := make(map[uint64]float64)
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.embed(t, counts)
		clear(counts)
	}
	return out, nil
}

// Feature kinds, hashed in as a first byte so that the word "abc", the
// n-gram "abc" and a CJK token never share a feature.
const (
	kindWord  = 'w'
	kindNgram = 'n'
	kindCJK   = 'c'
	kindRaw   = 'r'
)

// Raw n-gram sizes for texts without tokens (see rawFeatures).
const rawMinN, rawMaxN = 1, 3

// EmbedQuery embeds a recall query: like Embed, without the words queries drop in keyword
// search (keyword.IsQueryStopword: "what", "did", "she"...) unless nothing else is left, so that
// a question is close to the memories that answer it rather than to other questions.
func (e *Embedder) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	toks := keyword.Tokens(query)
	kept := toks[:0:0]
	for _, t := range toks {
		if !keyword.IsQueryStopword(t) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		kept = toks
	}
	return e.embedTokens(query, kept, make(map[uint64]float64)), nil
}

func (e *Embedder) embed(text string, counts map[uint64]float64) []float32 {
	return e.embedTokens(text, keyword.Tokens(text), counts)
}

// embedTokens embeds the tokens of text (text itself is read only when they give no feature).
func (e *Embedder) embedTokens(text string, tokens []string, counts map[uint64]float64) []float32 {
	var bounded []byte
	var starts []int
	var grams []uint64
	for _, tok := range tokens {
		r, _ := utf8.DecodeRuneInString(tok)
		if keyword.IsCJK(r) { // CJK unigram or bigram
			counts[hash(kindCJK, tok)]++
			continue
		}
		counts[hash(kindWord, tok)]++
		if e.cfg.ngramWeight == 0 {
			continue
		}
		// fastText-style n-grams of "<word>", weighted so that a word's
		// n-grams together weigh ngramWeight.
		bounded = append(append(append(bounded[:0], '<'), tok...), '>')
		starts = starts[:0]
		for p := range string(bounded) {
			starts = append(starts, p)
		}
		starts = append(starts, len(bounded))
		runes := len(starts) - 1
		grams = grams[:0]
		for n := e.cfg.minN; n <= e.cfg.maxN && n <= runes; n++ {
			for i := 0; i+n <= runes; i++ {
				grams = append(grams, hash(kindNgram, string(bounded[starts[i]:starts[i+n]])))
			}
		}
		for _, g := range grams {
			counts[g] += e.cfg.ngramWeight / float64(len(grams))
		}
	}
	if len(counts) == 0 {
		rawFeatures(text, counts)
	}
	v := make([]float32, e.dim)
	var norm float64
	acc := make([]float64, e.dim)
	for h, c := range counts {
		// Sublinear tf: 1 + ln(tf) for tf >= 1; fractional n-gram weights
		// scale the same curve.
		w := c
		if c >= 1 {
			w = 1 + math.Log(c)
		}
		i := (h >> 1) % uint64(e.dim)
		if h&1 == 1 {
			w = -w
		}
		acc[i] += w
	}
	for _, a := range acc {
		norm += a * a
	}
	if norm == 0 {
		if len(counts) > 0 {
			// Features that cancel exactly under signed hashing (or a text
			// of only spaces): a fixed unit vector, never the zero vector
			// a cosine index refuses.
			h := hash(kindRaw, text)
			v[(h>>1)%uint64(e.dim)] = 1
		}
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i, a := range acc {
		v[i] = float32(a * inv)
	}
	return v
}

// rawFeatures adds, for a text the tokenizer finds nothing in (emoji or
// punctuation only, only stopwords, words longer than the tokenizer keeps),
// the character 1- to 3-grams of each lower-cased run of non-space
// characters, bounded as "<run>". Such a text then has a vector close to
// those of texts with the same characters, instead of the zero vector a
// cosine index cannot store or search with.
func rawFeatures(text string, counts map[uint64]float64) {
	var bounded []byte
	var starts []int
	for _, run := range strings.Fields(strings.ToLower(text)) {
		bounded = append(append(append(bounded[:0], '<'), run...), '>')
		starts = starts[:0]
		for p := range string(bounded) {
			starts = append(starts, p)
		}
		starts = append(starts, len(bounded))
		runes := len(starts) - 1
		for n := rawMinN; n <= rawMaxN && n <= runes; n++ {
			for i := 0; i+n <= runes; i++ {
				counts[hash(kindRaw, string(bounded[starts[i]:starts[i+n]]))]++
			}
		}
	}
}

// hash is 64-bit FNV-1a over kind and s with a murmur3 finalizer to spread
// FNV's weak low bits: fixed, so vectors are stable across processes and
// machines (hash/maphash is seeded per process).
func hash(kind byte, s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	h ^= uint64(kind)
	h *= prime
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
