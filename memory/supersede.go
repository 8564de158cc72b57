package memory

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Superseding a memory of its own. A near-duplicate that changes a value replaces the memory it
// resembles in place (facts.go, Remember). Most changed facts are not near-duplicates: "Marta
// reshuffled her schedule, so my sessions are now Wednesdays at 5:45 pm" shares two words with
// "Physio with Marta is every Monday at 8:00 am at the Danforth clinic". Remember looks for them
// among the memories of the session that three searches find with the new chunk
// (supersedeCandidates each, written before the chunk's time, not superseded already: a change
// is later than what it changes, and memories written at the same instant, one import, have no
// order): a
// keyword search with its text, a vector search with its vector and, when it announces a change,
// a keyword search with the words of its attributes (sketch.go). It compares sketches, and the
// chunk supersedes the best candidate that it
//
//  1. announces a change of (a strong cue: "no longer", "switched to", "moved", "cancelled",
//     "actually", "my new", "sold", 不再, 改成, 换成, 搬到, 取消, 其实 ...) and shares at least two
//     terms with, or one term and an attribute or a changed value (another time, amount,
//     quantity, date, weekday or phone number; a switched name, "Kindle" to "Kobo"; a
//     correction; the end of a habit, "gave up", 不再), or, sharing no term, an attribute that
//     an event of the chunk changes (moving house, a new job, an engagement) or a verb that
//     changes a quantity changes with another number ("房租涨到4500" for "月租4200"; "down to 77
//     kg" for "I weigh 82 kg") or another phone number replaces ("我换了新号码，139..."), when the
//     candidate states that attribute more than any other candidate does (the one memory about
//     where the user lives, for "周末终于搬到高新区了"); or
//  2. changes a value of (a time, an amount, a quantity, a date, a negation) with a weak cue
//     ("now", "since", "from July 1", 现在, 开始) and two shared terms, or a plain number with
//     three ("女儿现在读四年级了" for "女儿在读小学三年级"); or
//  3. changes a value of without any cue while sharing nearly all terms (at least two, and at
//     least 80% of either text's): the departure time of the same flight, not the return
//     flight;
//
// unless the chunk only states an intention ("thinking about moving", 考虑, 打算), adds a fact
// without a strong cue ("also", "too", 也, 另外), or the two say at their start that they are
// about different people ("I like tea" and "my sister likes coffee"; a correction overrides
// that). Between candidates that pass, the one sharing more terms wins, then the one keyword
// search ranks higher. Both memories then stay: the older one is marked (Memory.SupersededBy,
// SupersededAt), its previous version goes to its History as ChangeSupersede with the
// superseding memory's ID (Version.By), and Recall ranks it below its successor (current.go).
//
// Only facts take part (factLike): a memory of more than supersedeMaxRunes characters is a
// document; a question, a message addressed to someone ("you", 你), a chat reaction ("Thanks,
// Gina!", "Wow"), a text with two exclamation marks or a transcript line ("Melanie: ...") is
// conversation; so is a memory with a Context (a turn remembered with its neighbours). On
// LoCoMo's conversations remembered turn by turn without these rules, detection marked 348 of
// 2,760 turns, nearly all wrongly, and cost locomo-dev 0.05 nDCG@10; with them it marks none
// (11 when the speakers' names are stripped from the turns). Facts distilled from a
// conversation take part like any other memory.
const (
	supersedeCandidates = 8
	supersedeMaxRunes   = 400
)

// supersedeVerdict is the outcome of comparing an older memory with a newer chunk.
type supersedeVerdict struct {
	ok    bool
	score float64 // orders the candidates that pass
}

// judgeSupersede decides whether new (written later) supersedes old. attrDominant says that
// old has more words of the attributes the two share than any other candidate.
func judgeSupersede(old, new sketch, attrDominant bool) supersedeVerdict {
	if personConflict(old, new) && !new.correction {
		return supersedeVerdict{}
	}
	n := shared(old.terms, new.terms)
	attr := old.attrs&new.attrs != 0
	vconf := valueConflict(old, new)
	score := 2 * float64(n)
	if attr {
		score++
	}
	if vconf {
		score += 0.5
	}
	switch {
	case new.hedge:
		// An intention ("thinking about moving to York") changes nothing yet.
	case new.cue == cueStrong:
		// A switch names what replaced what ("Kindle" -> "Kobo"): a replaced name is a changed
		// value here, where a near-duplicate merge reads it as another person or place.
		// A negation alone is weak evidence: "不太爱开会" negates, but about something else.
		changed := typedConflict(old, new) || switched(old.names, new.names) || new.correction || new.stop
		event := old.attrs&new.events != 0
		// A verb that changes a quantity ("房租涨到4500", "raised the fee to") with another number
		// for an attribute both state needs no word in common ("月租4200").
		quantity := attr && new.valueCue && numbersDiffer(old, new)
		// A phone number names one line: another number for an attribute both state replaces it
		// ("我换了新号码，139..." for "我的手机号是138...").
		phone := attr && len(old.values[valuePhone]) > 0 && len(new.values[valuePhone]) > 0 &&
			!slices.Equal(old.values[valuePhone], new.values[valuePhone])
		if n >= 2 || n >= 1 && (attr || changed) || n == 0 && (event || quantity || phone) && attrDominant {
			return supersedeVerdict{ok: true, score: score}
		}
	case new.addition:
	case new.cue == cueWeak:
		// Three shared terms and another plain number: "女儿现在读四年级了" for "女儿在读小学三年级".
		if vconf && n >= 2 || n >= 3 && numbersDiffer(old, new) {
			return supersedeVerdict{ok: true, score: score}
		}
	default:
		if vconf && n >= 2 && float64(n) >= 0.8*float64(max(len(old.terms), len(new.terms))) {
			return supersedeVerdict{ok: true, score: score}
		}
	}
	return supersedeVerdict{}
}

// factLike reports whether a text can state a fact that supersedes or is superseded: at most
// supersedeMaxRunes characters, no question, not addressed to someone ("you", 你), not a
// transcript line ("Melanie: ..."). Chat messages remembered one by one are none of these.
func factLike(text string) bool {
	return utf8.RuneCountInString(text) <= supersedeMaxRunes && !strings.ContainsAny(text, "?？") &&
		!addressedRE.MatchString(text) && !(speakerRE.MatchString(text) && !labelRE.MatchString(text)) && !chatRE.MatchString(text) &&
		strings.Count(text, "!")+strings.Count(text, "！") < 2
}

var (
	addressedRE = regexp.MustCompile(`(?i)\b(?:you|your|yours|you're|you’re|you've|you’ve|ya|y'all)\b|你|您`)
	// speakerRE matches a transcript line: a role or one name, then a colon ("Melanie: ...",
	// "assistant: ..."), but not a label that heads a note ("Correction: ...").
	speakerRE = regexp.MustCompile(`^(?:(?i:user|assistant|system|human|ai|bot|agent)|\p{Lu}\p{Ll}+|\p{Han}{1,4}):\s*\S`)
	labelRE   = regexp.MustCompile(`(?i)^(?:correction|update|note|reminder|fyi|ps|edit|important|todo|更正|更新|备注|提醒|注意):`)
	// chatRE matches the openings of chat reactions ("Thanks, Gina!", "Hey Maria", "Wow,
	// that's great") and a name called out at the start.
	chatRE = regexp.MustCompile(`(?i)^(?:hey|hi|hello|thanks|thank you|thx|wow|whoa|yeah|yep|yes|yup|oh|ooh|oof|ugh|aw+|sure|congrats|congratulations|lol|haha\w*|omg|ok|okay|great|cool|nice|awesome|sounds|same|me too|agreed|totally|haha|哈哈|嗯|好的|谢谢|谢啦)\b|^\p{Lu}\p{Ll}+[,!]`)
)

// switched reports whether every name of old is gone from new and new has names old lacks.
func switched(old, new []string) bool {
	return len(old) > 0 && !slices.ContainsFunc(old, func(x string) bool { return slices.Contains(new, x) }) &&
		slices.ContainsFunc(new, func(x string) bool { return !slices.Contains(old, x) })
}

// findSuperseded returns the stored memory of the session and scope (a filter: sameScope) that a
// new chunk (text, vector v, written at) supersedes, or nil. skip is the ID the chunk merges into,
// if any.
func (s *Store) findSuperseded(ctx context.Context, coll Collection, session string, scope *Filter, text string, v []float32, at time.Time, skip string) (*Memory, error) {
	if !factLike(text) {
		return nil, nil
	}
	newSk := *s.sketch(text)
	if newSk.cue == cueNone && len(newSk.values) == 0 && newSk.negations == 0 {
		return nil, nil // nothing announces or carries a change
	}
	f := And(Eq(FieldSession, session), scope, TimeRange(FieldUpdated, time.Time{}, at))
	var cands []Memory
	add := func(hits []Hit) {
		for _, h := range hits {
			m := h.Memory
			if m.ID == skip || m.SupersededBy != "" || m.Context != "" || !m.Updated.Before(at) || !factLike(m.Text) ||
				slices.ContainsFunc(cands, func(c Memory) bool { return c.ID == m.ID }) {
				continue
			}
			cands = append(cands, m)
		}
	}
	hits, err := coll.SearchText(ctx, text, supersedeCandidates, f)
	if err != nil {
		return nil, fmt.Errorf("memory: supersede search: %w", err)
	}
	add(hits)
	// Between candidates the sketches rate alike, the one keyword search ranks higher (rarer
	// words in common) wins.
	kw := map[string]float64{}
	for _, h := range hits {
		if len(hits) > 0 && hits[0].Score > 0 {
			kw[h.Memory.ID] = h.Score / hits[0].Score
		}
	}
	if hits, err = coll.SearchVector(ctx, v, supersedeCandidates, f); err != nil {
		return nil, fmt.Errorf("memory: supersede search: %w", err)
	}
	add(slices.DeleteFunc(hits, func(h Hit) bool { return h.Score <= 0 }))
	if newSk.cue == cueStrong && newSk.attrs != 0 {
		// The memory stating the same attribute may share no word with the chunk: "我现在住在
		// 武侯区" for "周末终于搬到高新区了".
		if hits, err = coll.SearchText(ctx, attributeQuery(newSk.attrs), supersedeCandidates, f); err != nil {
			return nil, fmt.Errorf("memory: supersede search: %w", err)
		}
		add(hits)
	}
	sks := make([]sketch, len(cands))
	for i := range cands {
		sks[i] = *s.sketch(cands[i].Text)
	}
	best, bestScore := -1, 0.0
	for i := range cands {
		common := sks[i].attrs & newSk.attrs
		w := sks[i].attributeWeight(common)
		dominant := common != 0
		for j := range cands {
			if j != i && sks[j].attributeWeight(common) >= w {
				dominant = false
			}
		}
		v := judgeSupersede(sks[i], newSk, dominant)
		v.score += kw[cands[i].ID]
		if v.ok && (best < 0 || v.score > bestScore || v.score == bestScore && cands[i].Updated.After(cands[best].Updated)) {
			best, bestScore = i, v.score
		}
	}
	if best < 0 {
		return nil, nil
	}
	// The hit may come without everything (vector, texts of lean searches): read it whole.
	ms, err := coll.Get(ctx, []string{cands[best].ID})
	if err != nil {
		return nil, fmt.Errorf("memory: reading superseded %q: %w", cands[best].ID, err)
	}
	if len(ms) != 1 {
		return nil, nil
	}
	return &ms[0], nil
}
