package api

import (
	"context"

	"github.com/engramdb/engram/memory"
)

// Short-term memory (a session's conversation buffer) and working memory (tasks). A task
// outside the caller's scope answers like a missing one.

// Context answers a session's conversation: the summary of older turns and the recent turns.
func (l *Local) Context(ctx context.Context, session string) (memory.Conversation, error) {
	if err := CallerFrom(ctx).Check(RightRead, session); err != nil {
		return memory.Conversation{}, err
	}
	return l.store.Context(ctx, session)
}

// AddTurn appends a turn to a session's conversation; older turns are summarized past its budget.
func (l *Local) AddTurn(ctx context.Context, session string, turn memory.Turn) (memory.Conversation, error) {
	if err := CallerFrom(ctx).Check(RightWrite, session); err != nil {
		return memory.Conversation{}, err
	}
	return l.store.AddTurn(ctx, session, turn)
}

// ClearContext deletes a session's conversation and summary.
func (l *Local) ClearContext(ctx context.Context, session string) (ClearedResponse, error) {
	if err := CallerFrom(ctx).Check(RightWrite, session); err != nil {
		return ClearedResponse{}, err
	}
	if err := l.store.ClearConversation(ctx, session); err != nil {
		return ClearedResponse{}, err
	}
	return ClearedResponse{Cleared: true}, nil
}

// Tasks lists the tasks of the sessions the caller may read.
func (l *Local) Tasks(ctx context.Context) (TasksResponse, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightRead); err != nil {
		return TasksResponse{}, err
	}
	ts, err := l.store.Tasks(ctx)
	if err != nil {
		return TasksResponse{}, err
	}
	ts = VisibleBy(c, ts, func(t memory.Task) string { return t.Session })
	if ts == nil {
		ts = []memory.Task{}
	}
	return TasksResponse{Tasks: ts}, nil
}

// Task answers one task with its steps.
func (l *Local) Task(ctx context.Context, id string) (memory.Task, error) {
	return l.scopedTask(ctx, id, RightRead)
}

// StartTask starts a task for req.Session (a random ID when req.ID is empty).
func (l *Local) StartTask(ctx context.Context, req StartTaskRequest) (memory.Task, error) {
	if err := CallerFrom(ctx).Check(RightWrite, req.Session); err != nil {
		return memory.Task{}, err
	}
	return l.store.StartSessionTask(ctx, req.Session, req.ID, req.Goal)
}

// UpdateStep records a step of task id (a step of the same name is replaced) and the next step.
func (l *Local) UpdateStep(ctx context.Context, id string, req StepRequest) (memory.Task, error) {
	if _, err := l.scopedTask(ctx, id, RightWrite); err != nil {
		return memory.Task{}, err
	}
	return l.store.UpdateStep(ctx, id, memory.Step{Name: req.Name, Status: req.Status, Result: req.Result}, req.Next)
}

// FinishTask marks task id done (the default) or failed.
func (l *Local) FinishTask(ctx context.Context, id string, req FinishRequest) (memory.Task, error) {
	if _, err := l.scopedTask(ctx, id, RightWrite); err != nil {
		return memory.Task{}, err
	}
	if req.Status == "" {
		req.Status = memory.TaskDone
	}
	return l.store.FinishTask(ctx, id, req.Status)
}

// DeleteTask deletes task id.
func (l *Local) DeleteTask(ctx context.Context, id string) (DeletedResponse, error) {
	if _, err := l.scopedTask(ctx, id, RightWrite); err != nil {
		return DeletedResponse{}, err
	}
	if err := l.store.DeleteTask(ctx, id); err != nil {
		return DeletedResponse{}, err
	}
	return DeletedResponse{Deleted: true}, nil
}
