package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
)

// Short-term conversations and working-memory tasks are keyed records in a collection of their
// own, RecordsCollection, so they live in the backend's segments like memories (compressed, read
// on demand, carried by backups and migrations) instead of the KV namespace, which the engine
// writes whole into every manifest. The collection uses the ordinary Collection contract, so
// every backend holds it without a special case: a record is a Memory whose ID is
// "<kind>/<key>", Source the kind, Session the conversation's session (empty for tasks), Text
// the record's JSON payload, Created and Updated its times, and Vector a two-dimensional
// recordVector. Nothing searches that vector; it is there because a collection's records carry
// vectors, and at two dimensions it costs a few bytes per record. docs/format/records.md
// specifies the payloads.

// RecordsCollection is the name of the collection of conversations and tasks. Options.Collection
// may not take it.
const RecordsCollection = "records"

// recordsFingerprint stands where an embedding model's fingerprint would: it names the payload
// format, so a build that reads another one refuses the collection instead of misreading it.
const recordsFingerprint = "engram-records/1"

// maxRecordBytes bounds one record's payload (the engine's limit on a record's text).
const maxRecordBytes = 1 << 20

// Record kinds (the Source of a record). A task's key holds its session (taskKey), so task IDs
// are per session; legacyKindTask records, keyed by the task ID alone, are the layout before
// that, which New upgrades (upgradeTaskKeys).
const (
	kindConversation = "conversation"
	kindTask         = "session-task"
	legacyKindTask   = "task"
)

// recordVector places a record on the unit circle at an angle taken from a hash of its ID.
// Nothing searches these vectors; distinct ones keep the backend's vector index out of its
// degenerate case (one vector shared by every record makes every HNSW distance a tie: inserts
// cost about 15% more, measured, and older graph builds left parts of such crowds unreachable).
func recordVector(id string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(id))
	a := float64(h.Sum64()>>11) / (1 << 53) * 2 * math.Pi
	return []float32{float32(math.Cos(a)), float32(math.Sin(a))}
}

func recordsSpec() CollectionSpec {
	return CollectionSpec{Name: RecordsCollection, Dim: 2, Fingerprint: recordsFingerprint}
}

// RecordsSpec returns the spec of the records collection when b has one, for tools that copy a
// store collection by collection (migrate).
func RecordsSpec(ctx context.Context, b Backend) (CollectionSpec, bool, error) {
	c, err := b.Collection(ctx, RecordsCollection)
	if errors.Is(err, ErrNoCollection) {
		return CollectionSpec{}, false, nil
	}
	if err != nil {
		return CollectionSpec{}, false, err
	}
	return c.Spec(), true, nil
}

// records returns the records collection, creating it when create is set (nil, nil when it does
// not exist and create is not). The caller holds s.stmu.
func (s *Store) records(ctx context.Context, create bool) (Collection, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	if s.recs != nil {
		return s.recs, nil
	}
	c, err := s.b.Collection(ctx, RecordsCollection)
	if errors.Is(err, ErrNoCollection) {
		if !create {
			return nil, nil
		}
		c, err = s.b.CreateCollection(ctx, recordsSpec())
	}
	if err != nil {
		return nil, fmt.Errorf("memory: opening the records collection: %w", err)
	}
	if sp := c.Spec(); sp != recordsSpec() {
		return nil, fmt.Errorf("memory: collection %q is %+v, not a records collection of this build (%s)", RecordsCollection, sp, recordsFingerprint)
	}
	s.recs = c
	return c, nil
}

func recordID(kind, key string) string { return kind + "/" + key }

// getRecord decodes the payload of a record into v and reports whether it exists.
func (s *Store) getRecord(ctx context.Context, kind, key string, v any) (bool, error) {
	c, err := s.records(ctx, false)
	if err != nil || c == nil {
		return false, err
	}
	ms, err := c.Get(ctx, []string{recordID(kind, key)})
	if err != nil {
		return false, fmt.Errorf("memory: reading %s %q: %w", kind, key, err)
	}
	if len(ms) == 0 {
		return false, nil
	}
	if err := json.Unmarshal([]byte(ms[0].Text), v); err != nil {
		return false, fmt.Errorf("memory: decoding %s %q: %w", kind, key, err)
	}
	return true, nil
}

// recordOf renders one record; the payload must fit maxRecordBytes.
func recordOf(kind, key, session string, created, updated time.Time, v any) (Memory, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Memory{}, err
	}
	if len(b) > maxRecordBytes {
		return Memory{}, errorf(ErrInvalidInput, "%s %q would take %d bytes, the limit is %d", kind, key, len(b), maxRecordBytes)
	}
	return Memory{ID: recordID(kind, key), Session: session, Source: kind, Text: string(b), Importance: 1,
		Created: created, Updated: updated, Vector: recordVector(recordID(kind, key))}, nil
}

// putRecord writes one record durably, replacing any with the same kind and key.
func (s *Store) putRecord(ctx context.Context, kind, key, session string, created, updated time.Time, v any) error {
	m, err := recordOf(kind, key, session, created, updated, v)
	if err != nil {
		return err
	}
	return s.storeRecord(ctx, kind, key, m)
}

// storeRecord writes the record m of kind and key durably.
func (s *Store) storeRecord(ctx context.Context, kind, key string, m Memory) error {
	c, err := s.records(ctx, true)
	if err != nil {
		return err
	}
	if err := c.Upsert(ctx, []Memory{m}); err != nil {
		return fmt.Errorf("memory: storing %s %q: %w", kind, key, err)
	}
	return nil
}

// deleteRecord removes a record and reports whether it existed.
func (s *Store) deleteRecord(ctx context.Context, kind, key string) (bool, error) {
	c, err := s.records(ctx, false)
	if err != nil || c == nil {
		return false, err
	}
	n, err := c.Delete(ctx, []string{recordID(kind, key)})
	return n > 0, err
}

// scanRecords calls fn with the key and payload of every record of a kind, in key order.
func (s *Store) scanRecords(ctx context.Context, kind string, fn func(key string, payload []byte) error) error {
	c, err := s.records(ctx, false)
	if err != nil || c == nil {
		return err
	}
	type kp struct{ key, payload string }
	var all []kp
	err = c.Scan(ctx, Eq(FieldSource, kind), func(m Memory) error {
		key, ok := strings.CutPrefix(m.ID, kind+"/")
		if !ok {
			return fmt.Errorf("memory: record %q of kind %s has a foreign ID", m.ID, kind)
		}
		all = append(all, kp{key, m.Text})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b kp) int { return strings.Compare(a.key, b.key) })
	for _, r := range all {
		if err := fn(r.key, []byte(r.payload)); err != nil {
			return err
		}
	}
	return nil
}

// countRecords counts the records of a kind.
func (s *Store) countRecords(ctx context.Context, kind string) (int, error) {
	c, err := s.records(ctx, false)
	if err != nil || c == nil {
		return 0, err
	}
	return c.Count(ctx, Eq(FieldSource, kind))
}

// checkRecords decodes every conversation and task record; a task record of the earlier layout
// left behind (one the upgrade could not decode) is reported too.
func (s *Store) checkRecords(ctx context.Context) error {
	if err := s.Conversations(ctx, func(Conversation) error { return nil }); err != nil {
		return err
	}
	if _, err := s.Tasks(ctx); err != nil {
		return err
	}
	s.stmu.Lock()
	defer s.stmu.Unlock()
	n, err := s.countRecords(ctx, legacyKindTask)
	if err == nil && n > 0 {
		err = fmt.Errorf("memory: %d task records of the layout before per-session task IDs could not be upgraded (see the log of the last open)", n)
	}
	return err
}

// Stores of the first release kept conversations and tasks as JSON values in the KV namespace.
const (
	legacyConversationPrefix = "memory/stm/"
	legacyTaskPrefix         = "memory/task/"
)

// upgradeRecords moves conversations and tasks a first-release store kept in the KV namespace
// into the records collection: each value is decoded (a damaged one stops the upgrade, naming
// its key, with nothing lost), written as a record, and only then deleted from the KV
// namespace, so a crash part way repeats at most some identical writes on the next open.
func (s *Store) upgradeRecords(ctx context.Context) error {
	s.stmu.Lock()
	defer s.stmu.Unlock()
	type legacy struct {
		key string
		m   Memory
	}
	var todo []legacy
	err := s.kv.Scan(legacyConversationPrefix, func(k string, v []byte) error {
		var c Conversation
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("memory: upgrading conversation %s: %w", k, err)
		}
		session := strings.TrimPrefix(k, legacyConversationPrefix)
		c.Session = session
		created, updated := s.conversationTimes(&c)
		m, err := recordOf(kindConversation, session, session, created, updated, c)
		if err != nil {
			return fmt.Errorf("memory: upgrading conversation %s: %w", k, err)
		}
		todo = append(todo, legacy{k, m})
		return nil
	})
	if err != nil {
		return err
	}
	err = s.kv.Scan(legacyTaskPrefix, func(k string, v []byte) error {
		var t Task
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("memory: upgrading task %s: %w", k, err)
		}
		if t.ID != strings.TrimPrefix(k, legacyTaskPrefix) {
			return fmt.Errorf("memory: upgrading task %s: it holds task %q", k, t.ID)
		}
		m, err := taskRecord(&t)
		if err != nil {
			return fmt.Errorf("memory: upgrading task %s: %w", k, err)
		}
		todo = append(todo, legacy{k, m})
		return nil
	})
	if err != nil || len(todo) == 0 {
		return err
	}
	c, err := s.records(ctx, true)
	if err != nil {
		return err
	}
	const batch = 256
	for i := 0; i < len(todo); i += batch {
		part := todo[i:min(i+batch, len(todo))]
		ms := make([]Memory, len(part))
		for j := range part {
			ms[j] = part[j].m
		}
		if err := upsert(ctx, c, ms); err != nil {
			return fmt.Errorf("memory: upgrading conversations and tasks: %w", err)
		}
		for _, l := range part {
			if err := s.kv.Delete(l.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// upgradeTaskKeysLocked moves the task records of the layout before task IDs were per session
// (kind legacyKindTask, keyed by the task ID alone) to per-session keys (taskRecord), once per
// Store: every task operation calls it first, so Open reads nothing more than before and a
// damaged records segment fails the task operations (and Check), not the open. Each record is
// decoded, written under its new key and only then deleted, in batches of 256, so a crash part
// way repeats identical writes the next time. A record that cannot be decoded is left where it is
// and logged (Check reports it): nothing a store holds is deleted unless understood. The caller
// holds s.stmu.
func (s *Store) upgradeTaskKeysLocked(ctx context.Context) error {
	if s.taskKeys {
		return nil
	}
	c, err := s.records(ctx, false)
	if err != nil {
		return err
	}
	if c == nil {
		s.taskKeys = true
		return nil
	}
	if n, err := c.Count(ctx, Eq(FieldSource, legacyKindTask)); err != nil {
		return fmt.Errorf("memory: looking for task records to upgrade: %w", err)
	} else if n == 0 {
		s.taskKeys = true
		return nil
	}
	var todo []Memory
	var old []string
	err = c.Scan(ctx, Eq(FieldSource, legacyKindTask), func(m Memory) error {
		var t Task
		err := json.Unmarshal([]byte(m.Text), &t)
		if err == nil && recordID(legacyKindTask, t.ID) != m.ID {
			err = fmt.Errorf("it holds task %q", t.ID)
		}
		var nm Memory
		if err == nil {
			nm, err = taskRecord(&t)
		}
		if err != nil {
			s.opts.Logger.Error("memory: a task record of the layout before per-session task IDs was not upgraded; it stays as it is", "record", m.ID, "err", err)
			return nil
		}
		todo, old = append(todo, nm), append(old, m.ID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: upgrading task records: %w", err)
	}
	const batch = 256
	for i := 0; i < len(todo); i += batch {
		end := min(i+batch, len(todo))
		if err := upsert(ctx, c, todo[i:end]); err != nil {
			return fmt.Errorf("memory: upgrading task records: %w", err)
		}
		if _, err := c.Delete(ctx, old[i:end]); err != nil {
			return fmt.Errorf("memory: upgrading task records: %w", err)
		}
	}
	s.taskKeys = true
	return nil
}

// State that stays small (the live collection's name, an unfinished Reembed, the archive list)
// is kept as JSON in the KV namespace.

// maxKVValue is the largest value the memory layer writes to a KV namespace (the engine's limit).
const maxKVValue = 1 << 20

func (s *Store) getJSON(key string, v any) (bool, error) {
	if _, _, err := s.current(); err != nil {
		return false, err
	}
	b, ok, err := s.kv.Get(key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("memory: decoding %s: %w", key, err)
	}
	return true, nil
}

func (s *Store) putJSON(key string, v any) error {
	if _, _, err := s.current(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxKVValue {
		return errorf(ErrInvalidInput, "%s would take %d bytes, the limit is %d", key, len(b), maxKVValue)
	}
	if err := s.kv.Put(key, b); err != nil {
		return fmt.Errorf("memory: storing %s: %w", key, err)
	}
	return nil
}
