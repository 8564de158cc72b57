package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/keyword"
)

// Conversations become long-term memories through a Distiller: the turns of a session's
// short-term memory as they leave its window (AddTurn) or on request (Distill), and the messages
// given to RememberMessages with Infer set. The store hands the Distiller the turns and the
// session's memories related to them, checks what it proposes (checkProposals), and carries it
// out: add through Remember (chunked, de-duplicated, superseding like any write), update through
// Update (the old text goes to the history), delete through Delete. A Distiller that fails or
// proposes something invalid is replaced, for that batch, by the built-in RuleDistiller, so turns
// are never lost to a broken model; the result says so (DistillResult.Fallback).

// DistillSource is the Source of memories distilled from a conversation, unless the caller
// gives another.
const DistillSource = "conversation"

// DistillExisting is the most memories of the session a Distiller is shown (DistillInput.Existing).
const DistillExisting = 20

// Event is what a distillation does to a long-term memory.
type Event string

// The events of a distillation.
const (
	// EventAdd: a new memory (a Proposal's add, or a message stored verbatim).
	EventAdd Event = "add"
	// EventUpdate: an existing memory's text was replaced (a Proposal's update, or an add that
	// Remember merged into a near-duplicate).
	EventUpdate Event = "update"
	// EventDelete: an existing memory was forgotten (as Delete does).
	EventDelete Event = "delete"
	// EventNone: an existing memory stays as it is. Proposals may say so; results leave it out.
	EventNone Event = "none"
)

// DistillInput is what a Distiller reads.
type DistillInput struct {
	Session string
	// Turns are the turns to distill, oldest first, each with its role, text and time.
	Turns []Turn
	// Earlier are up to two turns before Turns[0], already distilled: context only (the
	// question the first turn answers).
	Earlier []Turn
	// Existing are the memories of the session most related to the turns (at most
	// DistillExisting, without vectors, best first): the only ones a Proposal may update or
	// delete.
	Existing []Memory
}

// Proposal is one action a Distiller proposes.
type Proposal struct {
	Event Event `json:"event"`
	// ID is the existing memory an update, delete or none is about: the ID of one of
	// DistillInput.Existing. Empty for add.
	ID string `json:"id,omitempty"`
	// Text is the memory's text, for add and update: a statement that stands on its own.
	Text string `json:"text,omitempty"`
	// Turn is the index in DistillInput.Turns of the turn the fact comes from, whose time
	// becomes the memory's; -1 means the last turn.
	Turn int `json:"turn"`
}

// Distiller turns conversation turns into long-term memory actions: what the user states about
// themselves, their plans, preferences and corrections, never small talk or assistant
// boilerplate. Distill must not retain in. The store checks every proposal against in (event
// names, IDs of in.Existing, texts) and, when Distill fails or any proposal is invalid, uses
// RuleDistiller's instead. Implementations must be safe for concurrent use.
type Distiller interface {
	Distill(ctx context.Context, in DistillInput) ([]Proposal, error)
}

// MemoryEvent is one memory a distillation (or RememberMessages) wrote or deleted.
type MemoryEvent struct {
	Event Event  `json:"event"`
	ID    string `json:"id"`
	// Text is the memory's text now (for delete: the text deleted). Never empty in a result; a
	// door leaves it out (with Previous) for a caller that may not read stored text.
	Text string `json:"memory,omitempty"`
	// Previous is the text an update replaced, when known.
	Previous string `json:"previous,omitempty"`
	// Time is the memory's time: that of the turn it came from (zero for delete).
	Time time.Time `json:"time,omitzero"`
}

// DistillResult reports one distillation.
type DistillResult struct {
	// Turns is how many turns were read.
	Turns int `json:"turns"`
	// Events are the memories written and deleted, in order (chunks of one text each count).
	Events []MemoryEvent `json:"events"`
	// Fallback says why the built-in RuleDistiller stood in for Options.Distiller (the error, or
	// the invalid proposal); empty when it did not.
	Fallback string `json:"fallback,omitempty"`
}

// MessagesOptions tune RememberMessages.
type MessagesOptions struct {
	// Infer distills the messages (Options.Distiller, mem0's infer=True): only what the user
	// states about themselves becomes memories, and existing ones may be updated or deleted.
	// Without it every message is stored verbatim, one memory each (chunked).
	Infer bool
	// RememberOptions apply to every memory written: Source (DistillSource when distilled and
	// empty), Tags, Importance, Metadata; Time stands in for messages without one, and Context
	// is added to each memory's.
	RememberOptions
}

// RememberMessages remembers a list of chat messages (mem0's add(messages)). System messages and
// blank ones are skipped. With o.Infer the messages are distilled as Distill does turns (nothing
// is added to short-term memory, and no watermark is kept: the caller decides what it sends);
// without it each message's text is stored verbatim with its neighbouring messages as Context,
// as RememberConversation does. Every message and option is checked before anything is written;
// bad input is ErrInvalidInput.
func (s *Store) RememberMessages(ctx context.Context, session string, msgs []Turn, o MessagesOptions) (DistillResult, error) {
	var res DistillResult
	if len(msgs) == 0 || len(msgs) > MaxTurns {
		return res, errorf(ErrInvalidInput, "%d messages: give 1 to %d", len(msgs), MaxTurns)
	}
	ro := o.RememberOptions
	if err := s.checkRemember(session, "messages", &ro); err != nil {
		return res, err
	}
	var kept []Turn
	for i, m := range msgs {
		if !utf8.ValidString(m.Role+m.Text) || len(m.Text) > s.opts.MaxTextBytes || len(m.Role) > MaxTagBytes || strings.Contains(m.Text, keyword.ContextSeparator) {
			return res, errorf(ErrInvalidInput, "message %d: role and text must be valid UTF-8, the text without U+001E and at most %d bytes, the role at most %d", i, s.opts.MaxTextBytes, MaxTagBytes)
		}
		if err := checkTimes(fmt.Sprintf("message %d: time", i), m.Time); err != nil {
			return res, err
		}
		if strings.EqualFold(strings.TrimSpace(m.Role), "system") || strings.TrimSpace(m.Text) == "" {
			continue
		}
		if m.Time.IsZero() {
			m.Time = ro.Time
		}
		kept = append(kept, m)
	}
	if len(kept) == 0 {
		return res, nil
	}
	if o.Infer {
		return s.distill(ctx, session, kept, nil, ro)
	}
	res.Turns = len(kept)
	all := make([]RememberOptions, len(kept))
	for i, m := range kept {
		r := ro
		r.Time = m.Time
		var around []string
		for j := max(0, i-ConversationContext); j <= min(len(kept)-1, i+ConversationContext); j++ {
			if j != i {
				around = append(around, turnLine(kept[j]))
			}
		}
		if ro.Context != "" {
			around = append(around, ro.Context)
		}
		r.Context = contextOf(around, s.opts.MaxTextBytes-len(m.Text)-1)
		if err := s.checkRemember(session, m.Text, &r); err != nil {
			return res, fmt.Errorf("message %d: %w", i, err)
		}
		all[i] = r
	}
	for i, m := range kept {
		r, err := s.Remember(ctx, session, m.Text, all[i])
		if err != nil {
			return res, err
		}
		res.Events = append(res.Events, rememberEvents(r, s.split(m.Text), all[i].Time)...)
	}
	return res, nil
}

// Distill distills the turns of the session's short-term memory that no distillation has read
// yet (Conversation.Distilled counts those that have), and moves that watermark past them in the
// same durable write as the conversation, so distilling twice stores nothing new. AddTurn does
// the same for the turns it compresses, unless Options.NoAutoDistill is set; Distill is for the
// turns still in the window (at the end of a chat, or before a recall that must see them). A
// session without pending turns gives an empty result and writes nothing.
func (s *Store) Distill(ctx context.Context, session string) (DistillResult, error) {
	if err := checkSession(session); err != nil {
		return DistillResult{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	c, err := s.conversation(ctx, session)
	if err != nil {
		return DistillResult{}, err
	}
	from := c.distilled() - c.Compressed
	if from >= len(c.Turns) {
		return DistillResult{Events: []MemoryEvent{}}, nil
	}
	res, err := s.distill(ctx, session, c.Turns[from:], c.Turns[max(0, from-2):from], RememberOptions{})
	if err != nil {
		return res, err
	}
	c.Distilled = c.Compressed + len(c.Turns)
	created, updated := s.conversationTimes(&c)
	if err := s.putRecord(ctx, kindConversation, session, session, created, updated, c); err != nil {
		return res, err
	}
	return res, nil
}

// distill runs the configured Distiller (RuleDistiller when it fails or proposes something
// invalid) over turns and carries out its proposals. o gives the added memories' source, tags,
// importance and metadata, and the time of turns without one.
func (s *Store) distill(ctx context.Context, session string, turns, earlier []Turn, o RememberOptions) (DistillResult, error) {
	res := DistillResult{Turns: len(turns), Events: []MemoryEvent{}}
	existing, err := s.related(ctx, session, sameScope(o.Metadata), turns)
	if err != nil {
		return res, err
	}
	in := DistillInput{Session: session, Turns: slices.Clone(turns), Earlier: slices.Clone(earlier), Existing: existing}
	var props []Proposal
	_, rules := s.opts.Distiller.(RuleDistiller)
	if !rules {
		props, err = s.opts.Distiller.Distill(ctx, in)
		if err == nil {
			err = s.checkProposals(props, &in)
		}
		if err != nil && ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err != nil {
			s.opts.Logger.Warn("memory: distiller failed, the built-in one stands in", "session", session, "turns", len(turns), "err", err)
			res.Fallback = err.Error()
			props, rules = nil, true
		}
	}
	if rules {
		// The built-in distiller cannot fail; a proposal of it that cannot be stored (a speaker's
		// name making a text too long) is left out rather than failing the turns.
		all, _ := RuleDistiller{}.Distill(ctx, in)
		for i := range all {
			if s.checkProposals(all[i:i+1], &in) == nil {
				props = append(props, all[i])
			}
		}
	}
	if o.Source == "" {
		o.Source = DistillSource
	}
	byID := map[string]Memory{}
	for _, m := range existing {
		byID[m.ID] = m
	}
	for _, p := range props {
		turn := len(turns) - 1
		if p.Turn >= 0 {
			turn = p.Turn
		}
		at := turns[turn].Time
		if at.IsZero() {
			at = o.Time
		}
		if at.IsZero() {
			at = s.opts.Clock()
		}
		switch p.Event {
		case EventAdd:
			r := o
			r.Time = at
			r.Context = contextOf(distillContext(p.Text, turns, earlier, turn, o.Context), s.opts.MaxTextBytes-len(p.Text)-1)
			if err := s.checkRemember(session, p.Text, &r); err != nil {
				return res, err
			}
			rr, err := s.Remember(ctx, session, p.Text, r)
			if err != nil {
				return res, err
			}
			res.Events = append(res.Events, rememberEvents(rr, s.split(p.Text), r.Time)...)
		case EventUpdate:
			text := strings.TrimSpace(p.Text)
			m, err := s.Update(ctx, p.ID, UpdateOptions{Text: &text})
			if errors.Is(err, ErrNotFound) {
				continue // forgotten meanwhile
			}
			if err != nil {
				return res, err
			}
			res.Events = append(res.Events, MemoryEvent{Event: EventUpdate, ID: m.ID, Text: m.Text, Previous: byID[p.ID].Text, Time: m.Updated})
		case EventDelete:
			if err := s.Delete(ctx, p.ID); errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return res, err
			}
			res.Events = append(res.Events, MemoryEvent{Event: EventDelete, ID: p.ID, Text: byID[p.ID].Text})
		}
	}
	return res, nil
}

// related returns the memories of the session and scope most related to the turns: the best few
// for each turn with content, at most DistillExisting, best first, without vectors. Memories of
// another scope (agent_id, run_id) are never shown, so a distillation changes none of them.
func (s *Store) related(ctx context.Context, session string, scope *Filter, turns []Turn) ([]Memory, error) {
	n, err := s.Count(ctx, And(Eq(FieldSession, session), scope))
	if err != nil || n == 0 {
		return nil, err
	}
	type hit struct {
		m     Memory
		score float64
	}
	var hits []hit
	at := map[string]int{}
	for _, t := range turns {
		if notSpeakers[strings.ToLower(strings.TrimSpace(t.Role))] || !hasContent(t.Text) {
			continue // what the assistant says changes no memory by itself
		}
		q := cutRunes(oneLine(t.Text), 2000)
		rs, err := s.Recall(ctx, q, RecallOptions{Session: session, Filter: scope, K: 3, NoTouch: true})
		if errors.Is(err, ErrInvalidInput) {
			continue // nothing to search for in this turn
		}
		if err != nil {
			return nil, fmt.Errorf("memory: finding the memories a distillation may change: %w", err)
		}
		for _, r := range rs {
			r.Vector = nil
			if i, ok := at[r.ID]; ok {
				hits[i].score = max(hits[i].score, r.Score.Final)
				continue
			}
			at[r.ID] = len(hits)
			hits = append(hits, hit{r.Memory, r.Score.Final})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	out := make([]Memory, 0, min(len(hits), DistillExisting))
	for _, h := range hits[:min(len(hits), DistillExisting)] {
		out = append(out, h.m)
	}
	return out, nil
}

// maxProposals bounds how many proposals one distillation may carry out.
func maxProposals(in *DistillInput) int { return 4*len(in.Turns) + len(in.Existing) + 16 }

// checkProposals checks a Distiller's proposals against its input: known events, turn indexes in
// range, adds without an ID, updates, deletes and nones naming an existing memory (each at most
// once for update and delete), texts that Remember would take. A text's surrounding space is
// trimmed in place.
func (s *Store) checkProposals(props []Proposal, in *DistillInput) error {
	if len(props) > maxProposals(in) {
		return fmt.Errorf("memory: %d proposals for %d turns, at most %d", len(props), len(in.Turns), maxProposals(in))
	}
	known := map[string]bool{}
	for _, m := range in.Existing {
		known[m.ID] = true
	}
	changed := map[string]bool{}
	for i := range props {
		p := &props[i]
		if p.Turn < -1 || p.Turn >= len(in.Turns) {
			return fmt.Errorf("memory: proposal %d: turn %d of %d", i, p.Turn, len(in.Turns))
		}
		switch p.Event {
		case EventAdd, EventUpdate, EventDelete, EventNone:
		default:
			return fmt.Errorf("memory: proposal %d: unknown event %q (add, update, delete or none)", i, p.Event)
		}
		if p.Event == EventAdd {
			if p.ID != "" {
				return fmt.Errorf("memory: proposal %d: an add names ID %q", i, p.ID)
			}
		} else if !known[p.ID] {
			return fmt.Errorf("memory: proposal %d: %s of %q, which is not one of the %d memories shown", i, p.Event, p.ID, len(in.Existing))
		}
		if p.Event == EventUpdate || p.Event == EventDelete {
			if changed[p.ID] {
				return fmt.Errorf("memory: proposal %d: memory %q changed twice", i, p.ID)
			}
			changed[p.ID] = true
		}
		if p.Event == EventAdd || p.Event == EventUpdate {
			p.Text = strings.TrimSpace(p.Text)
			switch {
			case p.Text == "" || !utf8.ValidString(p.Text):
				return fmt.Errorf("memory: proposal %d: %s without a valid text", i, p.Event)
			case len(p.Text) > s.opts.MaxTextBytes:
				return fmt.Errorf("memory: proposal %d: text of %d bytes, at most %d", i, len(p.Text), s.opts.MaxTextBytes)
			case strings.Contains(p.Text, keyword.ContextSeparator):
				return fmt.Errorf("memory: proposal %d: text contains U+001E", i)
			}
		}
	}
	return nil
}

// distillContext is the Context of a memory distilled from turns[turn]: the turn before it (the
// question it answers) and the turn itself when the memory does not say it all, plus the
// caller's context.
func distillContext(text string, turns, earlier []Turn, turn int, extra string) []string {
	var out []string
	switch {
	case turn > 0:
		out = append(out, turnLine(turns[turn-1]))
	case len(earlier) > 0:
		out = append(out, turnLine(earlier[len(earlier)-1]))
	}
	if t := turns[turn].Text; strings.TrimSpace(t) != text {
		out = append(out, turnLine(turns[turn]))
	}
	if extra != "" {
		out = append(out, extra)
	}
	return out
}

// turnLine renders a turn for a Context: "role: text".
func turnLine(t Turn) string {
	if t.Role == "" {
		return t.Text
	}
	return t.Role + ": " + t.Text
}

// contextOf joins context lines, without U+001E, into at most n bytes.
func contextOf(lines []string, n int) string {
	c := strings.ReplaceAll(strings.Join(lines, "\n"), keyword.ContextSeparator, " ")
	return fitContext(c, n)
}

// rememberEvents turns a Remember result into events: one per chunk, an update where it merged.
func rememberEvents(r RememberResult, chunks []string, at time.Time) []MemoryEvent {
	out := make([]MemoryEvent, len(r.IDs))
	for i, id := range r.IDs {
		out[i] = MemoryEvent{Event: EventAdd, ID: id, Time: at}
		if i < len(chunks) {
			out[i].Text = chunks[i]
		}
		if i < len(r.Merged) && r.Merged[i] {
			out[i].Event = EventUpdate
		}
	}
	return out
}
