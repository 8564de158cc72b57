package memory

import (
	"context"
	"encoding/json"
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

const taskPrefix = "memory/task/"

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
func (s *Store) StartSessionTask(_ context.Context, session, id, goal string) (Task, error) {
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
	if ok, err := s.getJSON(taskPrefix+id, &old); err != nil {
		return Task{}, err
	} else if ok {
		return Task{}, errorf(ErrInvalidInput, "task %q exists", id)
	}
	now := s.opts.Clock()
	t := Task{ID: id, Goal: goal, Session: session, Status: TaskActive, Created: now, Updated: now}
	return t, s.putJSON(taskPrefix+id, t)
}

// UpdateStep records a step: it replaces the step of the same name or appends a new one, and
// sets the task's next step to next unless next is empty. A step's Started is kept from its first
// record (or set now); Updated is set now. Result, if given, must be valid JSON.
func (s *Store) UpdateStep(_ context.Context, taskID string, step Step, next string) (Task, error) {
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
	if len(step.Result) > MaxResultBytes || (len(step.Result) > 0 && !json.Valid(step.Result)) {
		return Task{}, errorf(ErrInvalidInput, "step result must be valid JSON of at most %d bytes", MaxResultBytes)
	}
	if len(next) > MaxSessionBytes || !utf8.ValidString(next) {
		return Task{}, errorf(ErrInvalidInput, "next step must be valid UTF-8 of at most %d bytes", MaxSessionBytes)
	}
	step.Result = slices.Clone(step.Result)
	return s.modifyTask(taskID, func(t *Task, now time.Time) error {
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
func (s *Store) FinishTask(_ context.Context, taskID string, status TaskStatus) (Task, error) {
	if status != TaskDone && status != TaskFailed {
		return Task{}, errorf(ErrInvalidInput, "a task finishes as %q or %q, not %q", TaskDone, TaskFailed, status)
	}
	return s.modifyTask(taskID, func(t *Task, now time.Time) error {
		t.Status, t.Next, t.Finished = status, "", now
		return nil
	})
}

func (s *Store) modifyTask(id string, fn func(*Task, time.Time) error) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var t Task
	if ok, err := s.getJSON(taskPrefix+id, &t); err != nil {
		return Task{}, err
	} else if !ok {
		return Task{}, errorf(ErrNotFound, "task %q", id)
	}
	now := s.opts.Clock()
	if err := fn(&t, now); err != nil {
		return Task{}, err
	}
	t.Updated = now
	return t, s.putJSON(taskPrefix+id, t)
}

// Task returns a task by ID (ErrNotFound when there is none).
func (s *Store) Task(_ context.Context, id string) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var t Task
	if ok, err := s.getJSON(taskPrefix+id, &t); err != nil {
		return Task{}, err
	} else if !ok {
		return Task{}, errorf(ErrNotFound, "task %q", id)
	}
	return t, nil
}

// Tasks lists every task, by ID.
func (s *Store) Tasks(_ context.Context) ([]Task, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	var out []Task
	err := s.kv.Scan(taskPrefix, func(key string, v []byte) error {
		var t Task
		if err := json.Unmarshal(v, &t); err != nil {
			return errorf(ErrInvalidInput, "decoding %s: %v", key, err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// DeleteTask removes a task (ErrNotFound when there is none).
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	if _, err := s.Task(ctx, id); err != nil {
		return err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.kv.Delete(taskPrefix + id)
}
