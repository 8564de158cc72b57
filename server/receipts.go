package server

import (
	"time"

	"github.com/engramdb/engram/memory"
)

// What a write answers a key without the read right: IDs, counts and states, never stored text
// (a memory's text, tags, source or metadata, a conversation's turns and summary, a task's goal,
// steps, results and next step). A key that may read gets the whole object, as GET would show
// it. Every door applies the same rule: the HTTP routes and the MCP tools call these helpers.

// MemoryReceipt answers a change of one memory (PATCH /v1/memories/{id}, POST
// /v1/memories/{id}/revert, the update tool) to a key without the read right.
type MemoryReceipt struct {
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Updated time.Time `json:"updated"`
}

// ConversationReceipt answers POST /v1/sessions/{session}/turns (the add_turn tool) to a key
// without the read right: how many turns the buffer holds and how many were folded into its
// summary so far.
type ConversationReceipt struct {
	Session    string `json:"session"`
	Turns      int    `json:"turns"`
	Compressed int    `json:"compressed"`
}

// TaskReceipt answers a change of a task (POST /v1/tasks, /v1/tasks/{id}/steps,
// /v1/tasks/{id}/finish and their tools) to a key without the read right.
type TaskReceipt struct {
	ID      string            `json:"id"`
	Session string            `json:"session"`
	Status  memory.TaskStatus `json:"status"`
	Steps   int               `json:"steps"`
	Updated time.Time         `json:"updated"`
}

// memoryAnswer is what a write of memory m answers c.
func memoryAnswer(c *Caller, m *memory.Memory) any {
	if c.Can(RightRead) {
		return memory.ToJSON(m, false)
	}
	return MemoryReceipt{ID: m.ID, Session: m.Session, Updated: m.Updated}
}

// conversationAnswer is what a write of conversation conv answers c.
func conversationAnswer(c *Caller, conv memory.Conversation) any {
	if c.Can(RightRead) {
		return conv
	}
	return ConversationReceipt{Session: conv.Session, Turns: len(conv.Turns), Compressed: conv.Compressed}
}

// taskAnswer is what a write of task t answers c.
func taskAnswer(c *Caller, t memory.Task) any {
	if c.Can(RightRead) {
		return t
	}
	return TaskReceipt{ID: t.ID, Session: t.Session, Status: t.Status, Steps: len(t.Steps), Updated: t.Updated}
}

// cleanupAnswer is what a cleanup answers c: the IDs and their count, and the memories
// themselves only when c may read them.
func cleanupAnswer(c *Caller, dryRun bool, res memory.CleanupResult) CleanupResult {
	out := CleanupResult{DryRun: dryRun, Batch: res.Batch, IDs: make([]string, 0, len(res.Memories)), Count: len(res.Memories)}
	for _, m := range res.Memories {
		out.IDs = append(out.IDs, m.ID)
	}
	if c.Can(RightRead) {
		out.Memories = memoriesJSON(res.Memories)
	}
	return out
}
