package memory

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/keyword"
	"golang.org/x/text/unicode/norm"
)

// A sketch is what supersede detection (supersede.go) and the recall-time conflict check
// (current.go) read from a memory's text, in English and Chinese, without a model:
//
//   - terms: what the text is about, its salient index terms: stemmed English words of three
//     letters or more that are neither stopwords, question words, numbers, date words nor
//     generic words, and Chinese character pairs without a function character (的, 了, 是,
//     我 ...) that are not generic either (现在, 今天, 工作 ...). Two texts share a term when the
//     terms are equal or, for English terms of four letters or more, one starts the other
//     ("read" and "reader") or, from five letters, ends it (compounds: "ticket" and
//     "dayticket"); shared Chinese pairs that chain count one term per two characters (shared);
//   - attributes: which kinds of personal fact the text states (where one lives, work, a
//     relationship, diet, drinks, medication, transport, a membership, a provider, rent, a name,
//     a birthday, a class, a sport), from a small bilingual lexicon (attributeLexicon), with the
//     events that change some of them by themselves (moving house, a new job, an engagement);
//   - values: typed values (phone numbers, times of day, amounts of money, dates, weekdays,
//     quantities with a unit, other numbers) and the parity of negations (facts.go);
//   - subject: who the text says at its start that it is about: the user ("I", "my", 我), a
//     person ("my sister", "Mum", "Tom's", 我妹妹, 雨桐的), or no one in particular;
//   - cue: how strongly the text announces a change: strong ("no longer", "switched to",
//     "moved", "cancelled", "correction", "actually", "my new", "sold", 不再, 改成, 换成, 搬到,
//     取消, 其实, 记错, 已经不 ...), weak ("now", "since", "from July 1", "starting", 现在, 开始,
//     新家 ...), or none; a cue inside a clause that only dates something ("after moving",
//     搬家以后) does not count. Corrections ("correction", "actually", "turns out", 其实, 记错),
//     ends of habits ("gave up", "no longer", 不再, 戒了), quantity verbs ("raised to", 涨到),
//     intentions ("thinking about", 打算) and additions ("also", 也) are marked apart.
type sketch struct {
	terms      []string
	attrs      uint32
	events     uint32 // attributes changed by an event the text reports (eventsOf)
	values     map[valueKind][]string
	negations  int
	names      []string // capitalized English names and Chinese surname pairs (facts.go)
	subject    string   // who the text is about: "I" (the user, explicitly), a person word, or "" (unknown)
	attrCount  map[int]int
	cue        cueStrength
	correction bool
	addition   bool // "also", "too", "as well", 也, 还有, 另外: adds a fact rather than changing one
	hedge      bool // "thinking about", "might", "maybe", 考虑, 打算, 可能: an intention, not a fact
	stop       bool // ends a habit or state ("gave up", "no longer", "sold", 不再, 戒了, 取消): a negation of the old fact
	valueCue   bool // a verb that changes a quantity: "raised to", "went up", 涨到, 降到
}

type cueStrength int

const (
	cueNone cueStrength = iota
	cueWeak
	cueStrong
)

type valueKind int

const (
	valueTime valueKind = iota
	valueMoney
	valueQuantity
	valueDate
	valueWeekday
	valuePhone
	valueNumber
)

// sketchCacheSize bounds Store.sketch's cache (entries; cleared whole when full).
const sketchCacheSize = 4096

// sketch returns the sketch of text, from a cache: the memories that detection and recall
// compare come back again and again, and a sketch takes tens of microseconds. The result is
// shared: callers must not modify it.
func (s *Store) sketch(text string) *sketch {
	s.skMu.Lock()
	sk, ok := s.sketches[text]
	s.skMu.Unlock()
	if ok {
		return sk
	}
	x := sketchOf(text)
	s.skMu.Lock()
	if s.sketches == nil || len(s.sketches) >= sketchCacheSize {
		s.sketches = make(map[string]*sketch)
	}
	s.sketches[text] = &x
	s.skMu.Unlock()
	return &x
}

func sketchOf(text string) sketch {
	text = norm.NFKC.String(text)
	lower := strings.ToLower(text)
	f := factsOf(text)
	sk := sketch{negations: f.negations, values: valuesOf(lower), names: f.names}
	seen := map[string]bool{}
	for _, t := range keyword.Tokens(text) {
		if seen[t] || !salient(t) {
			continue
		}
		seen[t] = true
		sk.terms = append(sk.terms, t)
	}
	sk.attrs, sk.attrCount = attributesOf(lower)
	sk.events = eventsOf(lower)
	sk.subject = subjectOf(text, lower)
	sk.cue, sk.correction = cueOf(lower)
	sk.addition = additionRE.match(lower) || containsAny(lower, zhAdditions)
	sk.hedge = hedgeRE.match(lower) || containsAny(lower, zhHedges)
	sk.stop = enStopCues.match(lower) || containsAny(lower, zhStopCues) || strings.Contains(lower, "不") && zhNotLePattern.MatchString(lower)
	sk.valueCue = valueCueRE.match(lower) || containsAny(lower, zhValueCues)
	return sk
}

// strongCue reports whether text announces a change strongly: the cue of its sketch,
// without the rest.
func strongCue(text string) bool {
	c, _ := cueOf(strings.ToLower(norm.NFKC.String(text)))
	return c == cueStrong
}

// salient reports whether an index term says what a text is about.
func salient(t string) bool {
	if keyword.IsQueryStopword(t) || genericTerms[t] || zhGeneric[t] {
		return false
	}
	r, size := utf8.DecodeRuneInString(t)
	if keyword.IsCJK(r) {
		if size == len(t) {
			return false // one character: too ambiguous alone
		}
		for _, c := range t {
			if strings.ContainsRune(zhFunctionChars, c) || strings.ContainsRune(zhNumerals, c) {
				return false
			}
		}
		return true
	}
	if len(t) < 3 || enDates[t] || enNumbers[t] || stemmedDates[t] {
		return false
	}
	return strings.ContainsFunc(t, unicode.IsLetter)
}

// zhGeneric are Chinese words (character pairs) too common in personal notes to say what one
// is about: adverbs, connectives and relative times.
var zhGeneric = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("终于 已经 现在 今天 明天 昨天 今年 明年 去年 早上 上午 中午 下午 晚上 周末 一般 平时 主要 每天 每周 每个 个月 时候 以后 之后 " +
		"因为 所以 但是 还是 就是 觉得 正式 实在 直接 刚刚 刚发 发现 其实 记错 写错 取消 改成 换成 搬到 不再 一下 一起 一直 最近 马上 然后 " +
		"新家 新房 新公 公司 新工 工作") {
		m[w] = true
	}
	return m
}()

// zhFunctionChars are characters that make a Chinese character pair a grammatical one rather
// than a content word.
const zhFunctionChars = "的了是我你们这那就都也还和与及或很吗呢吧啊呀哦嗯着过给把被让个"

var (
	// genericTerms are stemmed English words too common in personal notes to say what one is
	// about.
	genericTerms = stemSet("get", "got", "make", "made", "take", "took", "need", "want", "like", "also", "just", "really",
		"day", "week", "month", "year", "time", "every", "thing", "things", "lot", "much", "many", "well", "still",
		"now", "new", "old", "since", "start", "started", "starting", "again", "back", "way", "keep", "said", "say",
		"told", "tell", "know", "think", "go", "going", "went", "come", "came", "use", "used", "usual", "usually",
		"one", "two", "all", "any", "some", "more", "most", "less", "very", "next", "last", "first", "today",
		"tonight", "tomorrow", "yesterday", "morning", "evening", "night", "each", "per", "around", "about", "after",
		"before", "from", "than", "too", "only", "even", "ever", "never", "always", "sure", "right", "good", "great",
		"nice", "lol", "haha", "okay", "yes", "yeah", "thank", "thanks", "please", "from", "off", "out", "over",
		"anymore", "longer", "actually", "correction", "instead", "switched", "moved", "changed", "cancelled", "canceled")
	// stemmedDates are the date words of facts.go as the keyword index stems them ("july" ->
	// "juli").
	stemmedDates = func() map[string]bool {
		m := map[string]bool{}
		for w := range enDates {
			for _, t := range keyword.Tokens(w) {
				m[t] = true
			}
		}
		return m
	}()
)

// stemSet returns the index terms of words.
func stemSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
		for _, t := range keyword.Tokens(w) {
			m[t] = true
		}
	}
	return m
}

// shared counts the terms of b that a has (see sketch for when two terms match). Chinese
// character pairs that chain in b and all match are a shared run of characters, which counts
// one term per two characters: 羽毛球 (羽毛, 毛球) one, 上海出差 (上海, 海出, 出差) two.
func shared(a, b []string) int {
	n, run := 0, 0 // run: characters of the current chain of matching Chinese pairs
	prev := ""
	for _, y := range b {
		if !slices.ContainsFunc(a, func(x string) bool { return termsMatch(x, y) }) {
			n, run, prev = n+run/2, 0, ""
			continue
		}
		r, _ := utf8.DecodeRuneInString(y)
		switch {
		case !keyword.IsCJK(r):
			n, run = n+run/2+1, 0
		case run > 0 && strings.HasSuffix(prev, string(r)):
			run++
		default:
			n, run = n+run/2, 2
		}
		prev = y
	}
	return n + run/2
}

func termsMatch(x, y string) bool {
	if x == y {
		return true
	}
	if r, _ := utf8.DecodeRuneInString(x); keyword.IsCJK(r) {
		return false
	}
	if len(x) > len(y) {
		x, y = y, x
	}
	return len(x) >= 4 && strings.HasPrefix(y, x) || len(x) >= 5 && strings.HasSuffix(y, x)
}

// Attributes: the kinds of personal fact a text can state. Each has English stems (matched as
// whole words after lowercasing, a trailing * matching any ending) and Chinese words (matched
// as substrings).
type attribute struct {
	name string
	en   []string
	zh   []string
	// events are the phrases that change the attribute by themselves (moving house, a new job,
	// an engagement): an English regular expression, words one of which the text must contain
	// for the expression to run, and Chinese words.
	enEvents string
	zhEvents []string
	enGate   []string
}

var attributeLexicon = []attribute{
	{"residence", []string{"live", "lives", "living", "lived", "address", "apartment", "flat", "moved to", "moved into", "moving to", "moved in",
		"relocated", "neighbourhood", "neighborhood", "landlord", "home"},
		[]string{"住在", "住址", "地址", "搬到", "搬家", "搬去", "搬进", "新家", "小区", "公寓", "住的地方", "同居", "住在一起"},
		`\b(?:moved|moving|relocat(?:ed|ing)) (?:in|to|into|out)\b|\bnew (?:address|place|flat|apartment|house|home)\b`,
		[]string{"搬到", "搬家", "搬去", "搬进", "新家", "新房子", "新地址"}, []string{"mov", "relocat", "new"}},
	{"work", []string{"work", "works", "working", "worked", "job", "jobs", "employer", "company", "office", "role", "position", "career",
		"engineer", "designer", "developer", "nurse", "teacher", "manager", "hired", "offer", "promotion", "promoted", "resigned", "quit",
		"colleague*", "boss", "salary", "startup", "team", "lead"},
		[]string{"工作", "上班", "公司", "岗位", "职位", "经理", "入职", "离职", "辞职", "报到", "跳槽", "转正", "试用期", "工资", "薪", "同事", "领导", "老板", "组长", "开发", "工程师", "老师", "上司"},
		`\bnew job\b|\bquit my job\b|\bresigned\b|\bgot hired\b|\blaid off\b|\b(?:signed|accepted) (?:the|an|a|their) [\w ]{0,30}offer\b|` +
			`\bstart(?:s|ing)? (?:\w+ ){0,3}as (?:a|an|the|their|our|its)\b|\bpromot(?:ed|ion)\b|\blast day at\b|` +
			`\b(?:office|company|firm|team) (?:has )?moved\b|\bmoved offices\b`,
		[]string{"离职", "辞职", "跳槽", "入职", "报到", "新公司", "新工作", "换工作", "升职", "公司搬", "办公室搬", "单位搬"},
		[]string{"new", "quit", "resign", "hired", "laid", "offer", "start", "promot", "last day", "moved"}},
	{"relationship", []string{"married", "marry", "marrying", "marriage", "engaged", "engagement", "wedding", "partner", "boyfriend", "girlfriend",
		"husband", "wife", "fiance", "fiancé", "fiancee", "fiancée", "divorced", "dating", "together", "proposed", "single",
		"seeing someone", "broke up", "split up", "relationship"},
		[]string{"结婚", "订婚", "求婚", "男朋友", "女朋友", "老公", "老婆", "对象", "离婚", "在一起", "同居", "分手", "单身"},
		`\b(?:got|we're|we are|i'm|i am|just) engaged\b|\bproposed\b|\bgot married\b|\bdivorced\b|\bbroke up\b|\bsplit up\b|\bmoved in together\b`,
		[]string{"结婚了", "订婚", "求婚", "离婚", "分手", "住在一起", "同居"},
		[]string{"engaged", "proposed", "married", "divorced", "broke up", "split up", "together"}},
	{"diet", []string{"eat", "eats", "eating", "ate", "vegetarian", "vegan", "meat", "fish", "chicken", "pork", "beef", "diet", "food", "dairy", "gluten"},
		[]string{"吃", "素食", "吃素", "荤", "肉", "忌口", "饮食"}, "", nil, nil},
	{"drink", []string{"coffee", "coffees", "tea", "drink", "drinks", "drinking", "caffeine", "decaf", "latte", "espresso", "cappuccino",
		"americano", "mocha", "macchiato", "flat white", "flat whites", "juice", "alcohol", "beer", "wine", "matcha"},
		[]string{"喝", "咖啡", "茶", "拿铁", "美式", "酒"}, "", nil, nil},
	{"medication", []string{"dose", "dosage", "pill", "pills", "mg", "mcg", "medication", "medicine", "prescription", "prescribed", "tablet", "tablets"},
		[]string{"药", "剂量", "一片", "两片", "处方"}, "", nil, nil},
	{"transport", []string{"commute", "commuting", "bus", "train", "trains", "tram", "streetcar", "subway", "metro", "bike", "cycle", "cycling",
		"car", "drive", "driving", "ticket", "pass", "railcard"},
		[]string{"地铁", "公交", "骑车", "开车", "通勤", "打车", "高铁", "火车"}, "", nil, nil},
	{"membership", []string{"subscription", "subscriptions", "subscribe", "subscribed", "membership", "member", "gym"},
		[]string{"会员", "套餐", "订阅", "次卡", "月卡", "年卡"}, "", nil, nil},
	{"provider", []string{"internet", "broadband", "wifi", "phone", "mobile", "carrier", "electricity", "provider"},
		[]string{"宽带", "网络", "手机", "流量", "电信", "移动", "联通", "号码", "电话"}, "", nil, nil},
	{"rent", []string{"rent", "rental", "lease"},
		[]string{"房租", "月租", "租金", "押一付"}, "", nil, nil},
	{"name", []string{"name", "named", "called", "spelled", "spells", "spell", "spelling"},
		[]string{"名字", "叫", "写法", "怎么写"}, "", nil, nil},
	{"birthday", []string{"birthday", "born"}, []string{"生日"}, "", nil, nil},
	{"weight", []string{"weigh", "weighs", "weight", "kg", "kilos", "pounds", "lbs"}, []string{"体重", "公斤"}, "", nil, nil},
	{"class", []string{"class", "classes", "course", "lesson", "lessons", "tutor", "tutoring", "exam", "studying"},
		[]string{"课", "考试", "辅导", "培训"}, "", nil, nil},
	{"sport", []string{"gym", "running", "football", "badminton", "climbing", "bouldering", "swimming", "yoga", "tennis", "pilates"},
		[]string{"运动", "健身", "跑步", "羽毛球", "攀岩", "游泳", "瑜伽", "网球"}, "", nil, nil},
}

// eventRE compiles each attribute's English events (nil when it has none).
var eventRE = func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(attributeLexicon))
	for i, a := range attributeLexicon {
		if a.enEvents != "" {
			res[i] = regexp.MustCompile(a.enEvents)
		}
	}
	return res
}()

// eventsOf returns the attributes whose events lower (a lowercased text) reports, outside
// clauses that only date something (搬家以后, "after moving").
func eventsOf(lower string) uint32 {
	var bits uint32
	for i, a := range attributeLexicon {
		if eventRE[i] != nil && containsAny(lower, a.enGate) {
			for _, l := range eventRE[i].FindAllStringIndex(lower, -1) {
				if !enTimeClauseRE.MatchString(lower[max(0, l[0]-16):min(len(lower), l[1]+8)]) {
					bits |= 1 << i
				}
			}
		}
		for _, w := range a.zhEvents {
			for rest := lower; ; {
				k := strings.Index(rest, w)
				if k < 0 {
					break
				}
				rest = rest[k+len(w):]
				if !slices.ContainsFunc(zhTimeClause, func(t string) bool { return strings.HasPrefix(rest, t) }) {
					bits |= 1 << i
				}
			}
		}
	}
	return bits
}

// attributeIndex finds the English words and phrases of attributeLexicon by their first word:
// matching word by word is an order of magnitude faster than one regular expression per
// attribute.
var attributeIndex = func() map[string][]attributeWord {
	idx := map[string][]attributeWord{}
	for i, a := range attributeLexicon {
		for _, w := range a.en {
			prefix := strings.HasSuffix(w, "*")
			ws := strings.Fields(strings.TrimSuffix(w, "*"))
			idx[ws[0]] = append(idx[ws[0]], attributeWord{attr: i, rest: ws[1:], prefix: prefix && len(ws) == 1})
		}
	}
	return idx
}()

// attributePrefixes are the lexicon's words that match any ending ("colleague*").
var attributePrefixes = func() []attributeWord {
	var out []attributeWord
	for i, a := range attributeLexicon {
		for _, w := range a.en {
			if p, ok := strings.CutSuffix(w, "*"); ok {
				out = append(out, attributeWord{attr: i, rest: []string{p}, prefix: true})
			}
		}
	}
	return out
}()

type attributeWord struct {
	attr   int
	rest   []string // the phrase's further words; for a prefix entry, the prefix
	prefix bool
}

// latinWords splits a lowercased text into its runs of letters and digits outside the CJK
// scripts.
func latinWords(lower string) []string {
	return strings.FieldsFunc(lower, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r)) || keyword.IsCJK(r)
	})
}

// attributesOf returns the attributes lower (a lowercased text) states, as a bit set over
// attributeLexicon, and for each how many of its words the text has.
func attributesOf(lower string) (uint32, map[int]int) {
	var bits uint32
	var counts map[int]int
	hit := func(i int) {
		bits |= 1 << i
		if counts == nil {
			counts = map[int]int{}
		}
		counts[i]++
	}
	words := latinWords(lower)
	for k, w := range words {
		for _, e := range attributeIndex[w] {
			if !e.prefix && k+len(e.rest) < len(words) && slices.Equal(words[k+1:k+1+len(e.rest)], e.rest) {
				hit(e.attr)
			}
		}
		for _, e := range attributePrefixes {
			if strings.HasPrefix(w, e.rest[0]) && w != e.rest[0] {
				hit(e.attr)
			}
		}
	}
	for i, a := range attributeLexicon {
		for _, w := range a.zh {
			for n := strings.Count(lower, w); n > 0; n-- {
				hit(i)
			}
		}
	}
	return bits, counts
}

// attributeWeight is how many words of the attributes in bits the text has.
func (sk *sketch) attributeWeight(bits uint32) int {
	n := 0
	for i, c := range sk.attrCount {
		if bits&(1<<i) != 0 {
			n += c
		}
	}
	return n
}

// attributeQuery returns the words of the attributes in bits, English and Chinese, as one
// keyword query.
func attributeQuery(bits uint32) string {
	var b strings.Builder
	for i, a := range attributeLexicon {
		if bits&(1<<i) == 0 {
			continue
		}
		for _, w := range a.en {
			b.WriteString(strings.TrimSuffix(w, "*"))
			b.WriteByte(' ')
		}
		for _, w := range a.zh {
			b.WriteString(w)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(x string) bool { return strings.Contains(s, x) })
}

// subjectOf returns who a text is about when it says so at its start: "I" for the user ("I",
// "I'm", "my" before anything but a person word, 我 likewise), a person word ("my sister",
// "Mum (Gillian)", "Tom's", 我妹妹, 雨桐的), or "" when the start names no one.
func subjectOf(text, lower string) string {
	lower = strings.TrimLeftFunc(lower, func(r rune) bool { return !unicode.IsLetter(r) })
	text = strings.TrimLeftFunc(text, func(r rune) bool { return !unicode.IsLetter(r) })
	if m := subjectKinRE.FindStringSubmatch(lower); m != nil {
		return strings.TrimSuffix(m[1], "s")
	}
	if m := subjectPossessiveRE.FindStringSubmatch(text); m != nil && !enNotNames[strings.ToLower(m[1])] {
		return strings.ToLower(m[1])
	}
	if subjectIRE.MatchString(lower) {
		return "I"
	}
	rest, mine := strings.CutPrefix(text, "我的")
	if !mine {
		rest, mine = strings.CutPrefix(text, "我")
	}
	for _, w := range zhKin {
		w = strings.TrimPrefix(w, "我")
		if strings.HasPrefix(rest, w) {
			return w
		}
	}
	if mine {
		return "I"
	}
	if k := strings.Index(text, "的"); k > 0 && k <= 9 {
		name := text[:k]
		if !strings.ContainsFunc(name, func(r rune) bool { return !isHan(r) }) && !strings.Contains(name, "我") {
			return name
		}
	}
	return ""
}

var (
	enKin = []string{"mom", "mum", "mother", "dad", "father", "parents", "sister", "brother", "wife", "husband", "son", "daughter",
		"kid", "kids", "child", "children", "baby", "grandma", "grandmother", "grandpa", "grandfather", "aunt", "uncle", "cousin",
		"niece", "nephew", "boyfriend", "girlfriend", "partner", "fiance", "fiancé", "fiancee", "fiancée", "friend", "neighbour",
		"neighbor", "colleague", "boss", "roommate", "flatmate", "stepson", "stepdaughter"}
	subjectKinRE        = regexp.MustCompile(`^(?:(?:my|our|his|her|their) )?(` + strings.Join(enKin, "|") + `)s?\b`)
	subjectPossessiveRE = regexp.MustCompile(`^(\p{Lu}\p{Ll}+)(?:'|’)s\b`)
	subjectIRE          = regexp.MustCompile(`^(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|my|me|we|we're|we’re|our)\b`)
	zhKin               = []string{"妈妈", "我妈", "母亲", "爸爸", "我爸", "父亲", "姐姐", "妹妹", "哥哥", "弟弟", "表妹", "表姐", "表哥", "表弟", "堂妹", "堂姐",
		"堂哥", "堂弟", "老公", "老婆", "丈夫", "妻子", "儿子", "女儿", "孩子", "奶奶", "爷爷", "外婆", "外公", "姥姥", "姥爷", "阿姨", "叔叔",
		"舅舅", "姑姑", "男朋友", "女朋友", "朋友", "同事", "室友", "邻居", "岳母", "婆婆", "公公", "岳父"}
)

// Change cues. A strong cue announces that a fact changed; a weak one that something holds from
// now on, which counts only with a changed value. A cue followed by a word that makes its clause
// a time ("after moving", 搬家以后) is weak.
var (
	enStrongCues = cueSet{
		phrases: []string{"no longer", "not a single", "cut out", "my new", "our new", "got a new", "got an new", "got my new",
			"got our new", "bought a new", "bought an new", "bought my new", "bought our new", "sold", "gave away", "given away",
			"got rid of", "given up", "turns out", "turned out", "completely off", "new job", "anymore", "any more",
			"not any longer", "moved", "moving to", "moving into", "instead", "replaced", "replacing", "cancelled", "canceled",
			"cancelling", "canceling", "called off", "correction", "actually", "i was wrong", "by mistake", "mistaken",
			"stopped", "quit", "gave up", "giving up", "no more", "reschedul*", "reshuffl*", "postpon*", "pushed back",
			"went up", "went down", "goes up", "goes down", "going up", "going down", "gone up", "gone down", "go up", "go down",
			"lapse", "lapsed", "lapses", "resigned", "promoted", "promotion", "from now on", "broke up", "split up", "divorced",
			"got married", "got engaged", "we're engaged", "we are engaged", "i'm engaged", "i am engaged", "just engaged",
			"proposed", "left my", "dropped out", "pulled out", "withdrew", "down to"},
		res: []gatedRE{
			{"off", regexp.MustCompile(`\boff (?:\w+ )?(?:completely|entirely)\b`)},
			{"offer", regexp.MustCompile(`\b(?:signed (?:the|an|a|my)|accepted (?:the|an|a|their)) [\w ]{0,30}offer\b`)},
			{"start", regexp.MustCompile(`\bstart(?:s|ing)? (?:\w+ ){0,3}as (?:a|an|the|their|our|its)\b`)},
			{"switch", regexp.MustCompile(`\bswitch(?:ed|ing)? (?:to|from|over|back|my|our|the|it|them|jobs|providers|plans)\b`)},
			{"chang", regexp.MustCompile(`\bchang(?:ed|ing) (?:to|my|our|it|the)\b`)},
			{"", valueVerbRE},
		},
	}
	enWeakCues = cueSet{
		phrases: []string{"now", "these days", "nowadays", "since", "starting", "start", "starts", "started", "again", "new",
			"signed", "engaged", "proposed", "currently"},
		res: []gatedRE{{"from", regexp.MustCompile(`\bfrom (?:\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|next|now|today|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday)`)}},
	}
	enCorrections = cueSet{phrases: []string{"correction", "actually", "i was wrong", "by mistake", "mistaken", "misspelled", "typo", "turns out", "turned out"}}
	// enStopCues and zhStopCues end a habit or a state: the new text negates the old one.
	enStopCues = cueSet{
		phrases: []string{"no longer", "not anymore", "not any more", "not a single", "cut out", "completely off", "gave up", "given up",
			"giving up", "stopped", "quit", "no more", "sold", "gave away", "got rid of", "cancelled", "canceled", "called off",
			"dropped out", "pulled out", "withdrew"},
		res: []gatedRE{{"off", regexp.MustCompile(`\boff (?:\w+ )?(?:completely|entirely)\b`)}},
	}
	// valueVerbRE matches a verb that changes a quantity ("raised the fee to", "went up").
	valueVerbRE  = regexp.MustCompile(`\b(?:raised|increased|decreased|lowered|reduced|bumped|cut|upped|dropped|changed)(?: \w+){0,4} (?:up |down |back )?(?:to|by)\b`)
	valueVerbs   = []string{"raised", "increased", "decreased", "lowered", "reduced", "bumped", "cut", "upped", "dropped", "changed"}
	zhStopCues   = []string{"不再", "戒了", "戒掉", "停了", "取消", "已经不", "卖了", "卖掉", "送人", "不用了", "没有再"}
	zhStrongCues = []string{"不再", "改成", "改为", "改到", "改喝", "改吃", "改用", "改去", "改了", "换成", "换到", "换了", "换工作", "搬到", "搬去",
		"搬家", "搬进", "取消", "其实", "记错", "卖了", "卖掉", "新买", "换了新", "写错", "搞错", "说错", "弄错", "更正", "纠正", "已经不", "不再", "离职", "辞职", "跳槽", "转正",
		"升职", "调到", "涨到", "降到", "涨了", "降了", "推迟", "延期", "戒了", "戒掉", "停了", "分手", "离婚", "订婚", "没有再", "不用了", "不去了",
		"不上了", "不喝了", "不吃了", "不做了"}
	zhWeakCues     = []string{"现在", "如今", "目前", "开始", "以后", "从此", "又", "新家", "新公司", "新工作", "新房", "新的", "终于", "正式"}
	zhCorrections  = []string{"其实", "记错", "写错", "搞错", "说错", "弄错", "更正", "纠正"}
	zhTimeClause   = []string{"以后", "之后", "后", "前", "的时候", "时"}
	enTimeClauseRE = regexp.MustCompile(`\b(?:after|since|before|when|once) (?:i |we |he |she |they )?(?:moved|moving|switched|switching|quit|quitting|left|leaving|changed|changing)\b`)
	additionRE     = cueSet{phrases: []string{"also", "too", "as well", "another", "in addition", "besides"}}
	hedgeRE        = cueSet{phrases: []string{"thinking about", "thinking of", "considering", "consider", "might", "maybe", "perhaps", "hoping to", "hope to", "would like to", "want to", "wants to", "planning to", "plan to", "if we", "if i", "in case", "wondering"}}
	zhHedges       = []string{"考虑", "打算", "可能", "也许", "如果", "想要", "计划", "希望", "看看要不要", "要不要"}
	valueCueRE     = cueSet{phrases: []string{"went up", "went down", "goes up", "goes down", "going up", "going down", "gone up", "gone down", "go up", "go down", "down to"},
		res: []gatedRE{{"", valueVerbRE}}}
	zhValueCues      = []string{"涨到", "降到", "涨了", "降了", "调到", "提高到", "降低到", "增加到", "减少到", "改成", "改为"}
	zhAdditions      = []string{"也", "还有", "另外", "此外", "再加"}
	zhNotLePattern   = regexp.MustCompile(`不[^，。！？,.!?]{0,4}了`)
	enNotAnymorePatt = regexp.MustCompile(`\bnot\b[^.!?;]{0,40}\b(?:anymore|any more|any longer)\b`)
)

// A cueSet finds whole-word phrases in a lowercased text: literal phrases (a trailing * matches
// any ending of the last word), found by substring search, and regular expressions, each tried
// only when the text contains its trigger (valueVerbRE: one of valueVerbs). Go's regular
// expressions take tens of microseconds on a long alternation; a sketch needs a dozen of these.
type cueSet struct {
	phrases []string
	res     []gatedRE
}

type gatedRE struct {
	trigger string
	re      *regexp.Regexp
}

// all returns where the set matches lower, [start, end) byte ranges.
func (c *cueSet) all(lower string) [][2]int {
	var out [][2]int
	for _, p := range c.phrases {
		prefix := strings.HasSuffix(p, "*")
		p = strings.TrimSuffix(p, "*")
		for off := 0; ; {
			k := strings.Index(lower[off:], p)
			if k < 0 {
				break
			}
			start, end := off+k, off+k+len(p)
			if prefix {
				for end < len(lower) && isWordByte(lower[end]) {
					end++
				}
			}
			if wordStart(lower, start) && wordEnd(lower, end) {
				out = append(out, [2]int{start, end})
			}
			off = off + k + 1
		}
	}
	for _, g := range c.res {
		if g.trigger == "" && g.re == valueVerbRE && !containsAny(lower, valueVerbs) || g.trigger != "" && !strings.Contains(lower, g.trigger) {
			continue
		}
		for _, l := range g.re.FindAllStringIndex(lower, -1) {
			out = append(out, [2]int{l[0], l[1]})
		}
	}
	return out
}

// match reports whether the set matches lower.
func (c *cueSet) match(lower string) bool { return len(c.all(lower)) > 0 }

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80 && b < 0xC0 // ASCII word, or a UTF-8 continuation
}

// wordStart reports whether a word may start at byte i of s (\b before a word character).
func wordStart(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') || keyword.IsCJK(r)
}

// wordEnd reports whether a word may end at byte i of s.
func wordEnd(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') || keyword.IsCJK(r)
}

// cueOf returns the change cue of lower (a lowercased text) and whether it is a correction.
func cueOf(lower string) (cueStrength, bool) {
	correction := enCorrections.match(lower) || containsAny(lower, zhCorrections)
	strong := false
	if loc := enStrongCues.all(lower); len(loc) > 0 {
		// Weak when every strong cue sits in a clause that only dates something.
		for _, l := range loc {
			if !enTimeClauseRE.MatchString(lower[max(0, l[0]-16):min(len(lower), l[1]+8)]) {
				strong = true
			}
		}
	}
	if strings.Contains(lower, "not") && enNotAnymorePatt.MatchString(lower) || strings.Contains(lower, "不") && zhNotLePattern.MatchString(lower) {
		strong = true
	}
	for _, c := range zhStrongCues {
		for rest := lower; ; {
			k := strings.Index(rest, c)
			if k < 0 {
				break
			}
			after := rest[k+len(c):]
			if !slices.ContainsFunc(zhTimeClause, func(t string) bool { return strings.HasPrefix(after, t) }) {
				strong = true
			}
			rest = after
		}
	}
	switch {
	case strong || correction:
		return cueStrong, correction
	case enWeakCues.match(lower) || containsAny(lower, zhWeakCues):
		return cueWeak, false
	}
	return cueNone, false
}

var (
	timeRE      = regexp.MustCompile(`\b\d{1,2}[:.]\d{2}\b(?:\s?(?:[ap]m\b|[ap]\.m\.))?|\b\d{1,2}\s?(?:[ap]m\b|[ap]\.m\.)`)
	zhTimeRE    = regexp.MustCompile(`[零〇一二两三四五六七八九十\d]{1,3}点(?:半|[零〇一二三四五六七八九十\d]{1,3}分?)?`)
	moneyRE     = regexp.MustCompile(`[€$£¥￥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:euros?|eur|dollars?|usd|cad|pounds?|gbp|rmb|yuan|块钱|块|元|欧元|欧|美元|刀)`)
	moneyWords  = []string{"€", "$", "£", "¥", "￥", "euro", "eur", "dollar", "usd", "cad", "pound", "gbp", "rmb", "yuan", "块", "元", "欧", "刀"}
	quantityRE  = regexp.MustCompile(`\d[\d,.]*\s?(?:mcg|µg|mg|g|kg|ml|l|km|m|cm|iu|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|gb|mb|mbit|克|公斤|毫克|微克|分钟|小时|天|周|个月|年|兆|次|片|杯)\b?`)
	dateRE      = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b|\d{1,2}月\d{1,2}[日号]?`)
	zhDateRE    = regexp.MustCompile(`[一二三四五六七八九十]{1,3}月[一二三四五六七八九十]{1,3}[日号]`)
	monthDateRE = regexp.MustCompile(`\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?\b|\b\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\b(?:january|february|march|april|june|july|august|september|october|november|december)\b`)
	phoneRE     = regexp.MustCompile(`\+?\d[\d ()-]{6,}\d`)
	monthRE     = regexp.MustCompile(`\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)`)
	weekdayRE   = regexp.MustCompile(`\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天]`)
)

// valuesOf returns the typed values of lower (a lowercased text), each kind sorted: times of
// day, money, dates (a day of a month, a month), weekdays, quantities with a unit, and the
// numbers none of those took. Relative days and times of day (today, morning, 早上) are not
// values: they date the note, not the fact.
func valuesOf(lower string) map[valueKind][]string {
	v := map[valueKind][]string{}
	rest := lower
	ndigits := 0
	for i := 0; i < len(lower); i++ {
		if lower[i] >= '0' && lower[i] <= '9' {
			ndigits++
		}
	}
	digits := ndigits > 0
	for _, k := range []struct {
		kind valueKind
		re   *regexp.Regexp
		may  bool // whether the text can hold such a value (the expressions are slow)
	}{
		{valuePhone, phoneRE, ndigits >= 8},
		{valueTime, timeRE, digits},
		{valueTime, zhTimeRE, strings.Contains(lower, "点")},
		{valueMoney, moneyRE, digits && containsAny(lower, moneyWords)},
		{valueDate, dateRE, digits},
		{valueDate, zhDateRE, strings.Contains(lower, "月")},
		{valueDate, monthDateRE, monthRE.MatchString(lower)},
		{valueWeekday, weekdayRE, strings.Contains(lower, "day") || strings.ContainsAny(lower, "周期拜")},
		{valueQuantity, quantityRE, digits},
	} {
		if !k.may {
			continue
		}
		locs := k.re.FindAllStringIndex(rest, -1)
		if len(locs) == 0 {
			continue
		}
		blanked := []byte(rest)
		for _, l := range locs {
			m := rest[l[0]:l[1]]
			for i := l[0]; i < l[1]; i++ {
				blanked[i] = ' '
			}
			m = strings.Join(strings.Fields(m), "")
			if k.kind == valuePhone {
				m = strings.Map(func(r rune) rune {
					if unicode.IsDigit(r) {
						return r
					}
					return -1
				}, m)
			}
			if k.kind == valueWeekday {
				m = strings.TrimSuffix(m, "s")
			}
			v[k.kind] = append(v[k.kind], m)
		}
		rest = string(blanked)
	}
	v[valueNumber] = append(v[valueNumber], factsOf(rest).numbers...)
	for k := range v {
		slices.Sort(v[k])
		v[k] = slices.Compact(v[k])
		if len(v[k]) == 0 {
			delete(v, k)
		}
	}
	return v
}

// valueConflict reports whether a and b state different values of a kind both have (a time, an
// amount of money, a quantity, a date, a weekday), or one negates what the other does not.
func valueConflict(a, b sketch) bool {
	return negationFlip(a, b) || typedConflict(a, b)
}

// numbersDiffer reports whether a and b both state values (of any kind, plain numbers too) and
// not the same ones.
func numbersDiffer(a, b sketch) bool {
	var x, y []string
	for _, v := range a.values {
		x = append(x, v...)
	}
	for _, v := range b.values {
		y = append(y, v...)
	}
	slices.Sort(x)
	slices.Sort(y)
	return len(x) > 0 && len(y) > 0 && !slices.Equal(x, y)
}

// negationFlip reports whether one of a and b negates and the other does not.
func negationFlip(a, b sketch) bool { return a.negations%2 != b.negations%2 }

// typedConflict reports whether a and b state different values of a kind both have.
func typedConflict(a, b sketch) bool {
	for _, k := range []valueKind{valuePhone, valueTime, valueMoney, valueQuantity, valueDate, valueWeekday} {
		if len(a.values[k]) > 0 && len(b.values[k]) > 0 && !slices.Equal(a.values[k], b.values[k]) {
			return true
		}
	}
	return false
}

// personConflict reports whether a and b say at their start that they are about different
// people (subjectOf): the user and a sister, a mother and a brother.
func personConflict(a, b sketch) bool {
	return a.subject != "" && b.subject != "" && a.subject != b.subject
}
