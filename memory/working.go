package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
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
//
// A task ID is unique within its session, not across sessions: two sessions may each have a
// task "plan", and starting one says nothing about the other's. The Session* methods name a task
// by session and ID; Task, UpdateStep, FinishTask and DeleteTask find it by ID alone, which works
// while one session has a task of that ID (ErrInvalidInput naming the sessions otherwise).
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

// StartSessionTask is StartTask for a task that works for session. Starting an ID that session
// already has fails; another session's task of the same ID is another task.
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
	if err := s.upgradeTaskKeysLocked(ctx); err != nil {
		return Task{}, err
	}
	var old Task
	if ok, err := s.getRecord(ctx, kindTask, taskKey(session, id), &old); err != nil {
		return Task{}, err
	} else if ok {
		return Task{}, errorf(ErrInvalidInput, "task %q exists in session %q", id, session)
	}
	now := s.opts.Clock()
	t := Task{ID: id, Goal: goal, Session: session, Status: TaskActive, Steps: []Step{}, Created: now, Updated: now}
	return t, s.putTask(ctx, &t)
}

// UpdateStep records a step of the task taskID (see Task for IDs in several sessions): it
// replaces the step of the same name or appends a new one, and sets the task's next step to next
// unless next is empty. A step's Started is kept from its first record (or set now); Updated is
// set now. Result, if given, must be valid JSON.
func (s *Store) UpdateStep(ctx context.Context, taskID string, step Step, next string) (Task, error) {
	return s.updateStep(ctx, nil, taskID, step, next)
}

// UpdateSessionStep is UpdateStep for the task taskID of session.
func (s *Store) UpdateSessionStep(ctx context.Context, session, taskID string, step Step, next string) (Task, error) {
	return s.updateStep(ctx, &session, taskID, step, next)
}

// updateStep is UpdateStep for the task taskID of *session (nil: the one task of that ID).
func (s *Store) updateStep(ctx context.Context, session *string, taskID string, step Step, next string) (Task, error) {
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
	return s.modifyTask(ctx, session, taskID, func(t *Task, now time.Time) error {
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
	return s.finishTask(ctx, nil, taskID, status)
}

// FinishSessionTask is FinishTask for the task taskID of session.
func (s *Store) FinishSessionTask(ctx context.Context, session, taskID string, status TaskStatus) (Task, error) {
	return s.finishTask(ctx, &session, taskID, status)
}

func (s *Store) finishTask(ctx context.Context, session *string, taskID string, status TaskStatus) (Task, error) {
	if status != TaskDone && status != TaskFailed {
		return Task{}, errorf(ErrInvalidInput, "a task finishes as %q or %q, not %q", TaskDone, TaskFailed, status)
	}
	return s.modifyTask(ctx, session, taskID, func(t *Task, now time.Time) error {
		t.Status, t.Next, t.Finished = status, "", now
		return nil
	})
}

func (s *Store) modifyTask(ctx context.Context, session *string, id string, fn func(*Task, time.Time) error) (Task, error) {
	s.stmu.Lock()
	defer s.stmu.Unlock()
	t, err := s.findTaskLocked(ctx, session, id)
	if err != nil {
		return Task{}, err
	}
	now := s.opts.Clock()
	if err := fn(&t, now); err != nil {
		return Task{}, err
	}
	t.Updated = now
	return t, s.putTask(ctx, &t)
}

// taskKey is the record key of task id of session: the session, path-escaped so that it holds
// no "/", then "/" and the ID. Task IDs are therefore per session.
func taskKey(session, id string) string { return url.PathEscape(session) + "/" + id }

// taskRecord renders t as its record: keyed by session and ID, with the ID as the record's one
// tag, so that TasksByID finds a task by ID through the backend's tag filter.
func taskRecord(t *Task) (Memory, error) {
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	m, err := recordOf(kindTask, taskKey(t.Session, t.ID), t.Session, t.Created, t.Updated, t)
	if err != nil {
		return Memory{}, err
	}
	m.Tags = []string{t.ID}
	return m, nil
}

// putTask stores a task record; a task too large for one record fails with ErrInvalidInput.
func (s *Store) putTask(ctx context.Context, t *Task) error {
	m, err := taskRecord(t)
	if err != nil {
		return err
	}
	return s.storeRecord(ctx, kindTask, taskKey(t.Session, t.ID), m)
}

// Task returns the task of this ID (ErrNotFound when there is none; ErrInvalidInput when
// several sessions have one: SessionTask names the session).
func (s *Store) Task(ctx context.Context, id string) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.findTaskLocked(ctx, nil, id)
}

// SessionTask returns the task id of session (ErrNotFound when there is none).
func (s *Store) SessionTask(ctx context.Context, session, id string) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.findTaskLocked(ctx, &session, id)
}

// TasksByID returns the tasks of this ID, one per session that has one, by session.
func (s *Store) TasksByID(ctx context.Context, id string) ([]Task, error) {
	if err := checkName("task ID", id); err != nil {
		return nil, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	return s.tasksByIDLocked(ctx, id)
}

func (s *Store) tasksByIDLocked(ctx context.Context, id string) ([]Task, error) {
	if err := s.upgradeTaskKeysLocked(ctx); err != nil {
		return nil, err
	}
	c, err := s.records(ctx, false)
	if err != nil || c == nil {
		return []Task{}, err
	}
	out := []Task{}
	err = c.Scan(ctx, And(Eq(FieldSource, kindTask), Eq(FieldTag, id)), func(m Memory) error {
		var t Task
		if err := json.Unmarshal([]byte(m.Text), &t); err != nil {
			return fmt.Errorf("memory: decoding task record %q: %w", m.ID, err)
		}
		if t.ID == id { // the tag is the ID; a tag filter may match more loosely on some backends
			if t.Steps == nil {
				t.Steps = []Step{}
			}
			out = append(out, t)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Task) int { return strings.Compare(a.Session, b.Session) })
	return out, err
}

// findTaskLocked returns task id of *session, or with session nil the one task of that ID. The
// caller holds s.stmu.
func (s *Store) findTaskLocked(ctx context.Context, session *string, id string) (Task, error) {
	if err := checkName("task ID", id); err != nil {
		return Task{}, err
	}
	if session != nil {
		if err := checkSession(*session); err != nil {
			return Task{}, err
		}
		if err := s.upgradeTaskKeysLocked(ctx); err != nil {
			return Task{}, err
		}
		var t Task
		if ok, err := s.getRecord(ctx, kindTask, taskKey(*session, id), &t); err != nil {
			return Task{}, err
		} else if !ok {
			return Task{}, errorf(ErrNotFound, "task %q in session %q", id, *session)
		}
		if t.Steps == nil {
			t.Steps = []Step{}
		}
		return t, nil
	}
	ts, err := s.tasksByIDLocked(ctx, id)
	if err != nil {
		return Task{}, err
	}
	switch len(ts) {
	case 0:
		return Task{}, errorf(ErrNotFound, "task %q", id)
	case 1:
		return ts[0], nil
	}
	return Task{}, &AmbiguousTaskError{ID: id, Sessions: sessionsOf(ts)}
}

func sessionsOf(ts []Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Session
	}
	return out
}

// AmbiguousTaskError reports a task named by ID alone when several sessions have a task of that
// ID; the caller names the session (SessionTask and the other Session* methods). It matches
// ErrInvalidInput.
type AmbiguousTaskError struct {
	ID       string
	Sessions []string
}

func (e *AmbiguousTaskError) Error() string {
	return fmt.Sprintf("memory: invalid input: task %q exists in %d sessions (%q): name the session", e.ID, len(e.Sessions), e.Sessions)
}

func (e *AmbiguousTaskError) Is(target error) bool { return target == ErrInvalidInput }

// Tasks lists every task, by ID and then session.
func (s *Store) Tasks(ctx context.Context) ([]Task, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	if err := s.upgradeTaskKeysLocked(ctx); err != nil {
		return nil, err
	}
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
	slices.SortStableFunc(out, func(a, b Task) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Session, b.Session)
	})
	return out, err
}

// ImportTask stores t as it is, replacing the task of the same session and ID (import).
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
	if err := s.upgradeTaskKeysLocked(ctx); err != nil {
		return err
	}
	return s.putTask(ctx, &t)
}

// DeleteTask removes the task of this ID (ErrNotFound when there is none; see Task for IDs in
// several sessions).
func (s *Store) DeleteTask(ctx context.Context, id string) error { return s.deleteTask(ctx, nil, id) }

// DeleteSessionTask is DeleteTask for the task id of session.
func (s *Store) DeleteSessionTask(ctx context.Context, session, id string) error {
	return s.deleteTask(ctx, &session, id)
}

func (s *Store) deleteTask(ctx context.Context, session *string, id string) error {
	s.stmu.Lock()
	defer s.stmu.Unlock()
	t, err := s.findTaskLocked(ctx, session, id)
	if err != nil {
		return err
	}
	ok, err := s.deleteRecord(ctx, kindTask, taskKey(t.Session, t.ID))
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ErrNotFound, "task %q", id)
	}
	return nil
}
