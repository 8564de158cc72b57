package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Current facts first. Recall's candidates can hold two versions of a fact: an older memory and
// a newer one that changes it ("Physio is every Monday at 8:00" and "Marta reshuffled her
// schedule, so my sessions are now Wednesdays at 5:45 pm"). The older one often shares more
// words with a question about the fact, since the newer one was written as a change. After
// fusion, decay and weights, currentFirst (under the default SupersededDemote):
//
//   - for every candidate marked superseded (Memory.SupersededBy, at or before AsOf), follows the
//     marks to the newest successor (a chain of at most maxSupersedeChain) that exists, is of
//     the same session and was created by AsOf; the successor takes the stale memory's relevance
//     when its own is lower (Score.Fused) and joins the candidates when the query did not find
//     it (read by ID; it must match the recall's Filter); the stale memory's score is multiplied
//     by StalePenalty (Score.Current), so it ranks below its successor, and it is marked (Stale,
//     Newer; Replaces on the successor);
//   - then compares the best candidates pairwise (the first conflictWindow by score): where an
//     older one ranks above a newer one of the same session that scores at least closeRelevance
//     of it and the sketches say that the newer changes the older (judgeSupersede, as when a
//     memory is written), the older is marked and demoted the same way. Nothing happens to a
//     memory that nothing newer contradicts, however old.
//
// Under SupersededHide stale memories are then dropped; under SupersededKeep they are only
// marked.
const (
	maxSupersedeChain = 8
	conflictWindow    = 10
	closeRelevance    = 0.75
)

// ranked is a candidate with what orders it.
type ranked struct {
	Result
	product float64 // Final before the cap at 1
	lists   int     // how many candidate lists found it
	raw     float64 // the sum of its normalized raw list scores
}

// score sets r's decay, weight and currency factors and Final.
func (p *recallPlan) score(r *ranked) {
	sc := &r.Score
	sc.Decay = p.decay(&r.Memory)
	sc.Weight = p.weight(&r.Memory)
	if sc.Current == 0 {
		sc.Current = 1
	}
	r.product = sc.Fused * sc.Decay * sc.Weight * sc.Current
	sc.Final = min(1, r.product)
}

// sortRanked orders candidates best first. Ties in Final (frequent under RRF, whose scores
// depend on ranks alone) go to the memory found by more lists, then to the higher sum of
// normalized raw scores (cosine clamped to [0, 1], BM25 over the query's best), then to the
// smaller ID: an exact keyword match is not lost to an equally ranked weak vector neighbour by
// chance.
func sortRanked(all []ranked) {
	slices.SortFunc(all, func(a, b ranked) int {
		if c := cmp.Compare(b.product, a.product); c != 0 {
			return c
		}
		if c := cmp.Compare(b.lists, a.lists); c != 0 {
			return c
		}
		if c := cmp.Compare(b.raw, a.raw); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// supersededAsOf reports whether m is marked superseded at time t (the zero time: now).
func supersededAsOf(m *Memory, t time.Time) bool {
	return m.SupersededBy != "" && (t.IsZero() || !m.SupersededAt.After(t))
}

// currentFirst applies p.Superseded to the candidates (see the comment above). A successor
// takes the stale memory's relevance only where the change is about what the query asks
// (inherits).
func (s *Store) currentFirst(ctx context.Context, coll Collection, p *recallPlan, all []ranked) ([]ranked, error) {
	if len(all) == 0 {
		return all, nil
	}
	idx := make(map[string]int, len(all))
	for i := range all {
		idx[all[i].ID] = i
	}
	// Successors, read by ID where the query did not find them.
	known := map[string]*Memory{}
	var want []string
	for i := range all {
		if supersededAsOf(&all[i].Memory, p.AsOf) {
			if _, ok := idx[all[i].SupersededBy]; !ok && !slices.Contains(want, all[i].SupersededBy) {
				want = append(want, all[i].SupersededBy)
			}
		}
	}
	for hop := 0; len(want) > 0 && hop < maxSupersedeChain; hop++ {
		ms, err := getLight(ctx, coll, want)
		if err != nil {
			return nil, fmt.Errorf("memory: reading successors: %w", err)
		}
		want = want[:0]
		for i := range ms {
			m := &ms[i]
			m.Vector = nil
			known[m.ID] = m
			if supersededAsOf(m, p.AsOf) {
				if _, ok := idx[m.SupersededBy]; !ok && known[m.SupersededBy] == nil && !slices.Contains(want, m.SupersededBy) {
					want = append(want, m.SupersededBy)
				}
			}
		}
	}
	lookup := func(id string) *Memory {
		if i, ok := idx[id]; ok {
			return &all[i].Memory
		}
		return known[id]
	}
	// head follows the marks from m to the newest successor that counts, or nil.
	head := func(m *Memory) *Memory {
		var h *Memory
		for hop := 0; hop < maxSupersedeChain && supersededAsOf(m, p.AsOf); hop++ {
			next := lookup(m.SupersededBy)
			if next == nil || next.Session != m.Session || (!p.AsOf.IsZero() && next.Created.After(p.AsOf)) || next.ID == m.ID {
				break
			}
			h, m = next, next
		}
		return h
	}
	var staleIdx, textIdx []int
	for i := range all {
		if h := head(&all[i].Memory); h != nil {
			staleIdx = append(staleIdx, i)
			textIdx = append(textIdx, i)
			if j, ok := idx[h.ID]; ok {
				textIdx = append(textIdx, j)
			}
		}
	}
	if p.attrs != 0 {
		if err := loadTextsAt(ctx, coll, all, textIdx); err != nil {
			return nil, err
		}
	}
	for _, i := range staleIdx {
		h := head(&all[i].Memory)
		j, ok := idx[h.ID]
		if !ok {
			if !p.filter.Match(h) {
				// The successor is outside what the caller asked for: the memory is still stale.
				markStale(&all[i], h.ID, p)
				continue
			}
			all = append(all, ranked{Result: Result{Memory: *h}})
			j = len(all) - 1
			idx[h.ID] = j
		}
		if all[j].Score.Fused < all[i].Score.Fused && p.Superseded != SupersededKeep && inherits(p.attrs, all[i].Text, all[j].Text) {
			all[j].Score.Fused = all[i].Score.Fused
			p.score(&all[j])
		}
		markStale(&all[i], h.ID, p)
		all[j].Replaces = append(all[j].Replaces, all[i].ID)
	}
	// Conflicts nobody recorded, among the best candidates: first the pairs that can be one by
	// their scores and times, then their texts.
	sortRanked(all)
	window := min(len(all), max(conflictWindow, p.K))
	var pairs [][2]int
	var newer []int
	for i := 0; i < window; i++ {
		for j := i + 1; j < window; j++ {
			a, b := &all[i], &all[j]
			if !a.Stale && !b.Stale && a.Score.Fused > 0 && b.Session == a.Session && b.Updated.After(a.Updated) && b.product >= closeRelevance*a.product {
				pairs = append(pairs, [2]int{i, j})
				if !slices.Contains(newer, j) {
					newer = append(newer, j)
				}
			}
		}
	}
	// The newer memory of a pair must announce a change; most texts do not, so the
	// older ones' texts are read only for the pairs whose newer one does.
	if len(pairs) > 0 {
		if err := loadTextsAt(ctx, coll, all, newer); err != nil {
			return nil, err
		}
		announces := map[int]bool{}
		for _, j := range newer {
			b := &all[j]
			announces[j] = b.Context == "" && b.Text != "" && strongCue(b.Text) && factLike(b.Text)
		}
		var older []int
		pairs = slices.DeleteFunc(pairs, func(pr [2]int) bool { return !announces[pr[1]] })
		for _, pr := range pairs {
			older = append(older, pr[0])
		}
		if err := loadTextsAt(ctx, coll, all, older); err != nil {
			return nil, err
		}
	}
	for _, pr := range pairs {
		a, b := &all[pr[0]], &all[pr[1]]
		if a.Stale || a.Context != "" || b.Context != "" || a.Text == "" || b.Text == "" {
			continue
		}
		sb := s.sketch(b.Text)
		if sb.cue != cueStrong || !factLike(b.Text) || !factLike(a.Text) || !judgeSupersede(*s.sketch(a.Text), *sb, false).ok {
			continue
		}
		// Only the order changes: the newer ranks just above the older, whose score is otherwise
		// its own (the sketches can be wrong, and nothing was recorded).
		a.Stale, a.Newer = true, b.ID
		b.Replaces = append(b.Replaces, a.ID)
		if p.Superseded != SupersededKeep {
			a.Score.Current = min(1, b.product/a.product*0.999)
			p.score(a)
		}
	}
	if p.Superseded == SupersededHide {
		all = slices.DeleteFunc(all, func(r ranked) bool { return r.Stale })
	}
	return all, nil
}

// inherits reports whether a successor takes its stale memory's relevance to a query asking
// about the attributes query (sketch.go): unless the two share attributes and the query asks
// about none of them ("我现在在哪家公司上班？" found "我现在住在武侯区…骑车到公司只要十分钟" by its
// commute, and "周末终于搬到高新区了" changed where the user lives, not where they work).
func inherits(query uint32, staleText, succText string) bool {
	if query == 0 || staleText == "" || succText == "" {
		return true
	}
	a, _ := attributesOf(strings.ToLower(staleText))
	b, _ := attributesOf(strings.ToLower(succText))
	return a&b == 0 || a&b&query != 0
}

// loadTextsAt is loadTexts for the candidates at the given indexes.
func loadTextsAt(ctx context.Context, coll Collection, all []ranked, idx []int) error {
	var rs []ranked
	for _, i := range idx {
		rs = append(rs, all[i])
	}
	if err := loadTexts(ctx, coll, rs); err != nil {
		return err
	}
	for k, i := range idx {
		all[i].Text = rs[k].Text
	}
	return nil
}

// loadTexts reads the texts of candidates that came without (CandidateSearcher). A memory
// forgotten since the search keeps an empty text; fillTexts drops it from the results.
func loadTexts(ctx context.Context, coll Collection, rs []ranked) error {
	var ids []string
	for i := range rs {
		if rs[i].Text == "" {
			ids = append(ids, rs[i].ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	ms, err := getLight(ctx, coll, ids)
	if err != nil {
		return fmt.Errorf("memory: reading recalled memories: %w", err)
	}
	byID := make(map[string]*Memory, len(ms))
	for i := range ms {
		byID[ms[i].ID] = &ms[i]
	}
	for i := range rs {
		if m := byID[rs[i].ID]; rs[i].Text == "" && m != nil {
			rs[i].Text, rs[i].Context = m.Text, m.Context
		}
	}
	return nil
}

// markStale marks r as changed by the memory newer and demotes it (not under SupersededKeep).
func markStale(r *ranked, newer string, p *recallPlan) {
	r.Stale, r.Newer = true, newer
	if p.Superseded != SupersededKeep {
		r.Score.Current = StalePenalty
		p.score(r)
	}
}

// asOfTexts gives the results whose text was replaced in place after t (Updated after t) the
// text they had at t, from their History: the newest version written by t that was the
// memory's text (not an older write kept aside, ChangeOlder).
func (s *Store) asOfTexts(ctx context.Context, results []Result, t time.Time) error {
	for i := range results {
		r := &results[i]
		if !r.Updated.After(t) {
			continue
		}
		vs, err := s.History(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("memory: reading the history of %q for AsOf: %w", r.ID, err)
		}
		var best *Version
		for k := range vs {
			v := &vs[k]
			if v.Change == ChangeOlder || v.Memory.Updated.After(t) {
				continue
			}
			if best == nil || v.Memory.Updated.After(best.Memory.Updated) || v.Memory.Updated.Equal(best.Memory.Updated) && v.Version > best.Version {
				best = v
			}
		}
		if best == nil {
			continue // no version older than t survives (the history is bounded): keep the text
		}
		r.Text, r.Context, r.Updated = best.Memory.Text, best.Memory.Context, best.Memory.Updated
		r.Source, r.Tags, r.Importance, r.Metadata = best.Memory.Source, best.Memory.Tags, best.Memory.Importance, best.Memory.Metadata
	}
	return nil
}
