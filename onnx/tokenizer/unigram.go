package tokenizer

import (
	"fmt"
	"math"
	"sort"
	"unicode/utf8"
)

// unkPenalty is what HF (and sentencepiece) subtract from the lowest piece
// score to score an unknown character.
const unkPenalty = 10.0

// unigram is HF's Unigram model: Viterbi over a trie of the vocabulary, unknown
// characters scored min_score-10, consecutive unknowns fused into one token
// (HF always fuses for Unigram), optional byte fallback for unknown tokens.
type unigram struct {
	pieces       []string
	scores       []float64
	ids          map[string]int32 // last id wins for duplicate pieces, as in HF
	unkID        int32            // -1: none
	byteFallback bool
	byteIDs      [256]int32 // id of "<0xXX>", -1 when absent
	unkScore     float64
	trie         trie
}

func newUnigram(vocab []vocabEntry, unkID *int, byteFallback bool) (*unigram, error) {
	if len(vocab) == 0 {
		return nil, fmt.Errorf("unigram: empty vocabulary")
	}
	if len(vocab) > math.MaxInt32 {
		return nil, fmt.Errorf("unigram: vocabulary of %d pieces is too large", len(vocab))
	}
	u := &unigram{
		pieces:       make([]string, len(vocab)),
		scores:       make([]float64, len(vocab)),
		ids:          make(map[string]int32, len(vocab)),
		unkID:        -1,
		byteFallback: byteFallback,
	}
	minScore := math.Inf(1)
	for i, e := range vocab {
		u.pieces[i], u.scores[i] = e.piece, e.score
		u.ids[e.piece] = int32(i)
		minScore = math.Min(minScore, e.score)
	}
	u.unkScore = minScore - unkPenalty
	if unkID != nil {
		if *unkID < 0 || *unkID >= len(vocab) {
			return nil, fmt.Errorf("unigram: unk_id %d is outside the vocabulary of %d pieces", *unkID, len(vocab))
		}
		u.unkID = int32(*unkID)
	}
	for b := range u.byteIDs {
		u.byteIDs[b] = -1
		if id, ok := u.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			u.byteIDs[b] = id
		}
	}
	u.trie = buildTrie(u.ids)
	return u, nil
}

// lattice is per-call scratch for Viterbi, reused through a pool.
type lattice struct {
	score []float64
	start []int32 // -1: no path ends here yet
	id    []int32
	path  []int32 // node end offsets, collected backwards
}

// encode appends the ids (and the piece strings) of s to e. It follows HF's
// encode_optimized step by step so ties break the same way: candidates are
// visited shortest first and only a strictly better score replaces a node.
func (u *unigram) encode(e *Encoding, s string, lat *lattice) error {
	if s == "" {
		return nil
	}
	n := len(s) + 1
	if cap(lat.score) < n {
		lat.score = make([]float64, n)
		lat.start = make([]int32, n)
		lat.id = make([]int32, n)
	}
	score, start, id := lat.score[:n], lat.start[:n], lat.id[:n]
	for i := range start {
		start[i] = -1
		score[i] = 0
	}
	for pos := 0; pos < len(s); {
		base := score[pos]
		mblen := 1
		if s[pos] >= utf8.RuneSelf {
			_, mblen = utf8.DecodeRuneInString(s[pos:])
		}
		single := false
		// Walk the trie along s[pos:]: every node with an id is a candidate
		// piece, shortest first.
		for cur, i := u.trie.root[s[pos]], pos+1; cur >= 0; i++ {
			nd := &u.trie.nodes[cur]
			if tok := nd.id; tok >= 0 {
				cand := u.scores[tok] + base
				if start[i] < 0 || cand > score[i] {
					score[i], start[i], id[i] = cand, int32(pos), tok
				}
				if i-pos == mblen {
					single = true
				}
			}
			if i == len(s) {
				break
			}
			cur = u.trie.child(nd, s[i])
		}
		if !single {
			end := pos + mblen
			if u.unkID < 0 {
				return fmt.Errorf("unigram: %q is not in the vocabulary and the model has no unk_id", s[pos:end])
			}
			cand := u.unkScore + base
			if start[end] < 0 || cand > score[end] {
				score[end], start[end], id[end] = cand, int32(pos), u.unkID
			}
		}
		pos += mblen
	}
	path := lat.path[:0]
	for end := len(s); end > 0; end = int(start[end]) {
		path = append(path, int32(end))
	}
	lat.path = path
	// Emit front to back; runs of unknown nodes fuse into one token.
	pos := 0
	for k := len(path) - 1; k >= 0; k-- {
		end := int(path[k])
		if id[end] != u.unkID {
			e.add(id[end], u.pieces[id[end]])
			pos = end
			continue
		}
		if k > 0 && id[path[k-1]] == u.unkID {
			continue // the run goes on
		}
		u.emitUnknown(e, s[pos:end])
		pos = end
	}
	return nil
}

// emitUnknown is HF's Unigram::tokenize for a fused unknown string: its own
// id if the vocabulary happens to hold it, else its bytes as <0xXX> pieces
// when byte_fallback is on and all of them exist, else unk_id.
func (u *unigram) emitUnknown(e *Encoding, tok string) {
	if id, ok := u.ids[tok]; ok {
		e.add(id, u.pieces[id])
		return
	}
	if u.byteFallback {
		all := true
		for i := 0; i < len(tok); i++ {
			all = all && u.byteIDs[tok[i]] >= 0
		}
		if all {
			for i := 0; i < len(tok); i++ {
				id := u.byteIDs[tok[i]]
				e.add(id, u.pieces[id])
			}
			return
		}
	}
	e.add(u.unkID, tok)
}

// trie is a byte trie over the vocabulary, flattened into arrays: children of
// a node are a contiguous, label-sorted run of edges; the root has a direct
// table.
type trie struct {
	root  [256]int32 // child node of the root per byte, -1 if none
	nodes []trieNode
	edges []trieEdge
}

type trieNode struct {
	first, n uint32
	id       int32 // vocabulary id when a piece ends here, else -1
}

type trieEdge struct {
	label byte
	child uint32
}

// buildTrie lays the trie out from the sorted pieces: each node's children
// are appended together, so they are contiguous and label-sorted. An explicit
// stack keeps long pieces from deepening the Go stack.
func buildTrie(ids map[string]int32) trie {
	keys := make([]string, 0, len(ids))
	for k := range ids {
		if k != "" { // an empty piece can never match
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	// Exact sizes: each key adds one node per byte past its common prefix
	// with the previous key.
	nodes := 1
	for i, k := range keys {
		common := 0
		if i > 0 {
			prev := keys[i-1]
			for common < len(prev) && common < len(k) && prev[common] == k[common] {
				common++
			}
		}
		nodes += len(k) - common
	}
	t := trie{nodes: make([]trieNode, 1, nodes), edges: make([]trieEdge, 0, nodes-1)}
	t.nodes[0].id = -1
	type job struct{ node, lo, hi, depth int }
	stack := []job{{0, 0, len(keys), 0}}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		lo := j.lo
		if lo < j.hi && len(keys[lo]) == j.depth { // a prefix sorts first
			t.nodes[j.node].id = ids[keys[lo]]
			lo++
		}
		first := uint32(len(t.edges))
		for i := lo; i < j.hi; {
			c := keys[i][j.depth]
			k := i + 1
			for k < j.hi && keys[k][j.depth] == c {
				k++
			}
			child := len(t.nodes)
			t.nodes = append(t.nodes, trieNode{id: -1})
			t.edges = append(t.edges, trieEdge{c, uint32(child)})
			stack = append(stack, job{child, i, k, j.depth + 1})
			i = k
		}
		t.nodes[j.node].first, t.nodes[j.node].n = first, uint32(len(t.edges))-first
	}
	for i := range t.root {
		t.root[i] = -1
	}
	for _, e := range t.edges[t.nodes[0].first : t.nodes[0].first+t.nodes[0].n] {
		t.root[e.label] = int32(e.child)
	}
	return t
}

// child returns the child of nd labelled c, or -1.
func (t *trie) child(nd *trieNode, c byte) int32 {
	edges := t.edges[nd.first : nd.first+nd.n]
	lo, hi := 0, len(edges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if edges[m].label < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(edges) || edges[lo].label != c {
		return -1
	}
	return int32(edges[lo].child)
}
