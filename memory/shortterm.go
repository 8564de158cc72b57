package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultShortTermTokens is the default token budget of a conversation buffer.
const DefaultShortTermTokens = 2000

// Turn is one message of a conversation.
type Turn struct {
	Role string    `json:"role"`
	Text string    `json:"text"`
	Time time.Time `json:"time"`
}

// Summarizer compresses conversation turns that no longer fit the short-term budget. Summarize
// returns a new summary that covers the previous summary (possibly empty) and the turns, oldest
// first. It should be deterministic for a given input.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, turns []Turn) (string, error)
}

// ExtractiveSummarizer is a model-free Summarizer: it appends one line per turn, "role: " and the
// turn's first MaxChars characters (default 160), to the previous summary. It loses meaning a
// language model would keep, but it is deterministic, instant and needs nothing installed.
type ExtractiveSummarizer struct{ MaxChars int }

// Summarize implements Summarizer.
func (e ExtractiveSummarizer) Summarize(_ context.Context, previous string, turns []Turn) (string, error) {
	n := e.MaxChars
	if n <= 0 {
		n = 160
	}
	var b strings.Builder
	b.WriteString(previous)
	for _, t := range turns {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		text := oneLine(t.Text)
		if utf8.RuneCountInString(text) > n {
			text = string([]rune(text)[:n]) + "…"
		}
		fmt.Fprintf(&b, "%s: %s", t.Role, text)
	}
	return b.String(), nil
}

// Conversation is a session's short-term memory: a summary of the compressed older turns and the
// recent turns verbatim, oldest first.
type Conversation struct {
	Summary string `json:"summary"`
	Turns   []Turn `json:"turns"`
	// Compressed counts the turns folded into Summary so far.
	Compressed int `json:"compressed"`
}

// Tokens is the estimated size of the conversation (see EstimateTokens).
func (c *Conversation) Tokens() int {
	n := EstimateTokens(c.Summary)
	for _, t := range c.Turns {
		n += turnTokens(t)
	}
	return n
}

func turnTokens(t Turn) int { return EstimateTokens(t.Role) + EstimateTokens(t.Text) + 1 }

const stmPrefix = "memory/stm/"

// AddTurn appends a turn to the session's conversation buffer and stores it durably. When the
// buffer exceeds Options.ShortTermTokens, the oldest turns are compressed through the Summarizer
// until the recent turns take at most half the budget (the newest turn is always kept verbatim),
// and a summary longer than half the budget keeps only its most recent part. A zero Time means
// the store's clock. Empty roles or texts are rejected.
func (s *Store) AddTurn(ctx context.Context, session string, t Turn) (Conversation, error) {
	if err := checkSession(session); err != nil {
		return Conversation{}, err
	}
	if strings.TrimSpace(t.Role) == "" || strings.TrimSpace(t.Text) == "" || !utf8.ValidString(t.Role+t.Text) {
		return Conversation{}, errorf(ErrInvalidInput, "a turn needs a role and non-blank valid UTF-8 text")
	}
	if len(t.Text) > s.opts.MaxTextBytes || len(t.Role) > MaxTagBytes {
		return Conversation{}, errorf(ErrInvalidInput, "turn text over %d bytes or role over %d", s.opts.MaxTextBytes, MaxTagBytes)
	}
	if t.Time.IsZero() {
		t.Time = s.opts.Clock()
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	c, err := s.conversation(session)
	if err != nil {
		return Conversation{}, err
	}
	c.Turns = append(c.Turns, t)
	budget := s.opts.ShortTermTokens
	if c.Tokens() > budget {
		keep, recent := len(c.Turns)-1, turnTokens(c.Turns[len(c.Turns)-1])
		for keep > 0 && recent+turnTokens(c.Turns[keep-1]) <= budget/2 {
			keep--
			recent += turnTokens(c.Turns[keep])
		}
		old := c.Turns[:keep]
		sum, err := s.opts.Summarizer.Summarize(ctx, c.Summary, old)
		if err != nil {
			return Conversation{}, fmt.Errorf("memory: summarizing %d turns: %w", len(old), err)
		}
		c.Summary = tailTokens(sum, budget/2)
		c.Compressed += len(old)
		c.Turns = append([]Turn(nil), c.Turns[keep:]...)
	}
	if err := s.putJSON(stmPrefix+session, c); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// Context returns the session's conversation: summary plus recent turns. A session without turns
// gives an empty Conversation.
func (s *Store) Context(_ context.Context, session string) (Conversation, error) {
	if err := checkSession(session); err != nil {
		return Conversation{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.conversation(session)
}

// ClearConversation deletes the session's conversation buffer and summary.
func (s *Store) ClearConversation(_ context.Context, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.kv.Delete(stmPrefix + session)
}

func (s *Store) conversation(session string) (Conversation, error) {
	var c Conversation
	_, err := s.getJSON(stmPrefix+session, &c)
	return c, err
}

// tailTokens keeps the end of s that fits in n estimated tokens, cut at a line start when one is
// near.
func tailTokens(s string, n int) string {
	if EstimateTokens(s) <= n {
		return s
	}
	r := []rune(s)
	lo, hi := 0, len(r) // find the longest suffix that fits
	for lo < hi {
		mid := (lo + hi) / 2
		if EstimateTokens(string(r[mid:])) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	tail := string(r[lo:])
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return tail
}

// maxKVValue is the largest value the memory layer writes to a KV namespace (the engine's limit).
const maxKVValue = 1 << 20

func (s *Store) getJSON(key string, v any) (bool, error) {
	if _, _, err := s.current(); err != nil {
		return false, err
	}
	b, ok, err := s.kv.Get(key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("memory: decoding %s: %w", key, err)
	}
	return true, nil
}

func (s *Store) putJSON(key string, v any) error {
	if _, _, err := s.current(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxKVValue {
		return errorf(ErrInvalidInput, "%s would take %d bytes, the limit is %d", key, len(b), maxKVValue)
	}
	if err := s.kv.Put(key, b); err != nil {
		return fmt.Errorf("memory: storing %s: %w", key, err)
	}
	return nil
}
