package memory

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The built-in summary keeps, of each compressed turn, the sentences later turns may need: those
// with numbers, dates and times, names, decisions, preferences and negations (English and Chinese
// cue words), or, in a turn with none, its first sentence that says something. Small talk
// ("haha ok", "lol", "Thanks!", "好的") and assistant boilerplate ("Nice to meet you, Alex! I'll
// remember that.") are dropped, and so is a sentence near-identical to one the summary already
// holds (sameSentence: 80% of the words in common and the same numbers and dates, so a changed
// value is never taken for a repeat). Sentences are split by sentences (Ms., Dr., U.S., e.g.,
// 3.5, ellipses and Chinese punctuation handled). The kept sentences of consecutive turns of the
// same role share one "role: text" line of at most MaxChars characters, so the summary reads as
// the conversation's few threads rather than one line per turn. When the lines exceed the
// summary's budget they are shortened fairly (the longest first, each down to its most salient
// clauses, then to its salient words), so that every line keeps something; only when even those
// do not fit are the oldest lines folded into one "earlier: ..." line of their salient words,
// which ends in "…" when it had to leave words out. Nothing but small talk and repeats is dropped
// silently, and the result never exceeds the budget.

// ExtractiveSummarizer is the model-free Summarizer: deterministic, instant, nothing installed.
// MaxChars bounds one line before any budget fitting (default 400 characters).
type ExtractiveSummarizer struct{ MaxChars int }

// BudgetSummarizer is a Summarizer that can be told the summary's budget in estimated tokens
// (EstimateTokens). AddTurn uses it when the Summarizer implements it; for any other Summarizer
// it fits the result to the budget line by line, the same way.
type BudgetSummarizer interface {
	SummarizeWithin(ctx context.Context, previous string, turns []Turn, maxTokens int) (string, error)
}

// Summarize implements Summarizer: the previous summary's lines, then the turns' kept sentences.
func (e ExtractiveSummarizer) Summarize(_ context.Context, previous string, turns []Turn) (string, error) {
	return strings.Join(e.lines(previous, turns), "\n"), nil
}

// SummarizeWithin implements BudgetSummarizer.
func (e ExtractiveSummarizer) SummarizeWithin(_ context.Context, previous string, turns []Turn, maxTokens int) (string, error) {
	return fitSummary(e.lines(previous, turns), maxTokens), nil
}

// foldPrefix starts the line that stands for the oldest lines folded together; legacyFold is how
// summaries written before merged lines started it ("earlier (N turns): ").
const (
	foldPrefix = "earlier: "
	legacyFold = "earlier ("
)

func (e ExtractiveSummarizer) lines(previous string, turns []Turn) []string {
	n := e.MaxChars
	if n <= 0 {
		n = 400
	}
	type line struct{ role, text string }
	var out []line
	open := map[string]int{} // role -> the line its next sentences join, if they fit
	var seen [][]string      // keys of the sentences the summary holds
	for _, l := range strings.Split(previous, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		role, text, ok := strings.Cut(l, ": ")
		if _, folded := foldedWords(l); !ok || folded {
			out = append(out, line{text: l})
			continue
		}
		for _, s := range sentences(text) {
			seen = append(seen, sentenceKey(s))
		}
		out = append(out, line{role, text})
		open[role] = len(out) - 1
		if strings.HasSuffix(text, "…") {
			delete(open, role)
		}
	}
	for _, t := range turns {
		role := oneLine(t.Role)
		kept := keepSentences(t.Text, assistantRole(role), &seen)
		if len(kept) == 0 {
			continue
		}
		text := kept[0]
		for _, k := range kept[1:] {
			text = joinSentences(text, k)
		}
		if k, ok := open[role]; ok && utf8.RuneCountInString(out[k].text)+1+utf8.RuneCountInString(text) <= n {
			out[k].text = joinSentences(out[k].text, text)
			continue
		}
		out = append(out, line{role, cutRunes(text, n)})
		open[role] = len(out) - 1
	}
	lines := make([]string, len(out))
	for i, l := range out {
		lines[i] = l.text
		if l.role != "" {
			lines[i] = l.role + ": " + l.text
		}
	}
	return lines
}

// assistantRole reports whether a role is the assistant's (or a system's or tool's), whose
// turns the summary keeps only facts of.
func assistantRole(role string) bool { return notSpeakers[strings.ToLower(strings.TrimSpace(role))] }

// keepSentences returns the sentences of a turn the summary keeps (see the top of this file),
// each on one line, and adds their keys to seen. Of an assistant's turn it keeps at most one
// sentence, the first with the most numbers, dates and names (at least a number, a date or two
// names), and no question.
func keepSentences(text string, assistant bool, seen *[][]string) []string {
	var salient, other []string
	best, bestScore := "", 0
	for _, s := range sentences(text) {
		s = oneLine(s)
		if smallTalk(s) {
			continue
		}
		key := sentenceKey(s)
		if slices.ContainsFunc(*seen, func(k []string) bool { return sameSentence(k, key) }) {
			continue
		}
		switch {
		case assistant:
			// A number, a date or two names: a name alone is mostly the user's, addressed.
			if sc := salienceOf(s, false); sc >= 2 && sc > bestScore && !question(s) {
				best, bestScore = s, sc
			}
		case salience(s) > 0:
			salient = append(salient, s)
			*seen = append(*seen, key)
		case len(other) == 0 && says(s) >= 2:
			other = append(other, s)
		}
	}
	switch {
	case assistant && best != "":
		*seen = append(*seen, sentenceKey(best))
		return []string{best}
	case assistant:
		return nil
	case len(salient) == 0 && len(other) > 0:
		*seen = append(*seen, sentenceKey(other[0]))
		return other
	}
	return salient
}

// summarizeWithin runs sum within maxTokens.
func summarizeWithin(ctx context.Context, sum Summarizer, previous string, turns []Turn, maxTokens int) (string, error) {
	if b, ok := sum.(BudgetSummarizer); ok {
		s, err := b.SummarizeWithin(ctx, previous, turns, maxTokens)
		if err != nil {
			return "", err
		}
		if EstimateTokens(s) <= maxTokens {
			return s, nil
		}
		return fitSummary(strings.Split(s, "\n"), maxTokens), nil
	}
	s, err := sum.Summarize(ctx, previous, turns)
	if err != nil {
		return "", err
	}
	return fitSummary(strings.Split(s, "\n"), maxTokens), nil
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// splitOn splits s after each of the delimiter runes, trimming the pieces and dropping empty ones.
func splitOn(s, delims string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if strings.ContainsRune(delims, r) {
			end := i + utf8.RuneLen(r)
			if p := strings.TrimSpace(s[start:end]); p != "" {
				out = append(out, p)
			}
			start = end
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}

// Cue words: decisions, preferences, plans, negations, and dates and times. English ones match
// whole lower-cased words; Chinese ones match as substrings.
var (
	cueWords = wordSet(`decide decided decision agree agreed plan plans planned will won't shall going prefer prefers
		preferred like likes liked love loves hate hates dislike dislikes allergic allergy want wants need needs must
		always never not no don't doesn't didn't isn't can't cannot favourite favorite remember deadline due booked
		book moved move cancel cancelled canceled budget price cost owes paid chose choose instead only`)
	dateWords = wordSet(`january february march april may june july august september october november december
		jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
		today tomorrow yesterday tonight morning afternoon evening noon midnight week weekend month year am pm o'clock`)
	cueCJK = []string{"决定", "同意", "打算", "计划", "喜欢", "爱", "讨厌", "偏好", "过敏", "想要", "要", "需要", "必须", "总是",
		"从不", "不", "没", "别", "最", "记得", "截止", "预订", "订", "改到", "取消", "预算", "价格", "只", "换成"}
	dateCJK = []string{"年", "月", "日", "号", "周", "星期", "今天", "明天", "后天", "昨天", "上午", "下午", "晚上", "早上", "中午", "点", "分钟"}
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// salience scores a piece of text: numbers and dates 2, cue words 2, names 1.
func salience(s string) int { return salienceOf(s, true) }

// salienceOf scores a piece of text: numbers and dates 2, names 1, and with cues, cue words 2.
func salienceOf(s string, cues bool) int {
	score := 0
	// Chinese numerals without 一, which is in too many words (一下, 一起, 想一想).
	if strings.ContainsFunc(s, unicode.IsDigit) || strings.ContainsAny(s, "二三四五六七八九十百千万两") {
		score += 2
	}
	for _, d := range dateCJK {
		if strings.Contains(s, d) {
			score += 2
			break
		}
	}
	for _, c := range cueCJK {
		if cues && strings.Contains(s, c) {
			score += 2
			break
		}
	}
	for i, w := range words(s) {
		lw := strings.ToLower(w)
		switch {
		case cues && (cueWords[lw] || strings.HasSuffix(lw, "n't")):
			score += 2
		case dateWords[lw]:
			score += 2
		case i > 0 && isName(w):
			score++
		}
	}
	return score
}

// words splits s into words of letters, digits, apostrophes and inner punctuation of numbers.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == ':' || r == '/' || r == '-' || r == '.' || r == '$' || r == '€' || r == '%')
	})
}

func isName(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && !notNames[w]
}

// notNames are capitalized words that are not names wherever they stand.
var notNames = map[string]bool{"I": true, "I'm": true, "I'll": true, "I've": true, "I'd": true, "OK": true}

// keyWords returns the salient words of s in order: numbers, dates, names, cue words, and the
// runs of CJK text around Chinese cues and numbers.
func keyWords(s string) []string {
	var out []string
	for _, sent := range sentences(s) {
		for i, w := range words(sent) {
			w = strings.Trim(w, ".:-/'’")
			if w == "" {
				continue
			}
			lw := strings.ToLower(w)
			if strings.ContainsFunc(w, unicode.IsDigit) || dateWords[lw] || cueWords[lw] || strings.HasSuffix(lw, "n't") ||
				(i > 0 && isName(w)) || (hasCJK(w) && salience(w) > 0) {
				out = append(out, w)
			}
		}
	}
	return out
}

func hasCJK(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// shorten fits one "role: text" line into n estimated tokens: its most salient clauses in their
// order, else its salient words, else its start; "…" marks what was cut.
func shorten(line string, n int) string {
	if EstimateTokens(line) <= n {
		return line
	}
	role, text, ok := strings.Cut(line, ": ")
	if !ok {
		role, text = "", line
	}
	head := ""
	if role != "" {
		head = role + ": "
	}
	room := n - EstimateTokens(head) - 1 // one for the ellipsis
	var clauses []string
	for _, sent := range sentences(text) {
		clauses = append(clauses, splitOn(sent, ",，、")...)
	}
	order := make([]int, len(clauses))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return salience(clauses[b]) - salience(clauses[a]) })
	var keep []int
	used := 0
	for _, i := range order {
		if salience(clauses[i]) == 0 {
			break
		}
		if t := EstimateTokens(clauses[i]) + 1; used+t <= room {
			keep = append(keep, i)
			used += t
		}
	}
	if len(keep) > 0 {
		slices.Sort(keep)
		parts := make([]string, len(keep))
		for j, i := range keep {
			parts[j] = clauses[i]
		}
		return head + strings.Join(parts, " ") + "…"
	}
	var kw []string
	used = 0
	for _, w := range keyWords(text) {
		if t := EstimateTokens(w) + 1; used+t <= room {
			kw = append(kw, w)
			used += t
		}
	}
	if len(kw) > 0 {
		return head + strings.Join(kw, " ") + "…"
	}
	r := []rune(text)
	lo, hi := 0, len(r)
	for lo < hi { // the longest prefix that fits
		mid := (lo + hi + 1) / 2
		if EstimateTokens(string(r[:mid])) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return head + string(r[:lo]) + "…"
}

func linesTokens(lines []string) int {
	n := 0
	for _, l := range lines {
		n += EstimateTokens(l) + 1
	}
	return n
}

// minLineTokens is the smallest cap fitSummary gives a line before it folds old lines together.
const minLineTokens = 8

// fitSummary fits lines into maxTokens (see the comment at the top of this file); the result
// never exceeds maxTokens (a budget too small for even one folded line gets its start).
func fitSummary(lines []string, maxTokens int) string {
	return cutTokens(fitLines(lines, maxTokens), max(maxTokens, 0))
}

func fitLines(lines []string, maxTokens int) string {
	lines = slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.TrimSpace(l) == "" })
	if linesTokens(lines) <= maxTokens {
		return strings.Join(lines, "\n")
	}
	capped := func(ls []string, c int) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = shorten(l, c)
		}
		return out
	}
	longest := 0
	for _, l := range lines {
		longest = max(longest, EstimateTokens(l))
	}
	// The largest per-line cap that fits.
	lo, hi := minLineTokens, longest
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if linesTokens(capped(lines, mid)) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if out := capped(lines, lo); linesTokens(out) <= maxTokens {
		return strings.Join(out, "\n")
	}
	// Fold the oldest lines into one until the rest fits at the smallest cap.
	for k := 2; k <= len(lines); k++ {
		rest := capped(lines[k:], minLineTokens)
		room := maxTokens - linesTokens(rest) - 1
		if room < minLineTokens && k < len(lines) {
			continue
		}
		return strings.Join(append([]string{fold(lines[:k], max(room, 1))}, rest...), "\n")
	}
	return fold(lines, maxTokens)
}

// fold renders lines as one "earlier: ..." line of their salient words (each once), in n
// estimated tokens; "…" marks words left out. A folded line folds again with its words.
func fold(lines []string, n int) string {
	seen := map[string]bool{}
	var kw []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			kw = append(kw, w)
		}
	}
	for _, l := range lines {
		if tail, ok := foldedWords(l); ok {
			for _, w := range strings.Fields(strings.TrimSuffix(tail, "…")) {
				add(w)
			}
			continue
		}
		_, text, ok := strings.Cut(l, ": ")
		if !ok {
			text = l
		}
		for _, w := range keyWords(text) {
			add(w)
		}
	}
	room := n - EstimateTokens(foldPrefix) - 1
	var keep []string
	used := 0
	for _, w := range kw {
		t := EstimateTokens(w) + 1
		if used+t > room {
			return foldPrefix + strings.Join(keep, " ") + "…"
		}
		keep = append(keep, w)
		used += t
	}
	return foldPrefix + strings.Join(keep, " ")
}

// foldedWords returns the words of a fold line: "earlier: words" or, as summaries before merged
// lines wrote it, "earlier (N turns): words".
func foldedWords(l string) (string, bool) {
	if tail, ok := strings.CutPrefix(l, foldPrefix); ok {
		return tail, true
	}
	if rest, ok := strings.CutPrefix(l, legacyFold); ok {
		if c, tail, ok := strings.Cut(rest, " turns): "); ok {
			if _, err := strconv.Atoi(c); err == nil {
				return tail, true
			}
		}
	}
	return "", false
}

// cutTokens cuts s to its longest prefix of at most n estimated tokens.
func cutTokens(s string, n int) string {
	if EstimateTokens(s) <= n {
		return s
	}
	r := []rune(s)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if EstimateTokens(string(r[:mid])) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(r[:lo])
}
