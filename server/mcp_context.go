package server

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// MCP tools for short-term memory (a session's conversation buffer) and working memory (tasks).
// Each checks its caller like the HTTP routes: the right, and the session of the conversation or
// task; a task outside the caller's scope answers like a missing one. Their outputs are the JSON
// of memory.Conversation and memory.Task (as over HTTP), without an output schema; a write answers
// a key without the read right with a receipt instead (receipts.go).

// MCPSessionInput names a session.
type MCPSessionInput struct {
	Session string `json:"session" jsonschema:"the user or conversation"`
}

// MCPAddTurnInput is the add_turn tool's input.
type MCPAddTurnInput struct {
	Session string `json:"session" jsonschema:"the user or conversation"`
	Role    string `json:"role" jsonschema:"who spoke, e.g. user or assistant"`
	Text    string `json:"text" jsonschema:"what was said"`
}

// MCPStartTaskInput is the start_task tool's input.
type MCPStartTaskInput struct {
	ID      string `json:"id,omitempty" jsonschema:"the task ID; omit for a random one"`
	Goal    string `json:"goal" jsonschema:"what the task is for"`
	Session string `json:"session,omitempty" jsonschema:"the session the task works for"`
}

// MCPTaskInput names a task.
type MCPTaskInput struct {
	ID      string  `json:"id" jsonschema:"the task ID"`
	Session *string `json:"session,omitempty" jsonschema:"the task's session; task IDs are per session, so it is needed only when the key sees tasks of this ID in several sessions"`
}

// MCPStepInput is the update_step tool's input.
type MCPStepInput struct {
	ID      string  `json:"id" jsonschema:"the task ID"`
	Session *string `json:"session,omitempty" jsonschema:"the task's session; task IDs are per session, so it is needed only when the key sees tasks of this ID in several sessions"`
	Name    string  `json:"name" jsonschema:"the step's name; a step of the same name is replaced"`
	Status  string  `json:"status,omitempty" jsonschema:"pending, running, done, failed or skipped (default pending)"`
	Result  any     `json:"result,omitempty" jsonschema:"the step's intermediate result, any JSON value"`
	Next    string  `json:"next,omitempty" jsonschema:"the next step to run"`
}

// MCPFinishInput is the finish_task tool's input.
type MCPFinishInput struct {
	ID      string  `json:"id" jsonschema:"the task ID"`
	Session *string `json:"session,omitempty" jsonschema:"the task's session; task IDs are per session, so it is needed only when the key sees tasks of this ID in several sessions"`
	Status  string  `json:"status,omitempty" jsonschema:"done (default) or failed"`
}

// addContextTools registers the short-term and working-memory tools.
func addContextTools(s *mcp.Server, store *memory.Store, fallback *Caller) {
	caller := func(req *mcp.CallToolRequest) *Caller { return mcpCaller(req.Extra, fallback) }
	// task loads a task the caller may use with right want (see findTask).
	task := func(ctx context.Context, c *Caller, want Right, session *string, id string) (memory.Task, error) {
		if err := c.Check(want); err != nil {
			return memory.Task{}, err
		}
		return findTask(ctx, store, c, session, id)
	}
	addTool(s, &mcp.Tool{Name: "context", Description: "Read a session's short-term memory: a summary of older turns and the recent turns verbatim."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPSessionInput) (*mcp.CallToolResult, any, error) {
			if err := caller(req).Check(RightRead, in.Session); err != nil {
				return nil, nil, err
			}
			c, err := store.Context(ctx, in.Session)
			return nil, c, err
		})
	addTool(s, &mcp.Tool{Name: "add_turn", Description: "Append a turn to a session's conversation buffer; older turns are summarized past its budget."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPAddTurnInput) (*mcp.CallToolResult, any, error) {
			if err := caller(req).Check(RightWrite, in.Session); err != nil {
				return nil, nil, err
			}
			c, err := store.AddTurn(ctx, in.Session, memory.Turn{Role: in.Role, Text: in.Text})
			if err != nil {
				return nil, nil, err
			}
			return nil, conversationAnswer(caller(req), c), nil
		})
	addTool(s, &mcp.Tool{Name: "clear_context", Description: "Delete a session's conversation buffer and summary."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPSessionInput) (*mcp.CallToolResult, any, error) {
			if err := caller(req).Check(RightWrite, in.Session); err != nil {
				return nil, nil, err
			}
			if err := store.ClearConversation(ctx, in.Session); err != nil {
				return nil, nil, err
			}
			return nil, map[string]bool{"cleared": true}, nil
		})
	addTool(s, &mcp.Tool{Name: "tasks", Description: "List the tasks (working memory of multi-step jobs) the caller may see."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			c := caller(req)
			if err := c.Check(RightRead); err != nil {
				return nil, nil, err
			}
			ts, err := store.Tasks(ctx)
			if err != nil {
				return nil, nil, err
			}
			return nil, map[string]any{"tasks": VisibleBy(c, ts, func(t memory.Task) string { return t.Session })}, nil
		})
	addTool(s, &mcp.Tool{Name: "task", Description: "Read a task: its steps with results, the next step, timestamps."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPTaskInput) (*mcp.CallToolResult, any, error) {
			t, err := task(ctx, caller(req), RightRead, in.Session, in.ID)
			return nil, t, err
		})
	addTool(s, &mcp.Tool{Name: "start_task", Description: "Start a task, so a multi-step job can resume after a crash."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPStartTaskInput) (*mcp.CallToolResult, any, error) {
			if err := caller(req).Check(RightWrite, in.Session); err != nil {
				return nil, nil, err
			}
			t, err := store.StartSessionTask(ctx, in.Session, in.ID, in.Goal)
			if err != nil {
				return nil, nil, err
			}
			return nil, taskAnswer(caller(req), t), nil
		})
	addTool(s, &mcp.Tool{Name: "update_step", Description: "Record a step of a task (status, result) and the next step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPStepInput) (*mcp.CallToolResult, any, error) {
			t, err := task(ctx, caller(req), RightWrite, in.Session, in.ID)
			if err != nil {
				return nil, nil, err
			}
			st := memory.Step{Name: in.Name, Status: memory.StepStatus(in.Status)}
			if in.Result != nil {
				b, err := json.Marshal(in.Result)
				if err != nil {
					return nil, nil, err
				}
				st.Result = b
			}
			t, err = store.UpdateSessionStep(ctx, t.Session, t.ID, st, in.Next)
			if err != nil {
				return nil, nil, err
			}
			return nil, taskAnswer(caller(req), t), nil
		})
	addTool(s, &mcp.Tool{Name: "finish_task", Description: "Mark a task done or failed."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPFinishInput) (*mcp.CallToolResult, any, error) {
			t, err := task(ctx, caller(req), RightWrite, in.Session, in.ID)
			if err != nil {
				return nil, nil, err
			}
			status := memory.TaskStatus(in.Status)
			if status == "" {
				status = memory.TaskDone
			}
			t, err = store.FinishSessionTask(ctx, t.Session, t.ID, status)
			if err != nil {
				return nil, nil, err
			}
			return nil, taskAnswer(caller(req), t), nil
		})
	addTool(s, &mcp.Tool{Name: "delete_task", Description: "Delete a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPTaskInput) (*mcp.CallToolResult, any, error) {
			t, err := task(ctx, caller(req), RightWrite, in.Session, in.ID)
			if err != nil {
				return nil, nil, err
			}
			if err := store.DeleteSessionTask(ctx, t.Session, t.ID); err != nil {
				return nil, nil, err
			}
			return nil, map[string]bool{"deleted": true}, nil
		})
}
