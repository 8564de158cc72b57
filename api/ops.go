package api

import (
	"context"

	"github.com/engramdb/engram/memory"
)

// Ops is every data operation the doors offer, as one interface: *Local runs
// them on a store this process holds, under the caller its context carries;
// memctl's client runs them through the HTTP API of the server that holds
// the store. The CLI's data commands and the MCP tools are written against
// Ops, so they act and answer the same on a local store and through a
// server.
//
// Path values (a memory's ID, a task's ID with the session that names it
// when needed, a session whose conversation is meant) are arguments of
// their own; the rest is the request struct, the route's JSON body. A write
// answers a caller without the read right with a receipt, never stored text
// (MemoryAnswer, ConversationAnswer, TaskAnswer, CleanupResult). Errors match ErrBadRequest, ErrForbidden,
// memory.ErrNotFound (a *memory.NotFoundError for memories),
// memory.ErrInvalidInput and memory.ErrUnsupported as the HTTP statuses say
// (see server's package doc).
type Ops interface {
	Remember(ctx context.Context, req RememberRequest) (RememberResponse, error)
	Recall(ctx context.Context, req RecallRequest) (RecallResponse, error)
	Forget(ctx context.Context, req ForgetRequest) (ForgetResponse, error)
	RestoreForgotten(ctx context.Context, req RestoreForgottenRequest) (RestoredResponse, error)
	Forgotten(ctx context.Context, req ForgottenRequest) (ForgottenResponse, error)
	// PurgeForgotten empties the trash of every session (admin and write rights).
	PurgeForgotten(ctx context.Context) (PurgedResponse, error)

	Get(ctx context.Context, req GetRequest) (memory.MemoryJSON, error)
	List(ctx context.Context, req ListRequest) (ListResponse, error)
	Update(ctx context.Context, id string, req UpdateRequest) (MemoryAnswer, error)
	Delete(ctx context.Context, id string) (DeleteResponse, error)
	History(ctx context.Context, id string) (HistoryResponse, error)
	Revert(ctx context.Context, id string, req RevertRequest) (MemoryAnswer, error)
	Sessions(ctx context.Context) (SessionsResponse, error)

	Context(ctx context.Context, session string) (memory.Conversation, error)
	AddTurn(ctx context.Context, session string, turn memory.Turn) (ConversationAnswer, error)
	// Distill turns the session's short-term turns not yet distilled into long-term memories.
	Distill(ctx context.Context, session string) (memory.DistillResult, error)
	ClearContext(ctx context.Context, session string) (ClearedResponse, error)

	Tasks(ctx context.Context) (TasksResponse, error)
	Task(ctx context.Context, ref TaskRef) (memory.Task, error)
	StartTask(ctx context.Context, req StartTaskRequest) (TaskAnswer, error)
	UpdateStep(ctx context.Context, ref TaskRef, req StepRequest) (TaskAnswer, error)
	FinishTask(ctx context.Context, ref TaskRef, req FinishRequest) (TaskAnswer, error)
	DeleteTask(ctx context.Context, ref TaskRef) (DeletedResponse, error)
}
