package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// DefaultDistillTimeout bounds one distillation by a model (a cold model load included).
const DefaultDistillTimeout = 2 * time.Minute

// ErrBadAnswer means the model's answer is not a distillation: not JSON, not the schema, an
// action that is not add, update, delete or none, an ID it was not shown, a missing text or a
// turn out of range. The whole answer is refused; the memory store then falls back to its
// built-in distiller.
var ErrBadAnswer = errors.New("ollama: distill: invalid answer")

// Distiller asks a chat model what a conversation's turns add to, change in or remove from the
// user's long-term memories, given the related memories the store retrieved (mem0's update
// step, in one call); it implements memory.Distiller. The prompt and the answer's format are
// specified in docs/distill.md. The existing memories are shown under the IDs "0", "1", ...
// (a model copies a short number more reliably than a 32-digit ID), and the answer must use
// those. Decoding is greedy (temperature 0, fixed seed), and the answer is constrained by a
// JSON schema (Ollama's structured outputs); it is still checked in full, and any defect
// refuses it with ErrBadAnswer.
type Distiller struct {
	Client *Client
	// Model is the chat model; "" means DefaultChatModel.
	Model string
	// Timeout bounds one Distill call; 0 means DefaultDistillTimeout.
	Timeout time.Duration
}

// distillSchema is the JSON schema of an answer, sent as the request's format.
var distillSchema = json.RawMessage(`{"type":"object","properties":{"actions":{"type":"array","items":{"type":"object",` +
	`"properties":{"event":{"type":"string","enum":["add","update","delete","none"]},"id":{"type":"string"},` +
	`"text":{"type":"string"},"turn":{"type":"integer"}},"required":["event"]}}},"required":["actions"]}`)

// distillInstructions is the system message (docs/distill.md).
const distillInstructions = `You maintain an assistant's long-term memory of its user. Read the new conversation turns and decide what to remember, comparing them with the existing memories.

Remember only what the user states about themselves: facts about their life, the people and animals in it, their work, plans, preferences, habits, and corrections of what they said before. Never remember small talk, greetings, thanks, questions, or what the assistant says unless the user confirms it.

For each fact choose one action:
- "add": a new fact. "text" is one short sentence that stands on its own, in the language the user wrote in; "turn" is the number of the turn it comes from.
- "update": the fact changes or refines an existing memory. Give its "id", the whole new "text" (keeping what still holds) and the "turn".
- "delete": the user says an existing memory is no longer true and nothing replaces it. Give its "id" and the "turn".
- "none": an existing memory already says it. Give its "id".

Use only the ids listed under existing memories. Answer with JSON only, in the form {"actions": [{"event": "add", "text": "...", "turn": 0}]}; answer {"actions": []} when there is nothing to remember.`

// Distill implements memory.Distiller.
func (d *Distiller) Distill(ctx context.Context, in memory.DistillInput) ([]memory.Proposal, error) {
	if d.Client == nil {
		return nil, errors.New("ollama: distiller has no client")
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDistillTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := d.Client.Chat(ctx, ChatRequest{
		Model: d.Model,
		Messages: []Message{
			{Role: "system", Content: distillInstructions},
			{Role: "user", Content: distillPrompt(in)},
		},
		Options: deterministic,
		Format:  distillSchema,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("ollama: distill: %w", err)
	}
	return parseActions(resp.Message.Content, in)
}

// distillPrompt renders the user message: the existing memories as JSON under their short IDs,
// the earlier turns for context, and the new turns numbered from 0.
func distillPrompt(in memory.DistillInput) string {
	var b strings.Builder
	type shown struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	ex := make([]shown, len(in.Existing))
	for i, m := range in.Existing {
		ex[i] = shown{strconv.Itoa(i), m.Text}
	}
	js, _ := json.Marshal(ex) // strings only: cannot fail
	fmt.Fprintf(&b, "Existing memories:\n%s\n", js)
	if len(in.Earlier) > 0 {
		b.WriteString("\nEarlier turns (already remembered, for context only):\n")
		for _, t := range in.Earlier {
			fmt.Fprintf(&b, "%s: %s\n", oneLine(t.Role), oneLine(t.Text))
		}
	}
	b.WriteString("\nNew turns:\n")
	for i, t := range in.Turns {
		fmt.Fprintf(&b, "[%d] %s: %s\n", i, oneLine(t.Role), oneLine(t.Text))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// parseActions reads and checks an answer (see ErrBadAnswer), tolerating code fences and text
// around the JSON object, event names in capitals (mem0's ADD) and IDs written as numbers; an
// add's ID is ignored.
func parseActions(answer string, in memory.DistillInput) ([]memory.Proposal, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadAnswer, fmt.Sprintf(format, args...))
	}
	start, end := strings.Index(answer, "{"), strings.LastIndex(answer, "}")
	if start < 0 || end < start {
		return nil, bad("no JSON object in %.80q", answer)
	}
	var doc struct {
		Actions *[]json.RawMessage `json:"actions"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(answer[start : end+1])))
	if err := dec.Decode(&doc); err != nil {
		return nil, bad("not JSON: %v", err)
	}
	if doc.Actions == nil {
		return nil, bad(`no "actions" array in %.80q`, answer[start:end+1])
	}
	out := make([]memory.Proposal, 0, len(*doc.Actions))
	for i, raw := range *doc.Actions {
		var a struct {
			Event string          `json:"event"`
			ID    json.RawMessage `json:"id"`
			Text  *string         `json:"text"`
			Turn  *json.Number    `json:"turn"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, bad("action %d: %v", i, err)
		}
		p := memory.Proposal{Event: memory.Event(strings.ToLower(strings.TrimSpace(a.Event))), Turn: -1}
		switch p.Event {
		case memory.EventAdd, memory.EventUpdate, memory.EventDelete, memory.EventNone:
		default:
			return nil, bad("action %d: event %q is not add, update, delete or none", i, a.Event)
		}
		if a.Turn != nil {
			n, err := a.Turn.Int64()
			if err != nil || n < 0 || n >= int64(len(in.Turns)) {
				return nil, bad("action %d: turn %s is not one of 0..%d", i, a.Turn.String(), len(in.Turns)-1)
			}
			p.Turn = int(n)
		}
		if a.Text != nil {
			p.Text = strings.TrimSpace(*a.Text)
		}
		if (p.Event == memory.EventAdd || p.Event == memory.EventUpdate) && p.Text == "" {
			return nil, bad("action %d: %s without a text", i, p.Event)
		}
		if p.Event != memory.EventAdd {
			id, err := shownID(a.ID, len(in.Existing))
			if err != nil {
				return nil, bad("action %d: %s: %v", i, p.Event, err)
			}
			p.ID = in.Existing[id].ID
		}
		out = append(out, p)
	}
	return out, nil
}

// shownID reads the short ID of an existing memory ("3" or 3) and checks it was shown.
func shownID(raw json.RawMessage, n int) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("no id")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var num json.Number
		if err := json.Unmarshal(raw, &num); err != nil {
			return 0, fmt.Errorf("id %s is not a string or number", raw)
		}
		s = num.String()
	}
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("id %q is not one of the %d memories shown", s, n)
	}
	return i, nil
}
