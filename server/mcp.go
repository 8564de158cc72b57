package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// The MCP tools translate tool calls to the request layer (package api):
// each tool's input is its operation's request (path values such as a
// memory's ID become fields of it), its structured output the operation's
// answer, as over HTTP. What a tool checks, refuses and answers is defined
// there once.

// Version is reported to MCP clients.
const Version = "0.1.0"

// The tools' inputs and outputs (package api), under the names the MCP
// tools had.
type (
	MCPRememberOutput = api.RememberResponse
	MCPRecallOutput   = api.RecallResponse
	// MCPMemory is one recalled memory: its JSON form and score, as over HTTP.
	MCPMemory        = memory.ResultJSON
	MCPForgetOutput  = api.ForgetResponse
	MCPRestoreOutput = api.RestoredResponse
	MCPListOutput    = api.ListResponse
	MCPDeleteOutput  = api.DeleteResponse
	MCPHistoryOutput = api.HistoryResponse
)

// MCPIDInput names one memory.
type MCPIDInput struct {
	ID string `json:"id" jsonschema:"the memory's ID, as returned by remember, recall or list"`
}

// MCPUpdateInput is the update tool's input: the memory and the fields to replace.
type MCPUpdateInput struct {
	ID string `json:"id" jsonschema:"the memory to change"`
	api.UpdateRequest
}

// MCPRevertInput is the revert tool's input.
type MCPRevertInput struct {
	ID string `json:"id" jsonschema:"the memory to revert"`
	api.RevertRequest
}

// MCPSessionInput names a session.
type MCPSessionInput struct {
	Session string `json:"session" jsonschema:"the user or conversation"`
}

// MCPAddTurnInput is the add_turn tool's input.
type MCPAddTurnInput struct {
	Session string    `json:"session" jsonschema:"the user or conversation"`
	Role    string    `json:"role" jsonschema:"who spoke, e.g. user or assistant"`
	Text    string    `json:"text" jsonschema:"what was said"`
	Time    time.Time `json:"time,omitzero" jsonschema:"when (RFC 3339); omit for now"`
}

// MCPTaskInput names a task (its session too when the key sees tasks of
// the ID in several sessions).
type MCPTaskInput = api.TaskRef

// MCPStepInput is the update_step tool's input.
type MCPStepInput struct {
	api.TaskRef
	api.StepRequest
}

// MCPFinishInput is the finish_task tool's input.
type MCPFinishInput struct {
	api.TaskRef
	api.FinishRequest
}

// NewMCP returns an MCP server exposing store's memories, conversations and
// tasks as tools, with the session as a parameter of each call, for a local
// transport (stdio): every call acts as LocalCaller.
func NewMCP(store *memory.Store) *mcp.Server {
	return NewMCPFor(api.New(store, api.Options{}), LocalCaller)
}

// mcpCallerKey is where mcpRoute puts the Caller in the SDK's TokenInfo.
const mcpCallerKey = "engram.caller"

// mcpCaller returns the caller of a tool call: the key mcpRoute attached, or
// fallback on a transport without keys; nil (nobody) when there is neither.
func mcpCaller(extra *mcp.RequestExtra, fallback *Caller) *Caller {
	if extra != nil && extra.TokenInfo != nil {
		c, _ := extra.TokenInfo.Extra[mcpCallerKey].(*Caller)
		return c
	}
	return fallback
}

// mcpSchemas are the JSON schemas of the types whose JSON form is not their
// Go structure: a filter is an object of the filter language, a step's
// result any JSON value, and a turn needs only its text.
var mcpSchemas = func() map[reflect.Type]*jsonschema.Schema {
	turn, err := jsonschema.For[memory.Turn](nil)
	if err != nil {
		panic(err) // a fixed type: fails in every test run or never
	}
	turn.Required = []string{"text"}
	turn.Properties["role"].Description = "who spoke, e.g. user or assistant"
	turn.Properties["text"].Description = "what was said"
	turn.Properties["time"].Description = "when (RFC 3339); omit for now"
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[memory.Filter]():   {Type: "object", Description: "a filter in engram's JSON filter language (docs/format/filter.md)"},
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[memory.Turn]():     turn,
	}
}()

// addTool registers a tool whose input In the request layer's op takes. Its
// input schema comes from In (with mcpSchemas); the call runs under the
// caller mcpCaller finds, and its error is explained (see explainTool): a
// full disk reads as such to the model and its user, as the 507 does over
// HTTP, and a write that failed part way names the IDs it stored.
// text, if not nil, writes the answer's text content (by default the JSON).
func addTool[In, Out any](s *mcp.Server, fallback *Caller, t *mcp.Tool, op func(ctx context.Context, in In) (Out, error), text func(In, Out) string) {
	schema, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: mcpSchemas})
	if err != nil {
		panic(fmt.Sprintf("server: tool %s: %v", t.Name, err)) // a fixed type: fails in every test run or never
	}
	t.InputSchema = schema
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		c := mcpCaller(req.Extra, fallback)
		if c != nil {
			ctx = api.WithCaller(ctx, c)
		}
		out, err := op(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, explainTool(err)
		}
		if text == nil {
			return nil, out, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text(in, out)}}}, out, nil
	})
}

// untyped drops the type of op's answer, for tools without an output schema:
// conversations and tasks (whose step results are any JSON), and writes
// that answer a key without the read right with a receipt instead.
func untyped[In, Out any](op func(context.Context, In) (Out, error)) func(context.Context, In) (any, error) {
	return func(ctx context.Context, in In) (any, error) { return op(ctx, in) }
}

// NewMCPFor returns the MCP tools over ops: the request layer on a store
// (api.Local), or a client of the server that holds it (memctl mcp on a
// served store). fallback is the caller of calls that carry no key (stdio);
// over HTTP every call carries the key that opened its session (mcpRoute).
func NewMCPFor(ops api.Ops, fallback *Caller) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "engram", Version: Version}, &mcp.ServerOptions{
		Instructions: "engram is the user's long-term memory. Call recall before answering questions that may depend on " +
			"earlier conversations, and remember for facts worth keeping (preferences, plans, names, decisions).",
	})
	f := fallback
	// Long-term memory.
	addTool(s, f, &mcp.Tool{Name: "remember", Description: "Store a memory for a session: a text, or a conversation's messages " +
		"(with infer=true only what the user states about themselves, updating what it changes; without, every message verbatim). " +
		"user_id, agent_id and run_id scope it as in mem0."}, ops.Remember, nil)
	addTool(s, f, &mcp.Tool{Name: "recall", Description: "Recall the memories of a session (or of a user_id, agent_id, run_id) most relevant to a query."}, ops.Recall, recallText)
	addTool(s, f, &mcp.Tool{Name: "forget", Description: "Forget memories by ID (all must exist, or nothing is forgotten), every memory of a session (session and all=true), " +
		"or the memories that match a filter (in session, else in every session the key may use). " +
		"Forgotten memories stay restorable with the restore tool for the store's retention (the answer says until when); purge=true deletes them for good."},
		ops.Forget, nil)
	addTool(s, f, &mcp.Tool{Name: "restore", Description: "Bring forgotten memories back by ID, with their text, metadata and history (all must be in the trash, or nothing is restored)."},
		ops.RestoreForgotten, nil)
	addTool(s, f, &mcp.Tool{Name: "forgotten", Description: "List forgotten memories (the trash), restorable with the restore tool until their purge date."},
		ops.Forgotten, nil)
	addTool(s, f, &mcp.Tool{Name: "sessions", Description: "List the sessions with memories, with their counts."},
		func(ctx context.Context, _ struct{}) (api.SessionsResponse, error) { return ops.Sessions(ctx) }, nil)
	// Single memories.
	addTool(s, f, &mcp.Tool{Name: "get", Description: "Get one memory by ID."}, ops.Get, nil)
	addTool(s, f, &mcp.Tool{Name: "list", Description: "List memories, newest first: a session's (or every session's the key may read), optionally filtered."},
		ops.List, nil)
	addTool(s, f, &mcp.Tool{Name: "update", Description: "Change a memory's text, source, tags, importance or metadata; the earlier version is kept in its history."},
		untyped(func(ctx context.Context, in MCPUpdateInput) (api.MemoryAnswer, error) {
			return ops.Update(ctx, in.ID, in.UpdateRequest)
		}), nil)
	addTool(s, f, &mcp.Tool{Name: "delete", Description: "Delete one memory by ID, with its history."},
		func(ctx context.Context, in MCPIDInput) (api.DeleteResponse, error) { return ops.Delete(ctx, in.ID) }, nil)
	addTool(s, f, &mcp.Tool{Name: "history", Description: "The earlier versions of a memory (what merges, updates and superseding facts replaced), oldest first."},
		func(ctx context.Context, in MCPIDInput) (api.HistoryResponse, error) { return ops.History(ctx, in.ID) }, nil)
	addTool(s, f, &mcp.Tool{Name: "revert", Description: "Bring an earlier version of a memory back (as history numbers them); the current one goes to its history."},
		untyped(func(ctx context.Context, in MCPRevertInput) (api.MemoryAnswer, error) {
			return ops.Revert(ctx, in.ID, in.RevertRequest)
		}), nil)
	// Short-term memory: a session's conversation buffer.
	addTool(s, f, &mcp.Tool{Name: "context", Description: "Read a session's short-term memory: a summary of older turns and the recent turns verbatim."},
		untyped(func(ctx context.Context, in MCPSessionInput) (memory.Conversation, error) {
			return ops.Context(ctx, in.Session)
		}), nil)
	addTool(s, f, &mcp.Tool{Name: "add_turn", Description: "Append a turn to a session's conversation buffer; older turns are summarized past its budget."},
		untyped(func(ctx context.Context, in MCPAddTurnInput) (api.ConversationAnswer, error) {
			return ops.AddTurn(ctx, in.Session, memory.Turn{Role: in.Role, Text: in.Text, Time: in.Time})
		}), nil)
	addTool(s, f, &mcp.Tool{Name: "distill", Description: "Turn the session's conversation turns not yet distilled into long-term memories: " +
		"what the user states about themselves, their plans, preferences and corrections (turns leaving the buffer are distilled by themselves)."},
		func(ctx context.Context, in MCPSessionInput) (memory.DistillResult, error) {
			return ops.Distill(ctx, in.Session)
		}, nil)
	addTool(s, f, &mcp.Tool{Name: "clear_context", Description: "Delete a session's conversation buffer and summary."},
		func(ctx context.Context, in MCPSessionInput) (api.ClearedResponse, error) {
			return ops.ClearContext(ctx, in.Session)
		}, nil)
	// Working memory: tasks.
	addTool(s, f, &mcp.Tool{Name: "tasks", Description: "List the tasks (working memory of multi-step jobs) the caller may see."},
		untyped(func(ctx context.Context, _ struct{}) (api.TasksResponse, error) { return ops.Tasks(ctx) }), nil)
	addTool(s, f, &mcp.Tool{Name: "task", Description: "Read a task: its steps with results, the next step, timestamps."},
		untyped(ops.Task), nil)
	addTool(s, f, &mcp.Tool{Name: "start_task", Description: "Start a task, so a multi-step job can resume after a crash."},
		untyped(ops.StartTask), nil)
	addTool(s, f, &mcp.Tool{Name: "update_step", Description: "Record a step of a task (status, result) and the next step."},
		untyped(func(ctx context.Context, in MCPStepInput) (api.TaskAnswer, error) {
			return ops.UpdateStep(ctx, in.TaskRef, in.StepRequest)
		}), nil)
	addTool(s, f, &mcp.Tool{Name: "finish_task", Description: "Mark a task done or failed."},
		untyped(func(ctx context.Context, in MCPFinishInput) (api.TaskAnswer, error) {
			return ops.FinishTask(ctx, in.TaskRef, in.FinishRequest)
		}), nil)
	addTool(s, f, &mcp.Tool{Name: "delete_task", Description: "Delete a task."},
		ops.DeleteTask, nil)
	return s
}

// recallText is the recall tool's text: one line per memory, or why there is none.
func recallText(in api.RecallRequest, out api.RecallResponse) string {
	var text strings.Builder
	if out.Prompt != "" {
		return out.Prompt
	}
	for _, r := range out.Results {
		fmt.Fprintf(&text, "- %s (id %s, score %.3f)\n", r.Text, r.ID, r.Score.Final)
	}
	switch {
	case len(out.Results) > 0:
	case out.SessionEmpty:
		fmt.Fprintf(&text, "session %q holds no memories", in.ScopeIDs.SessionOf(in.Session))
	default:
		text.WriteString("no memories found")
	}
	return text.String()
}
