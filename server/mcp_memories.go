package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// The MCP tools for single memories: get, list, update, delete, history. Like the HTTP
// routes, each checks its caller's right, and a memory outside the caller's scope is reported
// missing. update answers the memory as it now is, or a MemoryReceipt to a key without the read
// right (so it has no output schema).

// MCPFilter is a filter in the JSON filter language (docs/format/filter.md), as the tools take it.
type MCPFilter = map[string]any

// parseMCPFilter decodes a tool's filter argument; nil stays nil.
func parseMCPFilter(f MCPFilter) (*memory.Filter, error) {
	if f == nil {
		return nil, nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", memory.ErrInvalidFilter, err)
	}
	return memory.ParseFilter(b)
}

// MCPIDInput names one memory.
type MCPIDInput struct {
	ID string `json:"id" jsonschema:"the memory's ID, as returned by remember, recall or list"`
}

// MCPListInput is the list tool's input.
type MCPListInput struct {
	Session string    `json:"session" jsonschema:"the session to list"`
	Filter  MCPFilter `json:"filter,omitempty" jsonschema:"further conditions in engram's JSON filter language, e.g. {\"tags\": \"travel\", \"created\": {\"range\": {\"gte\": \"2026-01-01T00:00:00Z\"}}}"`
	Limit   int       `json:"limit,omitempty" jsonschema:"page size (default 100, at most 1000)"`
	Cursor  string    `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// MCPListOutput is the list tool's output.
type MCPListOutput struct {
	Memories   []memory.MemoryJSON `json:"memories"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// MCPUpdateInput is the update tool's input: the fields to replace.
type MCPUpdateInput struct {
	ID         string         `json:"id" jsonschema:"the memory to change"`
	Text       *string        `json:"text,omitempty" jsonschema:"the new text (re-embedded)"`
	Source     *string        `json:"source,omitempty"`
	Tags       *[]string      `json:"tags,omitempty" jsonschema:"replaces all tags"`
	Importance *float64       `json:"importance,omitempty" jsonschema:"importance in (0, 1]"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"replaces all metadata (strings, numbers, booleans)"`
}

// MCPDeleteOutput is the delete tool's output.
type MCPDeleteOutput struct {
	Deleted string `json:"deleted"`
}

// MCPHistoryOutput is the history tool's output.
type MCPHistoryOutput struct {
	ID       string               `json:"id"`
	Versions []memory.VersionJSON `json:"versions"`
}

// mcpMemory returns memory id if the caller may use it with right.
func mcpMemory(ctx context.Context, store *memory.Store, c *Caller, id string, right Right) (memory.Memory, error) {
	if err := c.Check(right); err != nil {
		return memory.Memory{}, err
	}
	m, err := store.Lookup(ctx, id)
	if err != nil {
		return memory.Memory{}, err
	}
	if !c.MayUse(m.Session) {
		return memory.Memory{}, &memory.NotFoundError{IDs: []string{id}}
	}
	return m, c.Check(right, m.Session)
}

func addMemoryTools(s *mcp.Server, store *memory.Store, fallback *Caller) {
	addTool(s, &mcp.Tool{Name: "get", Description: "Get one memory by ID."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPIDInput) (*mcp.CallToolResult, memory.MemoryJSON, error) {
			m, err := mcpMemory(ctx, store, mcpCaller(req.Extra, fallback), in.ID, RightRead)
			if err != nil {
				return nil, memory.MemoryJSON{}, err
			}
			return nil, memory.ToJSON(&m, false), nil
		})
	addTool(s, &mcp.Tool{Name: "list", Description: "List a session's memories, newest first, optionally filtered."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPListInput) (*mcp.CallToolResult, MCPListOutput, error) {
			if err := mcpCaller(req.Extra, fallback).Check(RightRead, in.Session); err != nil {
				return nil, MCPListOutput{}, err
			}
			f, err := parseMCPFilter(in.Filter)
			if err != nil {
				return nil, MCPListOutput{}, err
			}
			sf := memory.Eq(memory.FieldSession, in.Session)
			if f != nil {
				sf = memory.And(f, sf)
			}
			page, err := store.List(ctx, memory.ListOptions{Filter: sf, Limit: in.Limit, Cursor: in.Cursor})
			if err != nil {
				return nil, MCPListOutput{}, err
			}
			out := MCPListOutput{Memories: make([]memory.MemoryJSON, 0, len(page.Memories)), NextCursor: page.Next}
			for i := range page.Memories {
				out.Memories = append(out.Memories, memory.ToJSON(&page.Memories[i], false))
			}
			return nil, out, nil
		})
	addTool(s, &mcp.Tool{Name: "update", Description: "Change a memory's text, source, tags, importance or metadata; the earlier version is kept in its history."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPUpdateInput) (*mcp.CallToolResult, any, error) {
			c := mcpCaller(req.Extra, fallback)
			if _, err := mcpMemory(ctx, store, c, in.ID, RightWrite); err != nil {
				return nil, nil, err
			}
			o := memory.UpdateOptions{Text: in.Text, Source: in.Source, Tags: in.Tags, Importance: in.Importance}
			if in.Metadata != nil {
				o.Metadata = &in.Metadata
			}
			m, err := store.Update(ctx, in.ID, o)
			if err != nil {
				return nil, nil, err
			}
			return nil, memoryAnswer(c, &m), nil
		})
	addTool(s, &mcp.Tool{Name: "delete", Description: "Delete one memory by ID, with its history."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPIDInput) (*mcp.CallToolResult, MCPDeleteOutput, error) {
			if _, err := mcpMemory(ctx, store, mcpCaller(req.Extra, fallback), in.ID, RightWrite); err != nil {
				return nil, MCPDeleteOutput{}, err
			}
			if err := store.Delete(ctx, in.ID); err != nil {
				return nil, MCPDeleteOutput{}, err
			}
			return nil, MCPDeleteOutput{Deleted: in.ID}, nil
		})
	addTool(s, &mcp.Tool{Name: "history", Description: "The earlier versions of a memory (what merges, updates and superseding facts replaced), oldest first."},
		func(ctx context.Context, req *mcp.CallToolRequest, in MCPIDInput) (*mcp.CallToolResult, MCPHistoryOutput, error) {
			if _, err := mcpMemory(ctx, store, mcpCaller(req.Extra, fallback), in.ID, RightRead); err != nil {
				return nil, MCPHistoryOutput{}, err
			}
			vs, err := store.History(ctx, in.ID)
			if err != nil {
				return nil, MCPHistoryOutput{}, err
			}
			out := MCPHistoryOutput{ID: in.ID, Versions: make([]memory.VersionJSON, 0, len(vs))}
			for i := range vs {
				out.Versions = append(out.Versions, memory.VersionToJSON(&vs[i]))
			}
			return nil, out, nil
		})
}
