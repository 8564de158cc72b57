package api

import (
	"encoding/json"
	"time"

	"github.com/engramdb/engram/memory"
)

// The requests and answers of the operations. Each is the JSON body of its
// HTTP route and the input or output of its MCP tool, field for field, and
// what `memctl --json` prints; the jsonschema tags describe the MCP tools'
// arguments. A field added here reaches HTTP and MCP at once (the parity
// test in cmd/memctl holds the CLI to it).

// RememberRequest is the body of POST /v1/remember and the remember tool's input: a text, or a
// conversation's messages (mem0's add(messages, infer=...)).
type RememberRequest struct {
	Session string `json:"session,omitempty" jsonschema:"the user or conversation the memory belongs to (or give user_id, agent_id or run_id); omitted: the default session"`
	ScopeIDs
	Text string `json:"text,omitempty" jsonschema:"what to remember; long text is split into chunks (or give messages)"`
	// Messages, instead of Text, is a conversation to remember (memory.Store.RememberMessages):
	// system and blank messages are skipped; with Infer what the user states about
	// themselves is distilled into memories, without it every message is stored verbatim.
	Messages []memory.Turn `json:"messages,omitempty" jsonschema:"a conversation to remember instead of text, oldest first (role, text, time); system messages are skipped"`
	Infer    bool          `json:"infer,omitempty" jsonschema:"with messages: keep only what the user states about themselves (facts, plans, preferences, corrections), updating or deleting the memories it changes; without infer every message is stored verbatim"`
	// Context: text around the memory that keyword search matches it by at a third of the
	// weight (a conversation turn's neighbouring turns), as memory.RememberOptions.Context.
	Context    string   `json:"context,omitempty" jsonschema:"text around the memory (the neighbouring turns of a conversation) that keyword search matches it by at a third of the weight; not returned as its text"`
	Source     string   `json:"source,omitempty" jsonschema:"where the text came from, e.g. chat"`
	Tags       []string `json:"tags,omitempty" jsonschema:"free-form labels"`
	Importance float64  `json:"importance,omitempty" jsonschema:"importance in (0, 1]; omit for the default"`
	// Time is when the text was said or written (default: now); for messages, the time of
	// those without one.
	Time time.Time `json:"time,omitzero" jsonschema:"when the text was said or written (RFC 3339); for messages, the time of those without one; omit for now"`
	// Metadata: the caller's own attributes (strings, numbers, booleans).
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"your own attributes: strings, numbers or booleans"`
}

// RememberResponse answers a remember. For a text: one entry per chunk (see
// memory.RememberResult). For messages: how many were read and the memories written and deleted
// (memory.DistillResult), then IDs and the flags are empty, and the JSON holds turns, events and
// fallback only. A caller without the read right gets the events without their texts.
type RememberResponse struct {
	IDs        []string `json:"ids,omitempty"`
	Merged     []bool   `json:"merged,omitempty" jsonschema:"true where the chunk updated a near-duplicate memory instead of adding one"`
	Superseded []bool   `json:"superseded,omitempty" jsonschema:"true where the chunk contradicted the memory it merged into (a negation, another number or date): the old version is in its history"`
	Older      []bool   `json:"older,omitempty" jsonschema:"true where the chunk was older than the memory it matched: the newer text stays, the chunk goes to its history"`

	Turns    int                  `json:"turns,omitempty" jsonschema:"messages: how many were read (system and blank ones are skipped)"`
	Events   []memory.MemoryEvent `json:"events,omitempty" jsonschema:"messages: the memories written (add, update) and deleted, in order"`
	Fallback string               `json:"fallback,omitempty" jsonschema:"messages: why the built-in distiller stood in for the configured one"`
}

// MarshalJSON writes a text's answer (ids, merged, superseded, older) or, when Events is not
// nil, a messages' answer (turns, events, fallback), as memory.DistillResult does.
func (r RememberResponse) MarshalJSON() ([]byte, error) {
	if r.Events != nil {
		return json.Marshal(memory.DistillResult{Turns: r.Turns, Events: r.Events, Fallback: r.Fallback})
	}
	type text RememberResponse
	return json.Marshal(text(r))
}

// RecallRequest is the body of POST /v1/recall and the recall tool's input.
type RecallRequest struct {
	Query   string `json:"query,omitempty" jsonschema:"what to look for (may be empty when turns are given)"`
	Session string `json:"session,omitempty" jsonschema:"the session to recall from (or give user_id, agent_id or run_id); omitted: the default session"`
	ScopeIDs
	AllSessions   bool    `json:"all_sessions,omitempty" jsonschema:"recall from every session the caller may read instead"`
	K             int     `json:"k,omitempty" jsonschema:"how many memories to return (default 5)"`
	Mode          string  `json:"mode,omitempty" jsonschema:"candidate sources: hybrid (default), vector or keyword"`
	Fusion        string  `json:"fusion,omitempty" jsonschema:"hybrid fusion: weighted (default) or rrf"`
	VectorWeight  float64 `json:"vector_weight,omitempty" jsonschema:"weight of the vector score in weighted fusion"`
	KeywordWeight float64 `json:"keyword_weight,omitempty" jsonschema:"weight of the keyword score in weighted fusion"`
	// MinScore and MinRelative are the recall's floors: nil means memory.DefaultMinScore (0.05)
	// and DefaultMinRelative (0.2), 0 no floor.
	MinScore    *float64 `json:"min_score,omitempty" jsonschema:"drop memories whose final score (0 to 1) is below this; omitted: 0.05, 0: no floor"`
	MinRelative *float64 `json:"min_relative,omitempty" jsonschema:"drop memories whose final score is below this fraction (0 to 1) of the best result's; omitted: 0.2, 0: none"`
	// AsOf answers from what the store held then (memory.RecallOptions.AsOf), in ParseWhen's
	// forms.
	AsOf string `json:"as_of,omitempty" jsonschema:"answer from what was true then: RFC 3339, YYYY-MM-DD (its end), or an age such as 30d; omitted: now"`
	// Superseded is what happens to memories that newer ones change (ParseSuperseded).
	Superseded    string             `json:"superseded,omitempty" jsonschema:"memories that newer ones change: demote (default: ranked below the newer one and marked stale), hide, or keep (ranked by their own score, still marked)"`
	NoDecay       bool               `json:"no_decay,omitempty" jsonschema:"rank without the time decay"`
	SourceWeights map[string]float64 `json:"source_weights,omitempty" jsonschema:"score multipliers by source"`
	NoTouch       bool               `json:"no_touch,omitempty" jsonschema:"do not count this recall as an access of the memories"`
	// Turns is the recent conversation, oldest first; the query may then be empty.
	Turns []memory.Turn `json:"turns,omitempty" jsonschema:"the recent conversation, oldest first; the latest turns weigh most"`
	// PromptTokens > 0 also returns the memory block for a model prompt.
	PromptTokens int `json:"prompt_tokens,omitempty" jsonschema:"when above 0, also return the memories as a prompt block of at most this many tokens"`
	// Filter restricts the candidates (docs/format/filter.md), within the session or scope.
	Filter *memory.Filter `json:"filter,omitempty" jsonschema:"conditions in engram's JSON filter language, e.g. {\"tags\": \"travel\"}"`
}

// RecallResult is one memory in a RecallResponse: the memory's JSON form and its score.
type RecallResult = memory.ResultJSON

// RecallResponse answers a recall.
type RecallResponse struct {
	Results []RecallResult `json:"results"`
	Prompt  string         `json:"prompt,omitempty"`
	// SessionEmpty is true when the session recalled from holds no memories at all (so an empty
	// result is not about the query); it says nothing about other sessions.
	SessionEmpty bool `json:"session_empty,omitempty"`
}

// ForgetRequest is the body of POST /v1/forget and the forget tool's input: IDs (all must
// exist, or nothing is forgotten), a session with All set to forget every memory of it, or a
// filter (within Session when it is set, else within the caller's scope). Forgotten memories
// stay restorable (Restore) for the store's retention; Purge deletes them for good instead,
// with their copies in the trash and the archive and their history (then IDs may name memories
// that are only forgotten or archived).
type ForgetRequest struct {
	IDs     []string `json:"ids,omitempty" jsonschema:"IDs of the memories to forget, as returned by remember, recall or list"`
	Session *string  `json:"session,omitempty" jsonschema:"with all=true: the session to forget; with filter: forget only in this session"`
	ScopeIDs
	All    bool           `json:"all,omitempty" jsonschema:"forget every memory of the session"`
	Filter *memory.Filter `json:"filter,omitempty" jsonschema:"forget the memories matching this filter (in engram's JSON filter language)"`
	Purge  bool           `json:"purge,omitempty" jsonschema:"delete for good (also from the trash and the archive), instead of keeping the memories restorable"`
}

// ForgetResponse answers a forget. Restorable says whether the forgotten memories can be
// restored, until PurgeAfter.
type ForgetResponse struct {
	Forgotten  int       `json:"forgotten"`
	Purged     bool      `json:"purged,omitempty"`
	Restorable bool      `json:"restorable"`
	PurgeAfter time.Time `json:"purge_after,omitzero"`
}

// RestoreForgottenRequest is the body of POST /v1/restore and the restore tool's input.
type RestoreForgottenRequest struct {
	IDs []string `json:"ids" jsonschema:"IDs of forgotten memories to bring back"`
}

// RestoredResponse answers a restore (from the trash or the archive).
type RestoredResponse struct {
	Restored int `json:"restored"`
}

// ForgottenRequest selects the forgotten memories to list (GET /v1/forgotten).
type ForgottenRequest struct {
	Session *string `json:"session,omitempty" jsonschema:"only this session's; omit for every session the caller may read"`
}

// ForgottenJSON is a forgotten memory: the memory and when it was forgotten and is purged.
type ForgottenJSON struct {
	memory.MemoryJSON
	Forgotten  time.Time `json:"forgotten"`
	PurgeAfter time.Time `json:"purge_after"`
}

// ForgottenResponse answers the trash's listing.
type ForgottenResponse struct {
	Memories []ForgottenJSON `json:"memories"`
}

// PurgedResponse answers emptying the trash.
type PurgedResponse struct {
	Purged int `json:"purged"`
}

// GetRequest names one memory.
type GetRequest struct {
	ID string `json:"id" jsonschema:"the memory's ID, as returned by remember, recall or list"`
	// Vector also returns the memory's embedding.
	Vector bool `json:"vector,omitempty" jsonschema:"also return the memory's embedding"`
}

// ListRequest selects a page of memories (GET /v1/memories, the list tool): every condition
// given is ANDed, within the caller's scope.
type ListRequest struct {
	Session *string `json:"session,omitempty" jsonschema:"the session to list; omit for every session the caller may read"`
	ScopeIDs
	Filter *memory.Filter `json:"filter,omitempty" jsonschema:"further conditions in engram's JSON filter language, e.g. {\"tags\": \"travel\", \"created\": {\"range\": {\"gte\": \"2026-01-01T00:00:00Z\"}}}"`
	Selection
	Limit  int    `json:"limit,omitempty" jsonschema:"page size (default 100, at most 1000)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// Selection is the shorthand for common conditions that list, and the CLI's filter flags for
// every command, take besides a filter; each one given is ANDed (see Filter).
type Selection struct {
	Tags   []string `json:"tags,omitempty" jsonschema:"only memories carrying every one of these tags"`
	Source *string  `json:"source,omitempty" jsonschema:"only memories from this source"`
	Since  string   `json:"since,omitempty" jsonschema:"only memories created at or after this: RFC 3339, YYYY-MM-DD, or an age such as 7d or 12h"`
	Until  string   `json:"until,omitempty" jsonschema:"only memories created at or before this (same forms as since)"`
}

// ListResponse answers a list.
type ListResponse struct {
	Memories   []memory.MemoryJSON `json:"memories"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// UpdateRequest is the body of PATCH /v1/memories/{id}: the fields to replace.
type UpdateRequest struct {
	Text       *string         `json:"text,omitempty" jsonschema:"the new text (re-embedded)"`
	Source     *string         `json:"source,omitempty" jsonschema:"the new source"`
	Tags       *[]string       `json:"tags,omitempty" jsonschema:"replaces all tags"`
	Importance *float64        `json:"importance,omitempty" jsonschema:"importance in (0, 1]"`
	Metadata   *map[string]any `json:"metadata,omitempty" jsonschema:"replaces all metadata (strings, numbers, booleans)"`
}

// DeleteResponse answers the deletion of one memory.
type DeleteResponse struct {
	Deleted string `json:"deleted"`
}

// HistoryResponse answers a memory's history, oldest version first.
type HistoryResponse struct {
	ID       string               `json:"id"`
	Versions []memory.VersionJSON `json:"versions"`
}

// RevertRequest is the body of POST /v1/memories/{id}/revert.
type RevertRequest struct {
	Version int `json:"version" jsonschema:"the version to bring back, as history numbers them"`
}

// SessionJSON is one session of a SessionsResponse.
type SessionJSON struct {
	Name     string    `json:"name"`
	Memories int       `json:"memories"`
	Newest   time.Time `json:"newest"`
}

// SessionsResponse lists the sessions the caller may read.
type SessionsResponse struct {
	Sessions []SessionJSON `json:"sessions"`
}

// ClearedResponse answers clearing a conversation.
type ClearedResponse struct {
	Cleared bool `json:"cleared"`
}

// TasksResponse lists the tasks the caller may read.
type TasksResponse struct {
	Tasks []memory.Task `json:"tasks"`
}

// StartTaskRequest is the body of POST /v1/tasks.
type StartTaskRequest struct {
	ID   string `json:"id,omitempty" jsonschema:"the task ID; omit for a random one"`
	Goal string `json:"goal" jsonschema:"what the task is for"`
	// Session is the session the task works for; a scoped key must name
	// one of its sessions.
	Session string `json:"session,omitempty" jsonschema:"the session the task works for"`
}

// StepRequest is the body of POST /v1/tasks/{id}/steps.
type StepRequest struct {
	Name   string            `json:"name" jsonschema:"the step's name; a step of the same name is replaced"`
	Status memory.StepStatus `json:"status,omitempty" jsonschema:"pending, running, done, failed or skipped (default pending)"`
	Result json.RawMessage   `json:"result,omitempty" jsonschema:"the step's intermediate result, any JSON value"`
	Next   string            `json:"next,omitempty" jsonschema:"the next step to run"`
}

// FinishRequest is the body of POST /v1/tasks/{id}/finish.
type FinishRequest struct {
	Status memory.TaskStatus `json:"status,omitempty" jsonschema:"done (default) or failed"`
}

// DeletedResponse answers the deletion of a task.
type DeletedResponse struct {
	Deleted bool `json:"deleted"`
}
