package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// StepStatus is the state of one step of a task.
type StepStatus string

// Step states.
const (
	StepPending StepStatus = "pending"
	StepRunning StepStatus = "running"
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"
	StepSkipped StepStatus = "skipped"
)

// TaskStatus is the state of a task.
type TaskStatus string

// Task states.
const (
	TaskActive TaskStatus = "active"
	TaskDone   TaskStatus = "done"
	TaskFailed TaskStatus = "failed"
)

// Step is one step of a task with its intermediate result (any JSON value).
type Step struct {
	Name    string          `json:"name"`
	Status  StepStatus      `json:"status"`
	Result  json.RawMessage `json:"result,omitempty"`
	Started time.Time       `json:"started"`
	Updated time.Time       `json:"updated"`
}

// Task is the working memory of one multi-step job: its steps in the order first recorded, the
// next step to run and timestamps. Every change is stored durably before the call returns, so
// after a crash the task reads back exactly as last acknowledged.
type Task struct {
	ID   string `json:"id"`
	Goal string `json:"goal"`
	// Session is the session the task works for ("" for none); a service
	// shows the task only to keys whose scope holds it.
	Session  string     `json:"session,omitempty"`
	Status   TaskStatus `json:"status"`
	Steps    []Step     `json:"steps"`
	Next     string     `json:"next"`
	Created  time.Time  `json:"created"`
	Updated  time.Time  `json:"updated"`
	Finished time.Time  `json:"finished,omitzero"`
}

// Step returns the step with the given name.
func (t *Task) Step(name string) (Step, bool) {
	i := slices.IndexFunc(t.Steps, func(s Step) bool { return s.Name == name })
	if i < 0 {
		return Step{}, false
	}
	return t.Steps[i], true
}

// MaxResultBytes bounds one step's intermediate result.
const MaxResultBytes = 64 << 10

func checkName(what, s string) error {
	if strings.TrimSpace(s) == "" || len(s) > MaxSessionBytes || !utf8.ValidString(s) {
		return errorf(ErrInvalidInput, "%s must be non-blank valid UTF-8 of at most %d bytes", what, MaxSessionBytes)
	}
	return nil
}

// StartTask creates an active task; an empty id gets a random one. Starting an existing id fails.
func (s *Store) StartTask(ctx context.Context, id, goal string) (Task, error) {
	return s.StartSessionTask(ctx, "", id, goal)
}

// StartSessionTask is StartTask for a task that works for session.
func (s *Store) StartSessionTask(ctx context.Context, session, id, goal string) (Task, error) {
	if err := checkSession(session); err != nil {
		return Task{}, err
	}
	if id == "" {
		id = newID()
	}
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	if len(goal) > s.opts.MaxTextBytes || !utf8.ValidString(goal) {
		return Task{}, errorf(ErrInvalidInput, "goal must be valid UTF-8 of at most %d bytes", s.opts.MaxTextBytes)
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var old Task
	if ok, err := s.getRecord(ctx, kindTask, id, &old); err != nil {
		return Task{}, err
	} else if ok {
		return Task{}, errorf(ErrInvalidInput, "task %q exists", id)
	}
	now := s.opts.Clock()
	t := Task{ID: id, Goal: goal, Session: session, Status: TaskActive, Steps: []Step{}, Created: now, Updated: now}
	return t, s.putTask(ctx, &t)
}

// UpdateStep records a step: it replaces the step of the same name or appends a new one, and
// sets the task's next step to next unless next is empty. A step's Started is kept from its first
// record (or set now); Updated is set now. Result, if given, must be valid JSON.
func (s *Store) UpdateStep(ctx context.Context, taskID string, step Step, next string) (Task, error) {
	if err := checkName("step name", step.Name); err != nil {
		return Task{}, err
	}
	switch step.Status {
	case StepPending, StepRunning, StepDone, StepFailed, StepSkipped:
	case "":
		step.Status = StepPending
	default:
		return Task{}, errorf(ErrInvalidInput, "unknown step status %q", step.Status)
	}
	if len(step.Result) > MaxResultBytes || (len(step.Result) > 0 && (!json.Valid(step.Result) || !utf8.Valid(step.Result))) {
		return Task{}, errorf(ErrInvalidInput, "step result must be valid JSON (UTF-8) of at most %d bytes", MaxResultBytes)
	}
	if len(next) > MaxSessionBytes || !utf8.ValidString(next) {
		return Task{}, errorf(ErrInvalidInput, "next step must be valid UTF-8 of at most %d bytes", MaxSessionBytes)
	}
	step.Result = slices.Clone(step.Result)
	return s.modifyTask(ctx, taskID, func(t *Task, now time.Time) error {
		if t.Status != TaskActive {
			return errorf(ErrInvalidInput, "task %q is %s", t.ID, t.Status)
		}
		step.Updated = now
		if i := slices.IndexFunc(t.Steps, func(x Step) bool { return x.Name == step.Name }); i >= 0 {
			step.Started = t.Steps[i].Started
			t.Steps[i] = step
		} else {
			step.Started = now
			t.Steps = append(t.Steps, step)
		}
		if next != "" {
			t.Next = next
		}
		return nil
	})
}

// FinishTask marks a task done or failed and clears its next step.
func (s *Store) FinishTask(ctx context.Context, taskID string, status TaskStatus) (Task, error) {
	if status != TaskDone && status != TaskFailed {
		return Task{}, errorf(ErrInvalidInput, "a task finishes as %q or %q, not %q", TaskDone, TaskFailed, status)
	}
	return s.modifyTask(ctx, taskID, func(t *Task, now time.Time) error {
		t.Status, t.Next, t.Finished = status, "", now
		return nil
	})
}

func (s *Store) modifyTask(ctx context.Context, id string, fn func(*Task, time.Time) error) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var t Task
	if ok, err := s.getRecord(ctx, kindTask, id, &t); err != nil {
		return Task{}, err
	} else if !ok {
		return Task{}, errorf(ErrNotFound, "task %q", id)
	}
	now := s.opts.Clock()
	if err := fn(&t, now); err != nil {
		return Task{}, err
	}
	t.Updated = now
	return t, s.putTask(ctx, &t)
}

// putTask stores a task record; a task too large for one record fails with ErrInvalidInput.
func (s *Store) putTask(ctx context.Context, t *Task) error {
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	return s.putRecord(ctx, kindTask, t.ID, t.Session, t.Created, t.Updated, t)
}

// Task returns a task by ID (ErrNotFound when there is none).
func (s *Store) Task(ctx context.Context, id string) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var t Task
	if ok, err := s.getRecord(ctx, kindTask, id, &t); err != nil {
		return Task{}, err
	} else if !ok {
		return Task{}, errorf(ErrNotFound, "task %q", id)
	}
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	return t, nil
}

// Tasks lists every task, by ID.
func (s *Store) Tasks(ctx context.Context) ([]Task, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	out := []Task{}
	err := s.scanRecords(ctx, kindTask, func(key string, v []byte) error {
		var t Task
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("memory: decoding task %q: %w", key, err)
		}
		if t.Steps == nil {
			t.Steps = []Step{}
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// ImportTask stores t as it is, replacing a task with the same ID (import).
func (s *Store) ImportTask(ctx context.Context, t Task) error {
	if err := checkName("task ID", t.ID); err != nil {
		return err
	}
	if err := checkSession(t.Session); err != nil {
		return err
	}
	switch t.Status {
	case TaskActive, TaskDone, TaskFailed:
	default:
		return errorf(ErrInvalidInput, "task %q: unknown status %q", t.ID, t.Status)
	}
	if t.Created.IsZero() || t.Updated.IsZero() {
		return errorf(ErrInvalidInput, "task %q: created and updated must be set", t.ID)
	}
	if err := checkTimes(fmt.Sprintf("task %q: time", t.ID), t.Created, t.Updated, t.Finished); err != nil {
		return err
	}
	for _, st := range t.Steps {
		if err := checkName("step name", st.Name); err != nil {
			return fmt.Errorf("task %q: %w", t.ID, err)
		}
		if len(st.Result) > 0 && !json.Valid(st.Result) {
			return errorf(ErrInvalidInput, "task %q, step %q: result is not JSON", t.ID, st.Name)
		}
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.putTask(ctx, &t)
}

// DeleteTask removes a task (ErrNotFound when there is none).
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	if err := checkName("task ID", id); err != nil {
		return err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	ok, err := s.deleteRecord(ctx, kindTask, id)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ErrNotFound, "task %q", id)
	}
	return nil
}
