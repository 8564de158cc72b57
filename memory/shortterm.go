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

// Conversation is a session's short-term memory: a summary of the compressed older turns and the
// recent turns verbatim, oldest first.
type Conversation struct {
	Session string `json:"session"`
	Summary string `json:"summary"`
	Turns   []Turn `json:"turns"`
	// Compressed counts the turns folded into Summary so far.
	Compressed int `json:"compressed"`
	// Distilled counts the turns, from the conversation's first, that a distillation has read
	// (Store.Distill, or AddTurn as they left the window): the watermark that keeps a turn from
	// being distilled twice. Turns compressed before a store distilled count as read.
	Distilled int `json:"distilled,omitempty"`
}

// distilled is the watermark in effect: Distilled, at least Compressed (turns compressed before
// distillation existed are gone), at most every turn.
func (c *Conversation) distilled() int {
	return min(max(c.Distilled, c.Compressed), c.Compressed+len(c.Turns))
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

// AddTurn appends a turn to the session's conversation buffer and stores it durably. When the
// buffer exceeds Options.ShortTermTokens, the oldest turns are compressed through the Summarizer
// until the recent turns take at most half the budget (the newest turn is always kept verbatim),
// into a summary of at most half the budget: a BudgetSummarizer is given that budget, any other
// Summarizer's result is fitted to it line by line, shortening every line rather than dropping
// the oldest (see ExtractiveSummarizer). Before they are compressed, the turns no distillation
// has read are distilled into long-term memories of the session (Options.Distiller, see
// Distill), unless Options.NoAutoDistill is set. A failure to summarize or to write the
// distilled memories fails AddTurn and leaves the conversation as it was, so no turn leaves the
// window undistilled (memories written before such a failure stay; the retry's adds merge into
// them as near-duplicates). A zero Time means the store's clock. Empty roles or texts are
// rejected.
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
	if err := checkTimes("turn time", t.Time); err != nil {
		return Conversation{}, err
	}
	if t.Time.IsZero() {
		t.Time = s.opts.Clock()
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	c, err := s.conversation(ctx, session)
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
		sum, err := summarizeWithin(ctx, s.opts.Summarizer, c.Summary, old, budget/2)
		if err != nil {
			return Conversation{}, fmt.Errorf("memory: summarizing %d turns: %w", len(old), err)
		}
		if from := c.distilled() - c.Compressed; !s.opts.NoAutoDistill && from < keep {
			if _, err := s.distill(ctx, session, old[from:], old[max(0, from-2):from], RememberOptions{}); err != nil {
				return Conversation{}, fmt.Errorf("memory: distilling %d turns: %w", keep-from, err)
			}
			c.Distilled = c.Compressed + keep
		}
		c.Summary = sum
		c.Compressed += len(old)
		c.Turns = append([]Turn(nil), c.Turns[keep:]...)
	}
	created, updated := s.conversationTimes(&c)
	if err := s.putRecord(ctx, kindConversation, session, session, created, updated, c); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// Context returns the session's conversation: summary plus recent turns. A session without turns
// gives an empty Conversation (with empty, non-nil Turns).
func (s *Store) Context(ctx context.Context, session string) (Conversation, error) {
	if err := checkSession(session); err != nil {
		return Conversation{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.conversation(ctx, session)
}

// ClearConversation deletes the session's conversation buffer and summary.
func (s *Store) ClearConversation(ctx context.Context, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	_, err := s.deleteRecord(ctx, kindConversation, session)
	return err
}

// Conversations calls fn with every session's conversation, by session name, until fn returns
// an error (export). fn must not call the Store's short-term or working memory.
func (s *Store) Conversations(ctx context.Context, fn func(Conversation) error) error {
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.scanRecords(ctx, kindConversation, func(key string, payload []byte) error {
		var c Conversation
		if err := json.Unmarshal(payload, &c); err != nil {
			return fmt.Errorf("memory: decoding the conversation of session %q: %w", key, err)
		}
		c.Session = key
		if c.Turns == nil {
			c.Turns = []Turn{}
		}
		return fn(c)
	})
}

// ImportConversation stores c as the conversation of c.Session, replacing any (import). The
// turns must be valid as AddTurn would take them; nothing is summarized.
func (s *Store) ImportConversation(ctx context.Context, c Conversation) error {
	if err := checkSession(c.Session); err != nil {
		return err
	}
	if c.Compressed < 0 || c.Distilled < 0 || c.Distilled > c.Compressed+len(c.Turns) || !utf8.ValidString(c.Summary) {
		return errorf(ErrInvalidInput, "conversation of session %q: negative compressed count, distilled count outside 0..%d, or invalid summary", c.Session, c.Compressed+len(c.Turns))
	}
	for i, t := range c.Turns {
		if strings.TrimSpace(t.Role) == "" || strings.TrimSpace(t.Text) == "" || !utf8.ValidString(t.Role+t.Text) || t.Time.IsZero() {
			return errorf(ErrInvalidInput, "conversation of session %q, turn %d: a turn needs a role, valid text and a time", c.Session, i)
		}
		if err := checkTimes(fmt.Sprintf("conversation of session %q, turn %d: time", c.Session, i), t.Time); err != nil {
			return err
		}
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	created, updated := s.conversationTimes(&c)
	return s.putRecord(ctx, kindConversation, c.Session, c.Session, created, updated, c)
}

func (s *Store) conversation(ctx context.Context, session string) (Conversation, error) {
	var c Conversation
	if _, err := s.getRecord(ctx, kindConversation, session, &c); err != nil {
		return Conversation{}, err
	}
	c.Session = session
	if c.Turns == nil {
		c.Turns = []Turn{}
	}
	return c, nil
}

// conversationTimes are the record times of a conversation: its oldest and newest turn (the
// store's clock when it has none).
func (s *Store) conversationTimes(c *Conversation) (created, updated time.Time) {
	if len(c.Turns) == 0 {
		now := s.opts.Clock()
		return now, now
	}
	return c.Turns[0].Time, c.Turns[len(c.Turns)-1].Time
}
