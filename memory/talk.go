package memory

import (
	"slices"
	"strings"
	"unicode"
)

// What a sentence of a conversation carries, for the extractive summary (summary.go) and the
// built-in distiller (distillrules.go), English and Chinese:
//
//   - smallTalk: greetings, thanks, acknowledgements, laughter, pleasantries and assistant
//     boilerplate ("haha ok", "lol", "Thanks!", "Nice to meet you, Alex! I'll remember that.",
//     "好的，我记住了") — every word is phatic or a function word, or the name it addresses;
//   - contentWords: the words that say something (not function words, pronouns, phatic words or
//     conversational verbs such as think, know, hope), with names and numbers;
//   - question: a sentence that asks;
//   - sameSentence: near-identical sentences (the assistant's repeated lines).

// talkWords are English words that carry nothing on their own: function words, pronouns,
// auxiliaries, and the vocabulary of greetings, thanks, acknowledgement and boilerplate.
var talkWords = wordSet(`
	i i'm im i'll i've ive i'd me my mine myself you you're youre you'll you've you'd your yours u ur ya
	we we're we'll we've we'd us our ours it it's its that that's thats this these those there there's here
	he she him her his they them their what's whats
	is are was were be been being am do does did doing done can could would should will shall may might must
	have has had having get gets got getting go goes going gonna wanna let let's lets
	the a an to of for in on at with and or but so as by from about into out up down off over just also too
	all any some not no don't dont doesn't didn't isn't aren't wasn't won't can't cannot if then than very really
	much many lot lots more most such still even again well anyway anyways though
	hi hello hey heya hiya yo howdy bye goodbye cya later goodnight night morning evening afternoon day
	thanks thank thx ty tysm cheers welcome appreciate appreciated pleasure please sorry
	ok okay k kk alright right sure yes yeah yep yup yah nope nah
	haha hahaha hahahaha hah lol lmao rofl hehe heh xd hmm hm um umm uh uhh oh ah aw aww ooh wow whoa oops yay omg
	cool nice great awesome amazing perfect wonderful fantastic excellent lovely sweet neat fun funny interesting
	good fine glad happy meet see sounds sound makes make sense agree agreed true exactly indeed totally
	absolutely definitely course np problem problems worries worry noted understood gotcha
	remember note keep mind know need needs anything else something help helping assist ask asking feel free anytime
	hope hoping same wish wishing care take how what whenever talking luck posted things thing stuff happening
	super truly pretty quite kinda sorta literally honestly seriously`)

// fillerVerbs are the words of talking about the conversation itself ("I think so", "I have a
// question", "I'm not sure", "I'm so proud of you"), which make no fact about the speaker.
var fillerVerbs = wordSet(`think thought guess mean meant suppose believe wonder wondering wondered
	question questions curious talk talking chat chatting tell telling say saying said try trying
	proud excited thrilled touched sad sorry honored grateful thankful blessed lucky stoked hopeful optimistic`)

// firstPerson are the English words that make a sentence the speaker's statement about
// themselves (with "me" unless the sentence is a request: "Give me a recipe").
var firstPerson = wordSet(`i i'm im i've ive i'll i'd my mine myself me we we're we've we'll we'd our ours ourselves`)

// requestVerbs open requests to the assistant, whose "me" is not a statement about the speaker.
var requestVerbs = wordSet(`give tell show help let remind send find write make explain list recommend suggest
	can could would will please get book check look search`)

// zhPhatic are Chinese phrases and particles of small talk and boilerplate, longest first.
var zhPhatic = sortedByLength(strings.Fields(`
	哈哈哈哈 哈哈哈 哈哈 呵呵 嘿嘿 嘻嘻 嗯嗯 嗯 哦哦 哦 噢 喔 啊 呀 吧 呢 嘛 啦 了 哟 哇 诶 欸
	好的好的 好的呀 好的 好滴 好吧 好呀 好啊 好嘞 好 行 可以 对对 对的 对 是的 是啊 是 没问题 没事 没关系
	谢谢你 谢谢 多谢 感谢 不客气 不用谢 你好 您好 嗨 早上好 早安 晚上好 晚安 再见 拜拜 回头见
	明白了 明白 知道了 知道 收到 了解 懂了 懂 记住了 记住 记下了 记下 会记得 记得了 太好了 太棒了 真棒 厉害 不错 有意思
	很高兴认识你 很高兴 高兴 认识你 认识 随时 问我 帮你 帮忙 为你 有什么 需要 的话 欢迎 加油 辛苦了 辛苦
	我们 我 你们 你 您 也 很 真 挺 太 都 还 就 会 一定`))

// zhFiller are Chinese words of talking about the conversation or the speaker's mood, dropped
// before counting what a sentence says.
var zhFiller = sortedByLength(strings.Fields(`
	咱们 我们 我的 俺 本人 我 你们 你 您 他们 她们 他 她 它 这个 那个 这 那 就是 就 也 都 还 很 挺 真 太 又 才 再
	觉得 认为 知道 明白 想想 看看 同意 不太确定 不确定 确定 其实 说 一下 有点
	是 的 了 啊 呀 吧 呢 嘛 啦 哦 嗯 哈 呵 哇 着 过 吗`))

// zhValueChars are the Chinese numerals, which sameSentence treats as values.
const zhValueChars = "零〇一二两三四五六七八九十百千万亿半"

// zhFirstPerson make a Chinese sentence the speaker's statement about themselves.
var zhFirstPerson = []string{"我", "咱们", "俺", "本人"}

func sortedByLength(ws []string) []string {
	slices.SortStableFunc(ws, func(a, b string) int { return len([]rune(b)) - len([]rune(a)) })
	return ws
}

// talkTokens splits s into lower-case English words (letters, digits and inner apostrophes,
// with ’ read as ') and reports, for each, whether it was capitalized.
func talkTokens(s string) (toks []string, caps []bool) {
	s = strings.ReplaceAll(s, "’", "'")
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'') || unicode.Is(unicode.Han, r)
	}) {
		w = strings.Trim(w, "'")
		if w == "" {
			continue
		}
		first := []rune(w)[0]
		toks = append(toks, strings.ToLower(w))
		caps = append(caps, unicode.IsUpper(first))
	}
	return toks, caps
}

// stripZh removes the phrases of list from the Han text of s (longest first) and returns the
// Han characters left.
func stripZh(s string, list []string) string {
	var han strings.Builder
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			han.WriteRune(r)
		}
	}
	rest := han.String()
	for _, p := range list {
		rest = strings.ReplaceAll(rest, p, "")
	}
	return rest
}

func hasFirstPerson(s string) bool {
	toks, _ := talkTokens(s)
	for i, t := range toks {
		switch {
		case t == "me":
			if !requestVerbs[toks[0]] || (i > 0 && toks[i-1] == "call") {
				return true
			}
		case firstPerson[t]:
			return true
		}
	}
	for _, p := range zhFirstPerson {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// smallTalk reports whether a sentence says nothing: every English word is a talk word (or a
// name it addresses, when the sentence is not about the speaker: "Thanks, Sam!"), and its
// Chinese is phatic phrases only. A number makes a sentence more than small talk.
func smallTalk(s string) bool {
	toks, caps := talkTokens(s)
	self := hasFirstPerson(s)
	for i, t := range toks {
		if talkWords[t] || (!self && (t == "today" || t == "tonight" || t == "tomorrow")) {
			continue // "See you tomorrow!"
		}
		if i > 0 && caps[i] && !self && !dateWords[t] && !strings.ContainsFunc(t, unicode.IsDigit) {
			continue // a name addressed: "Nice to meet you, Alex!"
		}
		return false
	}
	return stripZh(s, zhPhatic) == ""
}

// contentWords returns what a sentence says beyond talk: its English words that are neither
// talk words nor filler verbs, and its Chinese characters outside pronouns, particles and
// filler, as one string per English word and one for the Chinese rest.
func contentWords(s string) []string {
	toks, _ := talkTokens(s)
	var out []string
	for _, t := range toks {
		if (!talkWords[t] || strings.ContainsFunc(t, unicode.IsDigit)) && !fillerVerbs[t] {
			out = append(out, t)
		}
	}
	if zh := stripZh(s, zhFiller); zh != "" {
		out = append(out, zh)
	}
	return out
}

// informative reports whether a sentence says enough to remember: an English content word (a
// name or number is one), or at least two Chinese characters beyond pronouns and particles.
func informative(s string) bool {
	for _, w := range contentWords(s) {
		if !hasCJK(w) || len([]rune(w)) >= 2 {
			return true
		}
	}
	return false
}

// questionWords open English questions; a sentence that opens with one and addresses "you"
// asks even without its question mark ("do you know a good dentist").
var questionWords = wordSet(`what when where who whom whose which why how do does did can could would will should is are was were have has`)

// question reports whether a sentence asks: it ends with ? or ？ (before closing quotes), ends
// with the Chinese question particles 吗 or 呢, or opens with a question word followed by you.
func question(s string) bool {
	t := strings.TrimRight(s, " \t\"'”’」』)）】.。…")
	if strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？") || strings.HasSuffix(t, "吗") || strings.HasSuffix(t, "呢") {
		return true
	}
	toks, _ := talkTokens(s)
	return len(toks) >= 2 && questionWords[toks[0]] && (toks[1] == "you" || toks[1] == "u")
}

// sentenceKey is what sameSentence compares: the lower-case English words and the Chinese
// characters of a sentence, as a sorted set.
func sentenceKey(s string) []string {
	toks, _ := talkTokens(s)
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			toks = append(toks, string(r))
		}
	}
	slices.Sort(toks)
	return slices.Compact(toks)
}

// sameSentence reports whether two sentence keys are near-identical: they share at least 80% of
// their words (Jaccard) and the same numbers and dates, so a sentence that changes a value is
// never a repeat of the one it changes.
func sameSentence(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	value := func(w string) bool {
		return strings.ContainsFunc(w, unicode.IsDigit) || dateWords[w] || (w != "" && strings.Contains(zhValueChars, w))
	}
	common := 0
	for _, w := range a {
		if _, ok := slices.BinarySearch(b, w); ok {
			common++
		} else if value(w) {
			return false
		}
	}
	for _, w := range b {
		if _, ok := slices.BinarySearch(a, w); !ok && value(w) {
			return false
		}
	}
	return float64(common) >= 0.8*float64(len(a)+len(b)-common)
}
