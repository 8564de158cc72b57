package memory

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/keyword"
)

// RuleDistiller is the built-in Distiller: no model, deterministic, English and Chinese. It only
// adds; updating and deleting is left to Remember's near-duplicate merge and supersede rules, or
// to a model-backed Distiller. From each turn of a speaker (any role but assistant, system,
// tool, function, model, bot, ai or developer: assistant turns never make memories, their
// restatements of the user's facts and their boilerplate least of all) it keeps the sentences
// (see sentences) that
//
//   - are statements, not questions (? ？ 吗 呢, or a question word followed by "you");
//   - are not small talk (smallTalk: "haha ok", "lol", "Thanks!", "好的", "我也是");
//   - are about the speaker: a first-person word (I, I'm, my, me, we, our; 我, 咱们, 俺, 本人)
//     and something beyond talk (informative: "I'm vegan", "我不喝咖啡"; not "I think so",
//     "I'm not sure", "我知道了"), and not a wish or thanks to the listener ("I hope you...",
//     "I love your idea"); or a correction ("Actually, ...", "No, it's ...", "I meant ...",
//     "no longer", "instead"; 其实, 不对, 更正, 应该是, 改成, 换成, 不是…而是) that says at
//     least two things;
//
// with the sentences right after a kept one that continue it ("It's a tabby.", "They're 5 and
// 7.", 他们…, 而且…). Leading small talk is cut off a kept sentence ("Haha ok, so I'm Alex" gives
// "I'm Alex"). Each kept sentence, with its continuations, is one add, in order, with its turn;
// a speaker other than user or human is named ("Caroline: I went to a support group"). A text
// already in DistillInput.Existing, or proposed earlier in the same input, is not proposed again.
type RuleDistiller struct{}

// Distill implements Distiller.
func (RuleDistiller) Distill(_ context.Context, in DistillInput) ([]Proposal, error) {
	seen := map[string]bool{}
	circle := map[string]bool{}
	for _, m := range in.Existing {
		seen[strings.ToLower(oneLine(m.Text))] = true
		addCircle(circle, m.Text)
	}
	var out []Proposal
	for i, t := range in.Turns {
		role := strings.ToLower(strings.TrimSpace(t.Role))
		if notSpeakers[role] {
			continue
		}
		for _, text := range selfStatements(t.Text, circle) {
			if role != "" && role != "user" && role != "human" {
				text = oneLine(t.Role) + ": " + text
			}
			if k := strings.ToLower(text); !seen[k] {
				seen[k] = true
				out = append(out, Proposal{Event: EventAdd, Text: text, Turn: i})
			}
		}
	}
	return out, nil
}

// notSpeakers are the roles whose turns the built-in distiller never reads.
var notSpeakers = wordSet(`assistant system tool function model bot ai developer`)

// selfStatements returns the sentences of a speaker's turn worth remembering (see
// RuleDistiller). circle holds the names of the people and animals the speaker has introduced
// as theirs ("my sister Jenna"); a sentence about one of them counts as a statement, and the
// names of kept statements join it.
func selfStatements(text string, circle map[string]bool) []string {
	text = strings.ReplaceAll(text, keyword.ContextSeparator, " ")
	var out []string
	cur := -1      // the statement a continuation joins
	asked := false // the previous sentence asked: what follows is part of the question
	for _, s := range sentences(text) {
		s = oneLine(s)
		if question(s) {
			cur, asked = -1, true
			continue
		}
		if smallTalk(s) || metaCorrection(s) {
			cur = -1
			continue
		}
		orig := s
		s = trimTalk(s)
		switch {
		case asked && !opensWithSelf(s):
			cur = -1
		case statement(s) || (correction(orig) && says(s) >= 2) || aboutCircle(s, circle):
			out = append(out, s)
			cur = len(out) - 1
			addCircle(circle, s)
		case cur >= 0 && continues(s) && informative(s):
			out[cur] = joinSentences(out[cur], s)
		default:
			cur = -1
		}
		asked = false
	}
	return out
}

// joinSentences joins two sentences with a space, or none between Chinese ones.
func joinSentences(a, b string) string {
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	if unicode.Is(unicode.Han, rb) && (unicode.Is(unicode.Han, ra) || strings.ContainsRune("。！？；，", ra)) {
		return a + b
	}
	return a + " " + b
}

// opensWithSelf reports whether a sentence starts with a first-person word (after a question,
// "Something quiet where I could read." is still the question; "I'm on a budget." is not).
func opensWithSelf(s string) bool {
	toks, _ := talkTokens(s)
	if len(toks) > 0 && firstPerson[toks[0]] && toks[0] != "me" {
		return true
	}
	for _, p := range zhFirstPerson {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// metaCorrection reports whether a sentence only says the speaker erred ("I mixed up the dates.",
// "My bad.", "上次说错了。"), which the correction it goes with already says.
func metaCorrection(s string) bool {
	toks, _ := talkTokens(s)
	has := func(ws ...string) bool {
		for _, w := range ws {
			if !slices.Contains(toks, w) {
				return false
			}
		}
		return true
	}
	if len(toks) > 0 && len(toks) <= 6 && (has("mixed", "up") || has("misspoke") || has("my", "bad") || has("made", "mistake") ||
		has("got", "confused") || has("typo")) {
		return true
	}
	rest := s
	for _, p := range []string{"说错了", "记错了", "搞错了", "写错了", "打错了", "上次", "刚才", "之前", "我"} {
		rest = strings.ReplaceAll(rest, p, "")
	}
	return rest != s && stripZh(rest, zhFiller) == ""
}

// circleTitles are the words between "my" and a name that are not the name ("my manager, Ms.
// Alvarez").
var circleTitles = wordSet(`mr mrs ms miss dr prof`)

// addCircle adds to circle the capitalized names within four words after "my" or "our" in s
// ("my sister Jenna", "my dog Biscuit", "my manager is Ms. Alvarez").
func addCircle(circle map[string]bool, s string) {
	toks, caps := talkTokens(s)
	for i, t := range toks {
		if t != "my" && t != "our" {
			continue
		}
		for j := i + 1; j < len(toks) && j <= i+4; j++ {
			if caps[j] && !circleTitles[toks[j]] && !firstPerson[toks[j]] && !dateWords[toks[j]] {
				circle[toks[j]] = true
			}
		}
	}
}

// aboutCircle reports whether a sentence's subject is someone the speaker introduced as theirs
// ("Jenna is a high school teacher.") and it says something about them.
func aboutCircle(s string, circle map[string]bool) bool {
	toks, caps := talkTokens(s)
	return len(toks) > 1 && caps[0] && circle[toks[0]] && says(s) >= 3
}

// statement reports whether a sentence is the speaker's statement about themselves, or a
// correction (see RuleDistiller).
func statement(s string) bool {
	if !informative(s) {
		return false
	}
	if hasFirstPerson(s) && !toListener(s) {
		return true
	}
	return correction(s) && says(s) >= 2
}

// says counts what a sentence says: its English content words, and a Chinese rest of two
// characters or more as one thing per two characters.
func says(s string) int {
	n := 0
	for _, w := range contentWords(s) {
		if hasCJK(w) {
			n += len([]rune(w)) / 2
		} else {
			n++
		}
	}
	return n
}

// Words of English corrections: at the start of a sentence, or anywhere.
var (
	correctionOpeners = wordSet(`actually correction sorry wait oops no nope not`)
	correctionPhrases = []string{"i meant", "i mean", "no longer", "not anymore", "instead", "rather than", "changed to", "switched to", "moved to"}
	zhTurnCorrections = []string{"其实", "不对", "更正", "说错了", "应该是", "改成", "换成", "改到", "改为", "搬到", "推迟", "提前", "取消", "不再", "而是"}
)

func correction(s string) bool {
	toks, _ := talkTokens(s)
	if len(toks) > 0 && correctionOpeners[toks[0]] {
		if toks[0] == "actually" || toks[0] == "correction" {
			return true
		}
		// "No, ..." and "Sorry, ..." correct only with a value or a contrast: "No, it's on
		// May 14, not May 12", not "No doubts, Caroline".
		for i, t := range toks[1:] {
			if strings.ContainsFunc(t, unicode.IsDigit) || dateWords[t] || (i > 0 && (t == "not" || strings.HasSuffix(t, "n't"))) {
				return true
			}
		}
	}
	l := " " + strings.Join(toks, " ") + " "
	for _, p := range correctionPhrases {
		if strings.Contains(l, " "+p+" ") {
			return true
		}
	}
	for _, p := range zhTurnCorrections {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Feelings towards the listener: "I hope you...", "I love your idea", "I'd love to hear about
// your trip".
var listenerVerbs = wordSet(`hope wish appreciate thank thanks miss love like bet agree admire hear understand
	know believe think admire envy owe trust`)

// toListener reports whether a first-person sentence is the speaker's feeling about the
// listener rather than a fact about themselves: it addresses you or your, has no my, our or
// mine, and its first-person subject is followed by a verb of feeling.
func toListener(s string) bool {
	toks, _ := talkTokens(s)
	you, mine := false, false
	for _, t := range toks {
		switch t {
		case "you", "your", "yours", "u", "ur", "you're", "you've", "you'll":
			you = true
		case "my", "mine", "our", "ours", "myself":
			mine = true
		}
	}
	if !you || mine {
		return false
	}
	if !slices.ContainsFunc(toks, func(t string) bool { return firstPerson[t] && t != "me" && t != "myself" }) {
		return true // "Your words mean a lot to me.", "Thanks for letting me join your journey."
	}
	for i, t := range toks {
		if t != "i" && t != "we" && t != "i'd" && t != "we'd" {
			continue
		}
		for j := i + 1; j < len(toks) && j <= i+3; j++ {
			switch {
			case listenerVerbs[toks[j]]:
				return true
			case toks[j] == "really" || toks[j] == "so" || toks[j] == "just" || toks[j] == "also" || toks[j] == "would" || toks[j] == "do" || toks[j] == "totally":
				continue
			}
			break
		}
	}
	return false
}

// continuers open sentences that go on about what the previous one said.
var continuers = wordSet(`it it's its they they're their them she she's her he he's his that this these those there
	which also and but so plus both`)

var zhContinuers = []string{"他", "她", "它", "这", "那", "而且", "但是", "所以", "并且", "还有", "也"}

func continues(s string) bool {
	toks, _ := talkTokens(s)
	if len(toks) > 0 && continuers[toks[0]] {
		return true
	}
	for _, p := range zhContinuers {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// leadTalk are words cut off the start of a kept sentence.
var leadTalk = wordSet(`haha hahaha lol lmao ok okay oh ah well so yeah yes yep no nope um uh hmm btw anyway hey hi hello also`)

// trimTalk cuts leading small talk off a sentence: comma-separated pieces that are small talk
// ("Haha ok, ", "哈哈，好的，"), "by the way", a short label ("Big news: "), and interjections
// ("lol I'm ..."), keeping at least a statement; and trailing laughter and "by the way".
func trimTalk(s string) string {
	orig := s
	for {
		i := strings.IndexAny(s, ",，")
		if i < 0 {
			break
		}
		head, rest := s[:i], strings.TrimSpace(s[i+len(string([]rune(s[i:])[0])):])
		if rest == "" || !(smallTalk(head) || strings.EqualFold(strings.TrimSpace(head), "by the way")) {
			break
		}
		s = rest
	}
	// A short label: "Big news: I moved ...", "Update: my flight ...".
	if head, rest, ok := strings.Cut(s, ": "); ok && len(strings.Fields(head)) <= 3 && !hasFirstPerson(head) &&
		!strings.ContainsFunc(head, unicode.IsDigit) && hasFirstPerson(rest) && statementLike(rest) {
		s = strings.TrimSpace(rest)
	}
	for {
		w, rest, ok := strings.Cut(s, " ")
		if !ok || !leadTalk[strings.ToLower(strings.Trim(w, ",.!"))] || !statementLike(rest) {
			break
		}
		s = strings.TrimSpace(rest)
	}
	for _, tail := range []string{", by the way", " by the way", ", btw", " btw", " lol", " haha", " hahaha", " lmao", " xd", " :)", " :d"} {
		body := strings.TrimRight(s, ".!")
		if strings.HasSuffix(strings.ToLower(body), tail) && strings.TrimSpace(body[:len(body)-len(tail)]) != "" {
			s = strings.TrimSpace(body[:len(body)-len(tail)]) + s[len(body):]
		}
	}
	if s != orig {
		if r, n := utf8.DecodeRuneInString(s); unicode.IsLower(r) && r < utf8.RuneSelf {
			if o, _ := utf8.DecodeRuneInString(orig); unicode.IsUpper(o) || strings.HasPrefix(s, "i ") {
				s = string(unicode.ToUpper(r)) + s[n:]
			}
		}
	}
	return s
}

// statementLike reports whether what is left after cutting an interjection still says something.
func statementLike(s string) bool { return informative(s) && !smallTalk(s) }
