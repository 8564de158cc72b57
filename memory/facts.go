package memory

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Before a near-duplicate merge replaces a memory's text, conflict compares the two texts for
// the details a vector similarity glosses over. Near-duplicates share almost every word, so the
// few that differ are what changed:
//
//   - a negation that one text has and the other not (English not, no, never, none, nothing,
//     nobody, neither, nor, cannot, without, -n't; Chinese 不, 没, 别, 未, 无, 非, 勿, outside
//     words such as 不错, 特别 or 别人 where they negate nothing), counted with parity;
//   - a different multiset of numbers (digits, Chinese numerals, English number words and
//     ordinals up to twenty and the tens);
//   - a different set of dates (month and weekday names, 周X/星期X/礼拜X, today/tomorrow,
//     今天/明天...);
//
// each of which makes the pair conflictValue: the newer text supersedes the older, which stays in
// the history marked ChangeSupersede; and
//
//   - a name replaced by another (a capitalized English word not starting a sentence, or a Chinese
//     common surname and the character after it, present in one text and missing from the other,
//     in both directions), which makes the pair conflictName: two facts about two people or
//     places, stored as two memories.
type conflictKind int

const (
	conflictNone conflictKind = iota
	conflictValue
	conflictName
)

func conflict(old, new string) conflictKind {
	a, b := factsOf(old), factsOf(new)
	if replaced(a.names, b.names) {
		return conflictName
	}
	if a.negations%2 != b.negations%2 || !slices.Equal(a.numbers, b.numbers) || !slices.Equal(a.dates, b.dates) {
		return conflictValue
	}
	return conflictNone
}

// replaced reports whether each set has an element the other lacks.
func replaced(a, b []string) bool {
	gone := slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
	added := slices.ContainsFunc(b, func(x string) bool { return !slices.Contains(a, x) })
	return gone && added
}

type facts struct {
	negations int
	numbers   []string // sorted multiset
	dates     []string // sorted set
	names     []string // sorted set
}

var (
	enNegations = set("not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "cannot", "without")
	enNumbers   = set("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
		"twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty",
		"forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million", "billion",
		"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
		"twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
		"twentieth", "thirtieth", "half", "once", "twice", "dozen")
	enDates = set("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
		"november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
		"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
		"today", "tomorrow", "yesterday", "tonight", "morning", "afternoon", "evening", "noon", "midnight",
		"am", "pm", "spring", "summer", "autumn", "fall", "winter", "weekend")
	// enNotNames are capitalized words that name no one.
	enNotNames = set("i", "i'm", "i've", "i'll", "i'd", "ok", "okay", "mr", "mrs", "ms", "dr")
	zhNumerals = "零〇一二两三四五六七八九十百千万亿半"
	zhDates    = []string{"今天", "明天", "后天", "昨天", "前天", "今晚", "明晚", "上午", "下午", "晚上", "早上", "中午", "凌晨", "周末",
		"春天", "夏天", "秋天", "冬天", "今年", "明年", "去年"}
	zhWeekPrefixes = []string{"星期", "礼拜", "周"}
	// zhNegations: each character negates unless it is part of one of the words listed for it.
	zhNegations = map[rune][]string{
		'不': {"不错", "不过", "不久", "不断", "不少", "不仅", "不但", "不管", "不如", "不同", "不得不", "了不起", "不然"},
		'没': {"没错"},
		'别': {"特别", "区别", "分别", "级别", "性别", "类别", "告别", "离别", "识别", "差别", "个别", "派别", "辨别", "别人", "别的", "别处", "别墅", "别名", "别称", "鉴别", "判别", "道别", "送别", "别致"},
		'未': {"未来"},
		'无': {"无论", "无聊"},
		'非': {"非常", "是非"},
		'勿': {},
	}
	zhSurnames = "张王李刘陈杨赵吴徐孙朱胡郭罗郑梁谢宋唐许韩冯邓曹彭曾肖董袁潘蒋蔡杜程苏魏吕沈姚卢姜崔钟谭陆汪范廖贾邹孟熊秦邱尹薛闫雷侯龚邵郝顾林黄马"
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

func factsOf(text string) facts {
	text = norm.NFKC.String(text)
	var f facts
	dates := map[string]bool{}
	names := map[string]bool{}
	// Latin words, digits and their sentence position.
	rs := []rune(text)
	sentenceStart := true
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || ((rs[j] == '.' || rs[j] == ',' || rs[j] == ':') && j+1 < len(rs) && unicode.IsDigit(rs[j+1]))) {
				j++
			}
			f.numbers = append(f.numbers, strings.ReplaceAll(string(rs[i:j]), ",", ""))
			i, sentenceStart = j, false
		case unicode.IsLetter(r) && !isHan(r):
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) && !isHan(rs[j]) || unicode.IsDigit(rs[j]) || ((rs[j] == '\'' || rs[j] == '’' || rs[j] == '-') && j+1 < len(rs) && unicode.IsLetter(rs[j+1]))) {
				j++
			}
			word := string(rs[i:j])
			lw := strings.ToLower(strings.ReplaceAll(word, "’", "'"))
			base, _, _ := strings.Cut(lw, "'")
			switch {
			case enNegations[lw], strings.HasSuffix(lw, "n't"):
				f.negations++
			case enNumbers[lw]:
				f.numbers = append(f.numbers, lw)
			case enDates[lw] || enDates[strings.TrimSuffix(lw, "s")]:
				dates[lw] = true
			case unicode.IsUpper(r) && !sentenceStart && !enNotNames[base]:
				names[base] = true
			}
			i, sentenceStart = j, false
		default:
			if strings.ContainsRune(".!?。！？\n", r) {
				sentenceStart = true
			}
			i++
		}
	}
	// Chinese.
	for i, r := range rs {
		if words, ok := zhNegations[r]; ok && !inWord(rs, i, words) {
			f.negations++
		}
		if strings.ContainsRune(zhNumerals, r) && !inWord(rs, i, []string{"一起", "一直", "一样", "一些", "一般", "一定", "万一", "统一", "唯一", "一下", "十分", "千万", "百货"}) {
			j := i
			if i > 0 && strings.ContainsRune(zhNumerals, rs[i-1]) {
				continue // counted with the numeral run it continues
			}
			for j < len(rs) && strings.ContainsRune(zhNumerals, rs[j]) {
				j++
			}
			f.numbers = append(f.numbers, string(rs[i:j]))
		}
		if strings.ContainsRune(zhSurnames, r) && i+1 < len(rs) && isHan(rs[i+1]) {
			names[string(rs[i:i+2])] = true
		}
	}
	for _, d := range zhDates {
		if strings.Contains(text, d) {
			dates[d] = true
		}
	}
	for _, p := range zhWeekPrefixes {
		for rest := text; ; {
			k := strings.Index(rest, p)
			if k < 0 {
				break
			}
			rest = rest[k+len(p):]
			if d, _ := firstRune(rest); d != 0 && (strings.ContainsRune("一二三四五六七日天末", d)) {
				dates[p+string(d)] = true
			}
		}
	}
	f.dates = sortedKeys(dates)
	f.names = sortedKeys(names)
	slices.Sort(f.numbers)
	return f
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, 1
	}
	return 0, 0
}

// inWord reports whether rs[i] is part of one of the words.
func inWord(rs []rune, i int, words []string) bool {
	for _, w := range words {
		wr := []rune(w)
		for k, c := range wr {
			if c != rs[i] {
				continue
			}
			start := i - k
			if start >= 0 && start+len(wr) <= len(rs) && string(rs[start:start+len(wr)]) == w {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
