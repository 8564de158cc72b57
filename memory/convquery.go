package memory

import (
	"strings"

	"github.com/engramdb/engram/keyword"
)

// Limits of RecallOptions.Turns.
const (
	// MaxTurns is the most turns a RecallOptions may carry.
	MaxTurns = 1000
	// QueryTurns is how many of the latest turns with content a recall reads.
	QueryTurns = 4
)

// chitChat are words that do not make a turn worth searching for on their own.
var chitChat = map[string]bool{}

func init() {
	for _, w := range strings.Fields("ok okay thanks thank yes yeah yep no nope hi hello hey bye lol haha wow great cool nice sure right good fine awesome amazing 好 好的 谢谢 嗯 哈哈 是的 对 对的 没有 再见 你好") {
		for _, t := range keyword.Tokens(w) {
			chitChat[t] = true
		}
	}
}

// hasContent reports whether a turn has at least two words that are neither question words
// nor small talk ("Thanks, that's great!" has none).
func hasContent(text string) bool {
	n := 0
	for _, t := range keyword.Tokens(text) {
		if !keyword.IsQueryStopword(t) && !chitChat[t] {
			if n++; n >= 2 {
				return true
			}
		}
	}
	return false
}

// conversationQuery composes what a recall searches for from its query and the recent turns:
// the latest QueryTurns turns with content (small talk and turns of fewer than two content
// words are dropped, unless nothing else is left), the latest weighing most. For BM25 the texts
// are repeated, since a query term repeated n times weighs n times: the query three times, the
// latest turn twice (three times without a query), the earlier ones once. The embedding is
// computed from the same texts once each, oldest first. Without turns both are the query.
func conversationQuery(query string, turns []Turn) (vecQuery, kwQuery string) {
	if len(turns) == 0 {
		return query, query
	}
	var picked []string // newest first
	for i := len(turns) - 1; i >= 0 && len(picked) < QueryTurns; i-- {
		if hasContent(turns[i].Text) {
			picked = append(picked, turns[i].Text)
		}
	}
	if len(picked) == 0 && strings.TrimSpace(query) == "" {
		for i := len(turns) - 1; i >= 0; i-- { // nothing but small talk: take the latest words
			if strings.TrimSpace(turns[i].Text) != "" {
				picked = append(picked, turns[i].Text)
				break
			}
		}
	}
	var vec, kw []string
	for i := len(picked) - 1; i >= 0; i-- {
		vec = append(vec, picked[i])
		n := 1
		if i == 0 {
			n = 2
			if strings.TrimSpace(query) == "" {
				n = 3
			}
		}
		for range n {
			kw = append(kw, picked[i])
		}
	}
	if strings.TrimSpace(query) != "" {
		vec = append(vec, query)
		kw = append(kw, query, query, query)
	}
	return strings.Join(vec, "\n"), strings.Join(kw, "\n")
}

// dialogueLines reads a query of three or more non-empty lines as a conversation, one turn a
// line, oldest first (a chat loop that passes the whole dialogue so far as its query); any
// other query gives nil.
func dialogueLines(query string) []Turn {
	var turns []Turn
	for line := range strings.Lines(query) {
		if strings.TrimSpace(line) != "" {
			turns = append(turns, Turn{Text: strings.TrimSpace(line)})
		}
	}
	if len(turns) < 3 {
		return nil
	}
	return turns
}
