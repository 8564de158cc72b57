package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/api"
)

// JobState is where a job is in its life.
type JobState string

// Job states. A job is running until it ends done, failed or cancelled.
const (
	JobRunning   JobState = "running"
	JobDone      JobState = "done"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Job is the JSON view of a long admin operation (GET /v1/jobs/{id}).
// Done and Total count the operation's units (Unit: bytes, records, memories); Total is 0
// while unknown. Result is the operation's answer once it is done.
type Job struct {
	ID    string   `json:"id"`
	Kind  string   `json:"kind"`
	State JobState `json:"state"`
	Done  int64    `json:"done"`
	Total int64    `json:"total"`
	// Unit is what Done and Total count: "bytes", "records" (segment
	// records checked or copied), "memories" or "steps".
	Unit     string          `json:"unit,omitempty"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished,omitzero"`
	Error    string          `json:"error,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	// CancelRequested is set once a cancel arrived; the job stops at its
	// operation's next cancellation point (between batches or steps).
	CancelRequested bool `json:"cancel_requested,omitempty"`
}

// jobsKept is how many finished jobs GET /v1/jobs remembers.
const jobsKept = 32

// errJobRunning: the store already runs a job (409).
var errJobRunning = errors.New("another job is running on this store")

// errConflict marks 409 answers.
var errConflict = errors.New("conflict")

// progress is what a running job reports through.
type progress struct {
	done, total atomic.Int64
	unit        atomic.Pointer[string]
}

// SetUnit names what the job counts (Job.Unit).
func (p *progress) SetUnit(u string) { p.unit.Store(&u) }

// Func adapts p to the func(done, total) callbacks of the memory layer.
func (p *progress) Func() func(done, total int64) { return func(d, t int64) { p.Set(d, t) } }

// Set records done units of total (total <= 0 leaves it unchanged).
func (p *progress) Set(done, total int64) {
	if total > 0 {
		p.total.Store(total)
	}
	p.done.Store(done)
}

// Add adds n done units.
func (p *progress) Add(n int64) { p.done.Add(n) }

type job struct {
	mu     sync.Mutex
	view   Job // ID, Kind, Started, State, Finished, Error, Result, CancelRequested
	prog   progress
	cancel context.CancelFunc
	ended  chan struct{}
}

func (j *job) snapshot() Job {
	j.mu.Lock()
	v := j.view
	j.mu.Unlock()
	v.Done, v.Total = j.prog.done.Load(), j.prog.total.Load()
	if u := j.prog.unit.Load(); u != nil {
		v.Unit = *u
	}
	return v
}

// jobs runs the admin operations that take long, one at a time per store:
// compaction, checks, cleanups, restores, imports, backups and re-embedding
// all take the store's write lock or rewrite its files, so running two at
// once would only make each slower. A job runs under the server's context,
// not the request's, so it survives the client's disconnect; it ends when
// it finishes, is cancelled, or the server shuts down.
type jobs struct {
	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	cur    *job
	byID   map[string]*job
	order  []string // oldest first
	logger func(msg string, args ...any)
}

func newJobs(logger func(string, ...any)) *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{base: ctx, stop: cancel, byID: map[string]*job{}, logger: logger}
}

func newJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// start runs fn as a new job of kind unless one is running. fn reports
// progress through p and returns the job's result (JSON-encoded).
func (js *jobs) start(kind string, fn func(ctx context.Context, p *progress) (any, error)) (Job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.base.Err() != nil {
		return Job{}, errors.New("the server is shutting down")
	}
	if err := js.conflictLocked(); err != nil {
		return Job{}, err
	}
	ctx, cancel := context.WithCancel(js.base)
	j := &job{view: Job{ID: newJobID(), Kind: kind, State: JobRunning, Started: time.Now().UTC()}, cancel: cancel, ended: make(chan struct{})}
	js.cur = j
	js.byID[j.view.ID] = j
	js.order = append(js.order, j.view.ID)
	js.forgetOldLocked()
	js.wg.Add(1)
	go js.run(ctx, j, fn)
	return j.snapshot(), nil
}

// conflict returns the error start would answer because a job is running,
// or nil.
func (js *jobs) conflict() error {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.conflictLocked()
}

func (js *jobs) conflictLocked() error {
	if js.cur == nil {
		return nil
	}
	cur := js.cur.snapshot()
	return fmt.Errorf("%w: %w: %s job %s (GET /v1/jobs/%s; cancel it with POST /v1/jobs/%s/cancel)",
		errConflict, errJobRunning, cur.Kind, cur.ID, cur.ID, cur.ID)
}

func (js *jobs) run(ctx context.Context, j *job, fn func(context.Context, *progress) (any, error)) {
	defer js.wg.Done()
	defer close(j.ended)
	defer j.cancel()
	res, err := func() (res any, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("job panicked: %v", r)
			}
		}()
		return fn(ctx, &j.prog)
	}()
	var raw json.RawMessage
	if err == nil && res != nil {
		if raw, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("encoding the job's result: %w", err)
		}
	}
	j.mu.Lock()
	j.view.Finished = time.Now().UTC()
	switch {
	case err == nil:
		j.view.State, j.view.Result = JobDone, raw
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		j.view.State, j.view.Error = JobCancelled, err.Error()
	default:
		j.view.State, j.view.Error = JobFailed, err.Error()
	}
	kind, id, state := j.view.Kind, j.view.ID, j.view.State
	j.mu.Unlock()
	if state == JobFailed {
		js.logger("job failed", "kind", kind, "id", id, "err", err)
	}
	js.mu.Lock()
	if js.cur == j {
		js.cur = nil
	}
	js.mu.Unlock()
}

// forgetOldLocked drops the oldest finished jobs beyond jobsKept.
func (js *jobs) forgetOldLocked() {
	for len(js.order) > jobsKept {
		id := js.order[0]
		if j := js.byID[id]; j == js.cur {
			return
		}
		delete(js.byID, id)
		js.order = js.order[1:]
	}
}

func (js *jobs) get(id string) (*job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.byID[id]
	return j, ok
}

func (js *jobs) list() []Job {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]Job, 0, len(js.order))
	for i := len(js.order) - 1; i >= 0; i-- { // newest first
		out = append(out, js.byID[js.order[i]].snapshot())
	}
	return out
}

// shutdown cancels the running job and waits for it until ctx ends.
func (js *jobs) shutdown(ctx context.Context) error {
	js.stop()
	done := make(chan struct{})
	go func() { js.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: a job is still running: %w", ctx.Err())
	}
}

// errJobNotFound answers unknown job IDs (404).
var errJobNotFound = errors.New("no such job (finished jobs are kept for a while, the last 32)")

func (h *Handler) getJob(w http.ResponseWriter, r *http.Request) error {
	j, ok := h.jobs.get(r.PathValue("id"))
	if !ok {
		return fmt.Errorf("%w: %w", errNotFound, errJobNotFound)
	}
	writeJSON(w, http.StatusOK, j.snapshot())
	return nil
}

func (h *Handler) listJobs(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"jobs": h.jobs.list()})
	return nil
}

// cancelJob asks a job to stop. It answers at once with the job as it is;
// the job's state turns cancelled when its operation reaches a cancellation
// point (jobs that finish first end done).
func (h *Handler) cancelJob(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	j, ok := h.jobs.get(r.PathValue("id"))
	if !ok {
		return fmt.Errorf("%w: %w", errNotFound, errJobNotFound)
	}
	j.mu.Lock()
	if j.view.State == JobRunning {
		j.view.CancelRequested = true
	}
	j.mu.Unlock()
	j.cancel()
	writeJSON(w, http.StatusAccepted, j.snapshot())
	return nil
}

// startOp starts an operation of the request layer as a job of kind
// counting unit, under the caller of r (the job outlives the request), and
// answers 202 with the job. A job that ends well shows its progress full.
func (h *Handler) startOp(w http.ResponseWriter, r *http.Request, kind, unit string, op func(ctx context.Context, p *progress) (any, error)) error {
	c := CallerFrom(r.Context())
	return h.startJob(w, kind, func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit(unit)
		res, err := op(api.WithCaller(ctx, c), p)
		if err != nil {
			return nil, err
		}
		if t := p.total.Load(); t > 0 {
			p.Set(t, t)
		} else {
			p.Set(1, 1) // nothing to do: one step, done
		}
		return res, nil
	})
}

// startJob starts fn and answers 202 with the job.
func (h *Handler) startJob(w http.ResponseWriter, kind string, fn func(ctx context.Context, p *progress) (any, error)) error {
	j, err := h.jobs.start(kind, fn)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, j)
	return nil
}
