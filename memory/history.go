package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// History keeps the earlier versions of every memory: each time a memory's text or metadata is
// replaced (a near-duplicate merge, a superseding fact, Update, Revert), the version it had is
// written first to the history collection, a collection of its own in the backend
// ("memory-history", docs/format/history.md), so it lives in segments like memories do and the
// engine's manifest and KV namespace do not grow with it. A history record's ID is the memory's
// ID, "#" and its version number; its session field holds the memory's ID (the engine serves an
// equality on it from postings); its text is the version as JSON (historyDoc). Each memory keeps
// at most Options.HistoryVersions earlier versions (DefaultHistoryVersions), the oldest dropped
// first. Forgetting a memory for good forgets its history; archiving and the trash keep it.

// Change says what replaced a version of a memory.
type Change string

// The changes History records.
const (
	// ChangeMerge: a near-duplicate Remember merged into the memory.
	ChangeMerge Change = "merge"
	// ChangeSupersede: a newer fact replaced the version: a near-duplicate that contradicts it (a
	// negation, another number or date) took its place, or a memory of its own superseded it
	// (Version.By names that memory; the memory kept its text and is marked SupersededBy).
	ChangeSupersede Change = "supersede"
	// ChangeOlder: a near-duplicate written with an earlier time than the memory's last update;
	// the newer text stays and the older write is kept only in history.
	ChangeOlder Change = "older"
	// ChangeUpdate: Update replaced the text or metadata.
	ChangeUpdate Change = "update"
	// ChangeRestore: Revert brought an earlier version back.
	ChangeRestore Change = "restore"
)

// DefaultHistoryVersions is how many earlier versions each memory keeps by default.
const DefaultHistoryVersions = 20

// MaxHistoryVersions bounds Options.HistoryVersions.
const MaxHistoryVersions = 1000

const (
	historyCollection  = "memory-history"
	historyFingerprint = "engram-history/1"
	historyFormat      = 1
)

// Version is one earlier version of a memory.
type Version struct {
	// Version numbers a memory's versions from 1 in the order they were replaced.
	Version int
	// Memory is the memory as it was: text, session, source, tags, importance, metadata, created
	// and updated times (no vector or access statistics).
	Memory Memory
	// Change is what replaced this version, at time At.
	Change Change
	At     time.Time
	// By is the ID of the memory whose write replaced this version, when that is another
	// memory: a newer memory of the session that superseded this one (ChangeSupersede, the
	// memory's SupersededBy); empty when the memory itself was rewritten.
	By string
}

// historyDoc is the text of a history record.
type historyDoc struct {
	Format  int        `json:"format"`
	Version int        `json:"version"`
	Change  Change     `json:"change"`
	At      time.Time  `json:"at"`
	By      string     `json:"by,omitempty"`
	Memory  MemoryJSON `json:"memory"`
}

// HistorySpec returns the spec of the history collection of the store on b, or false when the
// store has none yet (migration copies it).
func HistorySpec(ctx context.Context, b Backend) (CollectionSpec, bool, error) {
	c, err := b.Collection(ctx, historyCollection)
	if errors.Is(err, ErrNoCollection) {
		return CollectionSpec{}, false, nil
	}
	if err != nil {
		return CollectionSpec{}, false, err
	}
	return c.Spec(), true, nil
}

// historyColl opens the history collection, creating it when create is set (nil, nil when it
// does not exist and create is not).
func (s *Store) historyColl(ctx context.Context, create bool) (Collection, error) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	if s.hist != nil {
		return s.hist, nil
	}
	c, err := s.b.Collection(ctx, historyCollection)
	if errors.Is(err, ErrNoCollection) {
		if !create {
			return nil, nil
		}
		c, err = s.b.CreateCollection(ctx, CollectionSpec{Name: historyCollection, Dim: 1, Fingerprint: historyFingerprint})
	}
	if err != nil {
		return nil, fmt.Errorf("memory: opening the history: %w", err)
	}
	s.hist = c
	return c, nil
}

// pendingVersion is an earlier version about to be written.
type pendingVersion struct {
	old    Memory
	change Change
	at     time.Time
	by     string // Version.By
}

// writeHistory stores the versions (before the writes that replace them, so a crash between
// the two keeps at worst a version equal to the current one) and drops each memory's versions
// beyond the bound. The caller holds s.wmu.
func (s *Store) writeHistory(ctx context.Context, vs []pendingVersion) error {
	if len(vs) == 0 || s.opts.HistoryVersions < 0 {
		return nil
	}
	hc, err := s.historyColl(ctx, true)
	if err != nil {
		return err
	}
	next := map[string]int{}
	existing := map[string][]int{}
	var recs []Memory
	for _, v := range vs {
		id := v.old.ID
		if _, ok := next[id]; !ok {
			nums, err := historyNumbers(ctx, hc, id)
			if err != nil {
				return err
			}
			existing[id] = nums
			next[id] = 1
			if len(nums) > 0 {
				next[id] = nums[len(nums)-1] + 1
			}
		}
		n := next[id]
		next[id]++
		existing[id] = append(existing[id], n)
		old := v.old
		old.Vector, old.LastAccess, old.AccessCount = nil, time.Time{}, 0
		doc, err := json.Marshal(historyDoc{Format: historyFormat, Version: n, Change: v.change, At: v.at.UTC(), By: v.by, Memory: ToJSON(&old, false)})
		if err != nil {
			return err
		}
		recs = append(recs, Memory{ID: historyID(id, n), Session: id, Text: string(doc), Source: string(v.change),
			Importance: DefaultImportance, Created: v.at, Updated: v.at, Vector: []float32{1}})
	}
	if err := upsert(ctx, hc, recs); err != nil {
		return fmt.Errorf("memory: writing history: %w", err)
	}
	var drop []string
	for id, nums := range existing {
		for len(nums) > s.opts.HistoryVersions {
			drop = append(drop, historyID(id, nums[0]))
			nums = nums[1:]
		}
	}
	if len(drop) > 0 {
		if _, err := hc.Delete(ctx, drop); err != nil {
			return fmt.Errorf("memory: trimming history: %w", err)
		}
	}
	return nil
}

func historyID(id string, n int) string { return fmt.Sprintf("%s#%08d", id, n) }

// historyNumbers returns the version numbers the history holds for id, ascending.
func historyNumbers(ctx context.Context, hc Collection, id string) ([]int, error) {
	var nums []int
	err := scanLight(ctx, hc, Eq(FieldSession, id), func(m *Memory) {
		if n, ok := parseHistoryID(m.ID, id); ok {
			nums = append(nums, n)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("memory: reading history of %q: %w", id, err)
	}
	slices.Sort(nums)
	return nums, nil
}

func parseHistoryID(hid, id string) (int, bool) {
	rest, ok := strings.CutPrefix(hid, id+"#")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// History returns the earlier versions of the memory with the given ID, oldest first. The
// memory itself need not be live (an archived memory keeps its history); an ID that is neither
// live, archived nor in the history is a *NotFoundError.
func (s *Store) History(ctx context.Context, id string) ([]Version, error) {
	if id == "" {
		return nil, errorf(ErrInvalidInput, "empty memory ID")
	}
	coll, _, err := s.current()
	if err != nil {
		return nil, err
	}
	var out []Version
	hc, err := s.historyColl(ctx, false)
	if err != nil {
		return nil, err
	}
	if hc != nil {
		var bad error
		err := hc.Scan(ctx, Eq(FieldSession, id), func(m Memory) error {
			if _, ok := parseHistoryID(m.ID, id); !ok {
				return nil
			}
			var d historyDoc
			if err := json.Unmarshal([]byte(m.Text), &d); err != nil || d.Format != historyFormat {
				bad = fmt.Errorf("memory: history record %q is unreadable (format %d): %v", m.ID, d.Format, err)
				return bad
			}
			out = append(out, Version{Version: d.Version, Memory: d.Memory.Memory(), Change: d.Change, At: d.At, By: d.By})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b Version) int { return a.Version - b.Version })
	if len(out) == 0 {
		live, err := coll.Get(ctx, []string{id})
		if err != nil {
			return nil, err
		}
		if len(live) == 0 {
			archived, err := s.isArchived(ctx, id)
			if err != nil {
				return nil, err
			}
			forgotten, err := s.isForgotten(ctx, id)
			if err != nil {
				return nil, err
			}
			if !archived && !forgotten {
				return nil, &NotFoundError{IDs: []string{id}}
			}
		}
	}
	return out, nil
}

// isArchived reports whether an archive collection holds id.
func (s *Store) isArchived(ctx context.Context, id string) (bool, error) {
	acs, err := s.archives(ctx)
	if err != nil {
		return false, err
	}
	for _, ac := range acs {
		ms, err := ac.Get(ctx, []string{id})
		if err != nil {
			return false, err
		}
		if len(ms) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// forgetHistory deletes the history of the given memory IDs. The caller holds s.wmu.
func (s *Store) forgetHistory(ctx context.Context, ids []string) error {
	hc, err := s.historyColl(ctx, false)
	if err != nil || hc == nil {
		return err
	}
	for i := 0; i < len(ids); i += 500 {
		if _, err := hc.DeleteWhere(ctx, In(FieldSession, ids[i:min(i+500, len(ids))]...)); err != nil {
			return fmt.Errorf("memory: forgetting history: %w", err)
		}
	}
	return nil
}
