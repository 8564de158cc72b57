package api

import (
	"encoding/json"
	"time"

	"github.com/engramdb/engram/memory"
)

// What a write answers a caller without the read right: IDs, counts and
// states, never stored text (a memory's text, tags, source or metadata, a
// conversation's turns and summary, a task's goal, steps, results and next
// step). A caller that may read gets the whole object, as a read would show
// it. The answer types below carry either; their JSON is the object or the
// receipt, and they read either back, so a client of a server gets what the
// server decided.

// MemoryReceipt answers a change of one memory (update, revert) to a
// caller without the read right.
type MemoryReceipt struct {
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Updated time.Time `json:"updated"`
}

// ConversationReceipt answers a turn added (add_turn) to a caller without
// the read right: how many turns the buffer holds and how many were folded
// into its summary so far.
type ConversationReceipt struct {
	Session    string `json:"session"`
	Turns      int    `json:"turns"`
	Compressed int    `json:"compressed"`
}

// TaskReceipt answers a change of a task (start, a step, finish) to a
// caller without the read right.
type TaskReceipt struct {
	ID      string            `json:"id"`
	Session string            `json:"session"`
	Status  memory.TaskStatus `json:"status"`
	Steps   int               `json:"steps"`
	Updated time.Time         `json:"updated"`
}

// MemoryAnswer answers a change of one memory: the memory as it now is, or
// with Receipt only its ID, session and update time (JSON: a MemoryReceipt).
type MemoryAnswer struct {
	memory.MemoryJSON
	Receipt bool `json:"-"`
}

func memoryAnswer(c *Caller, m *memory.Memory) MemoryAnswer {
	if c.Can(RightRead) {
		return MemoryAnswer{MemoryJSON: memory.ToJSON(m, false)}
	}
	return MemoryAnswer{MemoryJSON: memory.MemoryJSON{ID: m.ID, Session: m.Session, Updated: m.Updated.UTC()}, Receipt: true}
}

// MarshalJSON writes the memory, or the receipt.
func (a MemoryAnswer) MarshalJSON() ([]byte, error) {
	if a.Receipt {
		return json.Marshal(MemoryReceipt{ID: a.ID, Session: a.Session, Updated: a.Updated})
	}
	return json.Marshal(a.MemoryJSON)
}

// UnmarshalJSON reads a memory, or a receipt (which has no "created").
func (a *MemoryAnswer) UnmarshalJSON(data []byte) error {
	var r MemoryReceipt
	*a = MemoryAnswer{}
	receipt, err := decodeAnswer(data, "created", &a.MemoryJSON, &r)
	if receipt {
		*a = MemoryAnswer{MemoryJSON: memory.MemoryJSON{ID: r.ID, Session: r.Session, Updated: r.Updated}, Receipt: true}
	}
	return err
}

// decodeAnswer decodes data into full, or into receipt when data lacks key,
// which every full object has, and reports which.
func decodeAnswer(data []byte, key string, full, receipt any) (bool, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return false, err
	}
	if _, ok := probe[key]; ok {
		return false, json.Unmarshal(data, full)
	}
	return true, json.Unmarshal(data, receipt)
}

// ConversationAnswer answers a turn added: the conversation, or with
// Receipt only its session and counts (JSON: a ConversationReceipt).
type ConversationAnswer struct {
	memory.Conversation
	Receipt bool `json:"-"`
	turns   int  // with Receipt: how many turns the buffer holds
}

func conversationAnswer(c *Caller, conv memory.Conversation) ConversationAnswer {
	if c.Can(RightRead) {
		return ConversationAnswer{Conversation: conv}
	}
	return ConversationAnswer{Conversation: memory.Conversation{Session: conv.Session, Compressed: conv.Compressed}, Receipt: true, turns: len(conv.Turns)}
}

// MarshalJSON writes the conversation, or the receipt.
func (a ConversationAnswer) MarshalJSON() ([]byte, error) {
	if a.Receipt {
		return json.Marshal(ConversationReceipt{Session: a.Session, Turns: a.turns, Compressed: a.Compressed})
	}
	return json.Marshal(a.Conversation)
}

// UnmarshalJSON reads a conversation, or a receipt (which has no "summary").
func (a *ConversationAnswer) UnmarshalJSON(data []byte) error {
	var r ConversationReceipt
	*a = ConversationAnswer{}
	receipt, err := decodeAnswer(data, "summary", &a.Conversation, &r)
	if receipt {
		*a = ConversationAnswer{Conversation: memory.Conversation{Session: r.Session, Compressed: r.Compressed}, Receipt: true, turns: r.Turns}
	}
	return err
}

// TaskAnswer answers a change of a task: the task, or with Receipt only its
// ID, session, status and update time (JSON: a TaskReceipt).
type TaskAnswer struct {
	memory.Task
	Receipt bool `json:"-"`
	steps   int  // with Receipt: how many steps the task has
}

func taskAnswer(c *Caller, t memory.Task) TaskAnswer {
	if c.Can(RightRead) {
		return TaskAnswer{Task: t}
	}
	return TaskAnswer{Task: memory.Task{ID: t.ID, Session: t.Session, Status: t.Status, Updated: t.Updated}, Receipt: true, steps: len(t.Steps)}
}

// MarshalJSON writes the task, or the receipt.
func (a TaskAnswer) MarshalJSON() ([]byte, error) {
	if a.Receipt {
		return json.Marshal(TaskReceipt{ID: a.ID, Session: a.Session, Status: a.Status, Steps: a.steps, Updated: a.Updated})
	}
	return json.Marshal(a.Task)
}

// UnmarshalJSON reads a task, or a receipt (which has no "created").
func (a *TaskAnswer) UnmarshalJSON(data []byte) error {
	var r TaskReceipt
	*a = TaskAnswer{}
	receipt, err := decodeAnswer(data, "created", &a.Task, &r)
	if receipt {
		*a = TaskAnswer{Task: memory.Task{ID: r.ID, Session: r.Session, Status: r.Status, Updated: r.Updated}, Receipt: true, steps: r.Steps}
	}
	return err
}

// cleanupAnswer is what a cleanup answers: the IDs and their count, and the
// memories themselves only when read allows.
func cleanupAnswer(read, dryRun bool, res memory.CleanupResult) CleanupResult {
	out := CleanupResult{DryRun: dryRun, Batch: res.Batch, IDs: make([]string, 0, len(res.Memories)), Count: len(res.Memories)}
	for _, m := range res.Memories {
		out.IDs = append(out.IDs, m.ID)
	}
	if read {
		out.Memories = memoriesJSON(res.Memories)
	}
	return out
}

// receiptFallback is what a caller without the read right hears of a distiller that failed: the
// error itself may quote what the model made of the session's memories.
const receiptFallback = "the configured distiller failed or proposed something invalid; the built-in one stood in"

// distillAnswer is what a distillation (or a remember of messages) answers: the result, with
// the memories' texts for a caller that may read them, and IDs, events and times only for one
// that may not. Events is never nil.
func distillAnswer(c *Caller, res memory.DistillResult) memory.DistillResult {
	out := memory.DistillResult{Turns: res.Turns, Events: make([]memory.MemoryEvent, 0, len(res.Events)), Fallback: res.Fallback}
	read := c.Can(RightRead)
	for _, e := range res.Events {
		if !read {
			e.Text, e.Previous = "", ""
		}
		out.Events = append(out.Events, e)
	}
	if !read && out.Fallback != "" {
		out.Fallback = receiptFallback
	}
	return out
}
