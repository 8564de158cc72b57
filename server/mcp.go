package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// Version is reported to MCP clients.
const Version = "0.1.0"

// MCPRememberInput is the remember tool's input.
type MCPRememberInput struct {
	Session    string         `json:"session" jsonschema:"the user or conversation the memory belongs to"`
	Text       string         `json:"text" jsonschema:"what to remember; long text is split into chunks"`
	Source     string         `json:"source,omitempty" jsonschema:"where the text came from, e.g. chat"`
	Tags       []string       `json:"tags,omitempty" jsonschema:"free-form labels"`
	Importance float64        `json:"importance,omitempty" jsonschema:"importance in (0, 1]; omit for the default"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"your own attributes: strings, numbers or booleans"`
}

// MCPRememberOutput is the remember tool's output.
type MCPRememberOutput struct {
	IDs        []string `json:"ids"`
	Merged     []bool   `json:"merged" jsonschema:"true where the chunk updated a near-duplicate memory instead of adding one"`
	Superseded []bool   `json:"superseded" jsonschema:"true where the chunk contradicted the memory it merged into (a negation, another number or date): the old version is in its history"`
}

// MCPRecallInput is the recall tool's input.
type MCPRecallInput struct {
	Session string    `json:"session" jsonschema:"the session to recall from"`
	Query   string    `json:"query,omitempty" jsonschema:"what to look for (may be empty when turns are given)"`
	K       int       `json:"k,omitempty" jsonschema:"how many memories to return (default 5)"`
	Filter  MCPFilter `json:"filter,omitempty" jsonschema:"conditions in engram's JSON filter language, e.g. {\"tags\": \"travel\"}"`
	// Turns is the recent conversation: a chat loop recalls for where the conversation is.
	Turns []memory.Turn `json:"turns,omitempty" jsonschema:"the recent conversation, oldest first; the latest turns weigh most"`
}

// MCPMemory is one recalled memory: its JSON form and score, as over HTTP.
type MCPMemory = memory.ResultJSON

// MCPRecallOutput is the recall tool's output.
type MCPRecallOutput struct {
	Memories []MCPMemory `json:"memories"`
	// SessionEmpty is true when the session holds no memories at all.
	SessionEmpty bool `json:"session_empty,omitempty"`
}

// MCPForgetInput is the forget tool's input: IDs (all must exist, or nothing is deleted), or a
// session and a filter.
type MCPForgetInput struct {
	IDs     []string  `json:"ids,omitempty" jsonschema:"IDs of the memories to delete, as returned by remember or recall"`
	Session string    `json:"session,omitempty" jsonschema:"with filter: the session to delete from"`
	Filter  MCPFilter `json:"filter,omitempty" jsonschema:"with session: delete the session's memories matching this filter"`
	Purge   bool      `json:"purge,omitempty" jsonschema:"delete for good (also from the trash and the archive), instead of keeping the memories restorable"`
}

// MCPForgetOutput is the forget tool's output (ForgetResponse).
type MCPForgetOutput = ForgetResponse

// MCPRestoreInput is the restore tool's input.
type MCPRestoreInput struct {
	IDs []string `json:"ids" jsonschema:"IDs of forgotten memories to bring back"`
}

// MCPRestoreOutput is the restore tool's output.
type MCPRestoreOutput struct {
	Restored int `json:"restored"`
}

// NewMCP returns an MCP server exposing store as remember, recall and forget
// tools, with the session as a parameter of each call, for a local transport
// (stdio): every call acts as LocalCaller.
func NewMCP(store *memory.Store) *mcp.Server { return newMCP(store, LocalCaller) }

// mcpCallerKey is where mcpRoute puts the Caller in the SDK's TokenInfo.
const mcpCallerKey = "engram.caller"

// mcpCaller returns the caller of a tool call: the key mcpRoute attached, or
// fallback on a transport without keys. No caller at all means nobody.
func mcpCaller(extra *mcp.RequestExtra, fallback *Caller) *Caller {
	if extra != nil && extra.TokenInfo != nil {
		if c, ok := extra.TokenInfo.Extra[mcpCallerKey].(*Caller); ok {
			return c
		}
		return nobody
	}
	if fallback != nil {
		return fallback
	}
	return nobody
}

// addTool is mcp.AddTool with the tool's error explained (see explainTool): a
// full disk reads as such to the model and its user, as the 507 does over HTTP.
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		return res, out, explainTool(err)
	})
}

// newMCP builds the MCP server; each tool checks its caller's right and
// session scope like the HTTP routes do.
func newMCP(store *memory.Store, fallback *Caller) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "engram", Version: Version}, &mcp.ServerOptions{
		Instructions: "engram is the user's long-term memory. Call recall before answering questions that may depend on " +
			"earlier conversations, and remember for facts worth keeping (preferences, plans, names, decisions).",
	})
	addTool(s, &mcp.Tool{Name: "remember", Description: "Store a memory for a session."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPRememberInput) (*mcp.CallToolResult, MCPRememberOutput, error) {
			if err := mcpCaller(req.Extra, fallback).Check(RightWrite, in.Session); err != nil {
				return nil, MCPRememberOutput{}, err
			}
			res, err := store.Remember(ctx, in.Session, in.Text, memory.RememberOptions{Source: in.Source, Tags: in.Tags, Importance: in.Importance, Metadata: in.Metadata})
			if err != nil {
				return nil, MCPRememberOutput{}, err
			}
			return nil, MCPRememberOutput{IDs: res.IDs, Merged: res.Merged, Superseded: res.Superseded}, nil
		})
	addTool(s, &mcp.Tool{Name: "recall", Description: "Recall the memories of a session most relevant to a query."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPRecallInput) (*mcp.CallToolResult, MCPRecallOutput, error) {
			if err := mcpCaller(req.Extra, fallback).Check(RightRead, in.Session); err != nil {
				return nil, MCPRecallOutput{}, err
			}
			f, err := parseMCPFilter(in.Filter)
			if err != nil {
				return nil, MCPRecallOutput{}, err
			}
			results, err := store.Recall(ctx, in.Query, memory.RecallOptions{Session: in.Session, K: in.K, Filter: f, Turns: in.Turns})
			if err != nil {
				return nil, MCPRecallOutput{}, err
			}
			out := MCPRecallOutput{Memories: make([]MCPMemory, 0, len(results))}
			var text strings.Builder
			for i, r := range results {
				out.Memories = append(out.Memories, memory.ResultToJSON(&results[i]))
				fmt.Fprintf(&text, "- %s (id %s, score %.3f)\n", r.Text, r.ID, r.Score.Final)
			}
			if len(results) == 0 {
				n, err := store.Count(ctx, memory.Eq(memory.FieldSession, in.Session))
				if err != nil {
					return nil, MCPRecallOutput{}, err
				}
				out.SessionEmpty = n == 0
				if out.SessionEmpty {
					fmt.Fprintf(&text, "session %q holds no memories", in.Session)
				} else {
					text.WriteString("no memories found")
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}}, out, nil
		})
	addTool(s, &mcp.Tool{Name: "forget", Description: "Forget memories by ID (all must exist, or nothing is forgotten), or the memories of a session that match a filter. " +
		"Forgotten memories stay restorable with the restore tool for the store's retention (the answer says until when); purge=true deletes them for good."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPForgetInput) (*mcp.CallToolResult, MCPForgetOutput, error) {
			c := mcpCaller(req.Extra, fallback)
			if err := c.Check(RightWrite); err != nil {
				return nil, MCPForgetOutput{}, err
			}
			switch {
			case len(in.IDs) > 0 && in.Filter != nil:
				return nil, MCPForgetOutput{}, errors.New("forget: give ids, or session and filter, not both")
			case len(in.IDs) > 0 && in.Purge:
				n, err := purgeIDsCtx(ctx, store, c, in.IDs)
				return nil, forgetResponse(store, n, true), err
			case len(in.IDs) > 0:
				n, err := forgetIDsCtx(ctx, store, c, in.IDs, func(ctx context.Context, c *Caller, ids []string) ([]string, error) {
					return scopeIDs(ctx, store, c, ids)
				})
				return nil, forgetResponse(store, n, false), err
			case in.Filter == nil:
				return nil, MCPForgetOutput{}, errors.New("forget: give ids, or session and filter")
			}
			if err := c.Check(RightWrite, in.Session); err != nil {
				return nil, MCPForgetOutput{}, err
			}
			f, err := parseMCPFilter(in.Filter)
			if err != nil {
				return nil, MCPForgetOutput{}, err
			}
			where := store.ForgetWhere
			if in.Purge {
				where = store.PurgeWhere
			}
			n, err := where(ctx, memory.And(f, memory.Eq(memory.FieldSession, in.Session)))
			if err != nil {
				return nil, MCPForgetOutput{}, err
			}
			return nil, forgetResponse(store, n, in.Purge), nil
		})
	addTool(s, &mcp.Tool{Name: "restore", Description: "Bring forgotten memories back by ID, with their text, metadata and history (all must be in the trash, or nothing is restored)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPRestoreInput) (*mcp.CallToolResult, MCPRestoreOutput, error) {
			c := mcpCaller(req.Extra, fallback)
			if err := c.Check(RightWrite); err != nil {
				return nil, MCPRestoreOutput{}, err
			}
			n, err := restoreForgottenCtx(ctx, store, c, in.IDs)
			return nil, MCPRestoreOutput{Restored: n}, err
		})
	addMemoryTools(s, store, fallback)  // mcp_memories.go
	addContextTools(s, store, fallback) // mcp_context.go
	return s
}
