package memory

import (
	"context"
	"strings"
	"unicode/utf8"
)

// ConversationContext is how many turns on each side of a turn RememberConversation indexes
// with it as its context. Measured on locomo-dev (bench/results/retrieval.md): 2 beats 1 and 3.
const ConversationContext = 2

// RememberConversation remembers each turn of a conversation as a memory of its own, in order,
// with the ConversationContext turns before and after it (within turns) as its Context, so that
// a turn that answers in its neighbours' words ("Yes! It was amazing", after "How was the
// concert?") is found by them. A turn's memory text is "Role: Text" when it has a role, else its
// text; its time is the turn's Time, else opts.Time, else the store's clock. opts applies to
// every turn, and its Context, when set, is added to every turn's. Every turn is checked before
// anything is written; then each is one Remember (chunked and de-duplicated like any text), so
// an I/O failure midway leaves the turns before it written. The result lists every turn's
// chunks, in order.
func (s *Store) RememberConversation(ctx context.Context, session string, turns []Turn, opts RememberOptions) (RememberResult, error) {
	var res RememberResult
	if len(turns) == 0 {
		return res, errorf(ErrInvalidInput, "no turns")
	}
	texts := make([]string, len(turns))
	for i, t := range turns {
		texts[i] = t.Text
		if t.Role != "" {
			texts[i] = t.Role + ": " + t.Text
		}
	}
	all := make([]RememberOptions, len(turns))
	for i := range turns {
		o := opts
		if !turns[i].Time.IsZero() {
			o.Time = turns[i].Time
		}
		var c []string
		for j := max(0, i-ConversationContext); j <= min(len(turns)-1, i+ConversationContext); j++ {
			if j != i {
				c = append(c, texts[j])
			}
		}
		if opts.Context != "" {
			c = append(c, opts.Context)
		}
		o.Context = fitContext(strings.Join(c, "\n"), s.opts.MaxTextBytes-len(texts[i])-1)
		if err := s.checkRemember(session, texts[i], &o); err != nil {
			return res, err
		}
		all[i] = o
	}
	for i := range turns {
		r, err := s.Remember(ctx, session, texts[i], all[i])
		if err != nil {
			return res, err
		}
		res.IDs = append(res.IDs, r.IDs...)
		res.Merged = append(res.Merged, r.Merged...)
	}
	return res, nil
}

// fitContext cuts s to at most n bytes at a rune boundary.
func fitContext(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
