package keyword

// porterStem reduces an English word (lowercase ASCII letters only) to its
// stem with Martin Porter's 1980 algorithm, the variant Lucene's
// PorterStemFilter and Elasticsearch's "english" analyzer use (including
// Porter's later bli->ble and logi->log rules). It reuses b's storage.
func porterStem(b []byte) []byte {
	if len(b) <= 2 {
		return b
	}
	s := stemmer{b: b, k: len(b) - 1}
	s.step1ab()
	if s.k > 0 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	return s.b[:s.k+1]
}

// stemmer holds the word being stemmed: b[0..k] is the current word, and j
// marks the end of the stem after a successful ends() check.
type stemmer struct {
	b    []byte
	k, j int
}

// cons reports whether b[i] is a consonant; y is a consonant at the start of
// a word or after a vowel.
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// m counts the vowel-consonant sequences in b[0..j]: [C](VC)^m[V].
func (s *stemmer) m() int {
	n, i := 0, 0
	for {
		if i > s.j {
			return n
		}
		if !s.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > s.j {
				return n
			}
			if s.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > s.j {
				return n
			}
			if !s.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

func (s *stemmer) vowelInStem() bool {
	for i := 0; i <= s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

func (s *stemmer) doubleC(j int) bool {
	return j >= 1 && s.b[j] == s.b[j-1] && s.cons(j)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant with the last
// consonant not w, x or y (e.g. "hop", but not "snow").
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *stemmer) ends(suffix string) bool {
	n := len(suffix)
	if n > s.k+1 || string(s.b[s.k+1-n:s.k+1]) != suffix {
		return false
	}
	s.j = s.k - n
	return true
}

// setTo replaces b[j+1..k] with r.
func (s *stemmer) setTo(r string) {
	s.b = append(s.b[:s.j+1], r...)
	s.k = s.j + len(r)
}

func (s *stemmer) r(r string) {
	if s.m() > 0 {
		s.setTo(r)
	}
}

// step1ab removes plurals and -ed or -ing.
func (s *stemmer) step1ab() {
	if s.b[s.k] == 's' {
		switch {
		case s.ends("sses"):
			s.k -= 2
		case s.ends("ies"):
			s.setTo("i")
		case s.b[s.k-1] != 's':
			s.k--
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.k--
		}
	} else if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.k = s.j
		switch {
		case s.ends("at"):
			s.setTo("ate")
		case s.ends("bl"):
			s.setTo("ble")
		case s.ends("iz"):
			s.setTo("ize")
		case s.doubleC(s.k):
			s.k--
			switch s.b[s.k] {
			case 'l', 's', 'z':
				s.k++
			}
		default:
			s.j = s.k
			if s.m() == 1 && s.cvc(s.k) {
				s.setTo("e")
			}
		}
	}
}

// step1c turns a terminal y into i when there is another vowel in the stem.
func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[s.k] = 'i'
	}
}

// suffixRule maps a suffix to its replacement.
type suffixRule struct{ from, to string }

// step2Rules and step3Rules are tried in order; the first suffix that
// matches decides, whether or not its measure condition holds.
var step2Rules = []suffixRule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"},
	{"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"},
	{"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"},
	{"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var step3Rules = []suffixRule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func (s *stemmer) applyRules(rules []suffixRule) {
	for _, r := range rules {
		if s.ends(r.from) {
			s.r(r.to)
			return
		}
	}
}

func (s *stemmer) step2() { s.applyRules(step2Rules) }
func (s *stemmer) step3() { s.applyRules(step3Rules) }

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

// step4 removes a suffix when the remaining stem has measure > 1.
func (s *stemmer) step4() {
	for _, suf := range step4Suffixes {
		if !s.ends(suf) {
			continue
		}
		if suf == "ion" && (s.j < 0 || (s.b[s.j] != 's' && s.b[s.j] != 't')) {
			return
		}
		if s.m() > 1 {
			s.k = s.j
		}
		return
	}
}

// step5 removes a final -e and reduces -ll to -l where the measure allows.
func (s *stemmer) step5() {
	s.j = s.k
	if s.b[s.k] == 'e' {
		a := s.m()
		if a > 1 || (a == 1 && !s.cvc(s.k-1)) {
			s.k--
		}
	}
	if s.b[s.k] == 'l' && s.doubleC(s.k) && s.m() > 1 {
		s.k--
	}
}
