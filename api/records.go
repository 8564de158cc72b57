package api

import (
	"context"
	"fmt"

	"github.com/engramdb/engram/memory"
)

// Short-term memory (a session's conversation buffer) and working memory (tasks). Task IDs are
// per session: a TaskRef names a task by its ID, and by its session when the caller sees tasks
// of that ID in several sessions. A task outside the caller's scope answers like a missing one.

// TaskRef names a task.
type TaskRef struct {
	ID      string  `json:"id" jsonschema:"the task ID"`
	Session *string `json:"session,omitempty" jsonschema:"the task's session; task IDs are per session, so it is needed only when the key sees tasks of this ID in several sessions"`
}

// Context answers a session's conversation: the summary of older turns and the recent turns.
func (l *Local) Context(ctx context.Context, session string) (memory.Conversation, error) {
	if err := CallerFrom(ctx).Check(RightRead, session); err != nil {
		return memory.Conversation{}, err
	}
	return l.store.Context(ctx, session)
}

// AddTurn appends a turn to a session's conversation; older turns are summarized past its budget.
// It answers the conversation, or a receipt to a caller without the read right.
func (l *Local) AddTurn(ctx context.Context, session string, turn memory.Turn) (ConversationAnswer, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite, session); err != nil {
		return ConversationAnswer{}, err
	}
	conv, err := l.store.AddTurn(ctx, session, turn)
	if err != nil {
		return ConversationAnswer{}, err
	}
	return conversationAnswer(c, conv), nil
}

// Distill turns the turns of a session's short-term memory that no distillation has read yet into
// long-term memories (memory.Store.Distill; AddTurn distills the turns that leave the window by
// itself) and answers what it wrote and deleted: the texts to a caller with the read right, IDs,
// events and times only to one without.
func (l *Local) Distill(ctx context.Context, session string) (memory.DistillResult, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite, session); err != nil {
		return memory.DistillResult{}, err
	}
	res, err := l.store.Distill(ctx, session)
	if err != nil {
		return memory.DistillResult{}, err
	}
	return distillAnswer(c, res), nil
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
func (l *Local) Task(ctx context.Context, ref TaskRef) (memory.Task, error) {
	return l.scopedTask(ctx, ref, RightRead)
}

// StartTask starts a task for req.Session (a random ID when req.ID is empty). It answers the
// task, or a receipt to a caller without the read right.
func (l *Local) StartTask(ctx context.Context, req StartTaskRequest) (TaskAnswer, error) {
	c := CallerFrom(ctx)
	if err := c.Check(RightWrite, req.Session); err != nil {
		return TaskAnswer{}, err
	}
	t, err := l.store.StartSessionTask(ctx, req.Session, req.ID, req.Goal)
	if err != nil {
		return TaskAnswer{}, err
	}
	return taskAnswer(c, t), nil
}

// UpdateStep records a step of a task (a step of the same name is replaced) and the next step.
// It answers as StartTask does.
func (l *Local) UpdateStep(ctx context.Context, ref TaskRef, req StepRequest) (TaskAnswer, error) {
	t, err := l.scopedTask(ctx, ref, RightWrite)
	if err != nil {
		return TaskAnswer{}, err
	}
	t, err = l.store.UpdateSessionStep(ctx, t.Session, t.ID, memory.Step{Name: req.Name, Status: req.Status, Result: req.Result}, req.Next)
	if err != nil {
		return TaskAnswer{}, err
	}
	return taskAnswer(CallerFrom(ctx), t), nil
}

// FinishTask marks a task done (the default) or failed. It answers as StartTask does.
func (l *Local) FinishTask(ctx context.Context, ref TaskRef, req FinishRequest) (TaskAnswer, error) {
	t, err := l.scopedTask(ctx, ref, RightWrite)
	if err != nil {
		return TaskAnswer{}, err
	}
	if req.Status == "" {
		req.Status = memory.TaskDone
	}
	t, err = l.store.FinishSessionTask(ctx, t.Session, t.ID, req.Status)
	if err != nil {
		return TaskAnswer{}, err
	}
	return taskAnswer(CallerFrom(ctx), t), nil
}

// DeleteTask deletes a task.
func (l *Local) DeleteTask(ctx context.Context, ref TaskRef) (DeletedResponse, error) {
	t, err := l.scopedTask(ctx, ref, RightWrite)
	if err != nil {
		return DeletedResponse{}, err
	}
	if err := l.store.DeleteSessionTask(ctx, t.Session, t.ID); err != nil {
		return DeletedResponse{}, err
	}
	return DeletedResponse{Deleted: true}, nil
}

// scopedTask returns the task ref names when the caller holds right. With a
// session, the task of that session, which must lie in the caller's scope;
// without, the one task of that ID among the caller's sessions, and several
// are a *memory.AmbiguousTaskError (ErrInvalidInput) naming their sessions.
// A task outside the scope is reported missing (memory.ErrNotFound), like an
// unknown one, and never counts.
func (l *Local) scopedTask(ctx context.Context, ref TaskRef, right Right) (memory.Task, error) {
	c := CallerFrom(ctx)
	if err := c.Check(right); err != nil {
		return memory.Task{}, err
	}
	if ref.Session != nil {
		if !c.MayUse(*ref.Session) {
			return memory.Task{}, fmt.Errorf("%w: task %q in session %q", memory.ErrNotFound, ref.ID, *ref.Session)
		}
		return l.store.SessionTask(ctx, *ref.Session, ref.ID)
	}
	ts, err := l.store.TasksByID(ctx, ref.ID)
	if err != nil {
		return memory.Task{}, err
	}
	ts = VisibleBy(c, ts, func(t memory.Task) string { return t.Session })
	switch len(ts) {
	case 0:
		return memory.Task{}, fmt.Errorf("%w: task %q", memory.ErrNotFound, ref.ID)
	case 1:
		return ts[0], nil
	}
	sessions := make([]string, len(ts))
	for i, t := range ts {
		sessions[i] = t.Session
	}
	return memory.Task{}, fmt.Errorf("%w (name its session: ?session=NAME over HTTP, \"session\" to the MCP tools, --session to memctl)",
		&memory.AmbiguousTaskError{ID: ref.ID, Sessions: sessions})
}
