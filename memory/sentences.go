package memory

import (
	"strings"
	"unicode"
)

// sentences splits text into sentences, trimmed, empty ones dropped, for the extractive summary
// and the built-in distiller. A sentence ends
//
//   - at a line break;
//   - after ! ? ; and the Chinese 。！？；, with any run of such marks and the closing quotes and
//     brackets after them ("Really?!" and `他说："好。"` stay whole);
//   - after the Chinese ellipsis …… (or … after a Chinese character); after an English ellipsis
//     ("...", "…") only when a capitalized sentence opener follows ("Well... I think so" splits,
//     "I was going to... never mind" does not);
//   - after a period followed by a space or the end of the text, except
//   - inside numbers and words (3.5, 10:40, U.S.A, e.g.x, example.com: no space follows),
//   - after titles that always precede a name (Mr. Mrs. Ms. Dr. Prof. St. ...), and No. before a
//     number,
//   - after e.g. and i.e., which always continue,
//   - after single letters and initialisms (J. K. Rowling, U.S., a.m.) and a few abbreviations
//     that may or may not end a sentence (etc. Inc. Jr.), unless a capitalized sentence opener
//     follows ("in the U.S. Army" stays whole, "We moved to the U.S. It was cold" splits).
func sentences(text string) []string {
	r := []rune(text)
	var out []string
	start := 0
	emit := func(end int) {
		if p := strings.TrimSpace(string(r[start:end])); p != "" {
			out = append(out, p)
		}
		start = end
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\n' || c == '\r':
			emit(i + 1)
		case strings.ContainsRune("!?;！？；。", c):
			j := i + 1
			for j < len(r) && strings.ContainsRune("!?！？。.", r[j]) {
				j++
			}
			j = skipClosers(r, j)
			emit(j)
			i = j - 1
		case c == '…' || (c == '.' && i+1 < len(r) && r[i+1] == '.'):
			j := i
			for j < len(r) && (r[j] == '.' || r[j] == '…') {
				j++
			}
			j = skipClosers(r, j)
			chinese := i > 0 && unicode.Is(unicode.Han, r[i-1])
			if chinese || j >= len(r) || (j < len(r) && unicode.IsSpace(r[j]) && opensSentence(r, j)) {
				emit(j)
			}
			i = j - 1
		case c == '.':
			j := skipClosers(r, i+1)
			if j < len(r) && !unicode.IsSpace(r[j]) {
				continue // 3.5, U.S.A, example.com
			}
			if j > i+1 || periodEnds(r, i, j) { // a closing quote after the period ends it
				emit(j)
				i = j - 1
			}
		}
	}
	emit(len(r))
	return out
}

// skipClosers returns the index after the closing quotes and brackets at r[j:].
func skipClosers(r []rune, j int) int {
	for j < len(r) && strings.ContainsRune(`"'”’」』)）】]`, r[j]) {
		j++
	}
	return j
}

// Words before a period that never end a sentence, and those that end one only before a
// sentence opener. Lower case, inner periods kept ("e.g", "u.s").
var (
	titles          = wordSet(`mr mrs ms dr prof st mt ft gen capt lt col sgt rev hon messrs mme mlle sen rep gov pres supt e.g i.e vs cf approx ca`)
	ambiguousAbbrev = wordSet(`etc inc ltd co corp jr sr no dept est fig vol al jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun ave blvd rd`)
	// sentenceOpeners are the capitalized words that start a new sentence after an ambiguous
	// abbreviation; any other capitalized word is read as the name the abbreviation belongs to.
	sentenceOpeners = wordSet(`i i'm i've i'll i'd the a an we we're it it's he she they they're you my our his her their this that these those there then but and so also after before when what where how why who if in on at for yes no ok okay thanks however now today tomorrow yesterday last next anyway btw oh well haha lol sure great please let can could do did is are was will would not maybe sorry hi hey hello since because as to one two our its actually`)
)

// periodEnds reports whether the period at r[i], followed by a space or the end (at j), ends a
// sentence.
func periodEnds(r []rune, i, j int) bool {
	b := i
	for b > 0 && (unicode.IsLetter(r[b-1]) || r[b-1] == '.' || r[b-1] == '\'') {
		b--
	}
	w := strings.ToLower(string(r[b:i]))
	next := nextWord(r, j)
	switch {
	case w == "":
		return true
	case titles[w] && next != "":
		return false
	case w == "no" && next != "" && unicode.IsDigit([]rune(next)[0]):
		return false
	case strings.Contains(w, ".") || len([]rune(w)) == 1 || ambiguousAbbrev[w]:
		// An initialism (u.s, a.m), an initial (J.) or an abbreviation: ends only before an opener.
		return next == "" || opensSentence(r, j) || (w == "etc" && !unicode.IsLower([]rune(next)[0]))
	}
	return true
}

// nextWord returns the word starting after the spaces at r[j:], "" at the end of the text.
func nextWord(r []rune, j int) string {
	for j < len(r) && unicode.IsSpace(r[j]) {
		j++
	}
	k := j
	for k < len(r) && !unicode.IsSpace(r[k]) {
		k++
	}
	return strings.TrimRight(string(r[j:k]), ",.;:!?\"')")
}

// opensSentence reports whether the word after the spaces at r[j:] starts a sentence: a
// capitalized opener, a Chinese character, or nothing (the end of the text).
func opensSentence(r []rune, j int) bool {
	w := nextWord(r, j)
	if w == "" {
		return true
	}
	f := []rune(w)[0]
	if unicode.Is(unicode.Han, f) {
		return true
	}
	return unicode.IsUpper(f) && sentenceOpeners[strings.ToLower(w)]
}
