package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The cold archive lives in the backend's KV namespace, so it travels with the store (backups,
// migration) and needs no second storage path. One Cleanup writes one batch under
// "memory/archive/<batch>/<part>": each part is a zstd-compressed JSON Lines document of at most
// archivePart memories, its first line a header (docs/format/archive.md).

const (
	archivePrefix = "memory/archive/"
	archivePart   = 256
	// maxArchiveValue keeps a part under the engine's KV value limit (1 MiB).
	maxArchiveValue = 900 << 10
	archiveFormat   = "engram-memory-archive"
	archiveVersion  = 1
	// maxArchivePart bounds the decompressed size of one part (a defence against corrupt or
	// hostile values, well above archivePart memories of 4096-d vectors).
	maxArchivePart = 256 << 20
)

type archiveHeader struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	Fingerprint string    `json:"fingerprint"`
	Dim         int       `json:"dim"`
	Archived    time.Time `json:"archived"`
	Count       int       `json:"count"`
}

// archivedMemory is the JSON form of a Memory in the archive: times in UTC RFC 3339 with
// nanoseconds, the vector as stored (float32 values round-trip exactly through JSON).
type archivedMemory struct {
	ID          string    `json:"id"`
	Session     string    `json:"session"`
	Text        string    `json:"text"`
	Source      string    `json:"source,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Importance  float64   `json:"importance"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	LastAccess  time.Time `json:"last_access,omitzero"`
	AccessCount uint64    `json:"access_count,omitempty"`
	Vector      f32le     `json:"vector"`
}

// f32le is a vector in JSON as base64 of its little-endian float32 bytes: exact, and about a
// third the size of decimal text.
type f32le []float32

func (v f32le) MarshalJSON() ([]byte, error) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return json.Marshal(b)
}

func (v *f32le) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	if len(b)%4 != 0 {
		return fmt.Errorf("vector of %d bytes is not a whole number of float32", len(b))
	}
	*v = make(f32le, len(b)/4)
	for i := range *v {
		(*v)[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

func toArchived(m *Memory) archivedMemory {
	return archivedMemory{ID: m.ID, Session: m.Session, Text: m.Text, Source: m.Source, Tags: m.Tags,
		Importance: m.Importance, Created: m.Created.UTC(), Updated: m.Updated.UTC(), LastAccess: m.LastAccess.UTC(),
		AccessCount: m.AccessCount, Vector: m.Vector}
}

func (a *archivedMemory) memory() Memory {
	return Memory{ID: a.ID, Session: a.Session, Text: a.Text, Source: a.Source, Tags: a.Tags, Importance: a.Importance,
		Created: a.Created, Updated: a.Updated, LastAccess: a.LastAccess, AccessCount: a.AccessCount, Vector: a.Vector}
}

// encodeArchive renders one archive part.
func encodeArchive(h archiveHeader, ms []Memory) ([]byte, error) {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	h.Format, h.Version, h.Count = archiveFormat, archiveVersion, len(ms)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	for i := range ms {
		if err := enc.Encode(toArchived(&ms[i])); err != nil {
			return nil, err
		}
	}
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, err
	}
	defer zw.Close()
	return zw.EncodeAll(raw.Bytes(), nil), nil
}

// decodeArchive parses one archive part. It never panics on malformed input.
func decodeArchive(b []byte) (archiveHeader, []Memory, error) {
	var h archiveHeader
	zr, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxArchivePart), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return h, nil, err
	}
	defer zr.Close()
	raw, err := zr.DecodeAll(b, nil)
	if err != nil {
		return h, nil, fmt.Errorf("memory: archive part: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, len(raw)+1)
	if !sc.Scan() {
		return h, nil, fmt.Errorf("memory: archive part: no header")
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Format != archiveFormat {
		return h, nil, fmt.Errorf("memory: archive part: bad header")
	}
	if h.Version != archiveVersion {
		return h, nil, fmt.Errorf("memory: archive part: format version %d, this build reads %d", h.Version, archiveVersion)
	}
	var ms []Memory
	for sc.Scan() {
		var a archivedMemory
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return h, nil, fmt.Errorf("memory: archive part line %d: %w", len(ms)+2, err)
		}
		if a.ID == "" {
			return h, nil, fmt.Errorf("memory: archive part line %d: memory without ID", len(ms)+2)
		}
		ms = append(ms, a.memory())
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return h, nil, fmt.Errorf("memory: archive part: %w", err)
	}
	if len(ms) != h.Count {
		return h, nil, fmt.Errorf("memory: archive part holds %d memories, header says %d", len(ms), h.Count)
	}
	return h, ms, nil
}

// CleanupPolicy selects the memories Cleanup moves to the cold archive.
type CleanupPolicy struct {
	// OlderThan: memories whose text was last written (Updated) longer ago than this qualify;
	// 0 means 180 days.
	OlderThan time.Duration
	// IncludeRecalled also takes memories that were recalled; by default only memories with
	// an access count of zero qualify.
	IncludeRecalled bool
	// Filter further restricts the selection.
	Filter *Filter
	// DryRun lists what would move and changes nothing.
	DryRun bool
}

// DefaultCleanupAge is the default CleanupPolicy.OlderThan.
const DefaultCleanupAge = 180 * 24 * time.Hour

// CleanupResult lists the memories Cleanup selected (without vectors) and where they went.
type CleanupResult struct {
	Memories []Memory
	// Batch names the archive batch written ("" for a dry run or when nothing qualified).
	Batch string
}

// Cleanup moves the memories the policy selects into the cold archive: first it writes and
// syncs the archive batch, then it deletes the memories, so a crash in between leaves them
// both live and archived (Restore then keeps the live copy), never lost. With DryRun it only
// lists them.
func (s *Store) Cleanup(ctx context.Context, p CleanupPolicy) (CleanupResult, error) {
	if p.OlderThan == 0 {
		p.OlderThan = DefaultCleanupAge
	}
	if p.OlderThan < 0 {
		return CleanupResult{}, errorf(ErrInvalidInput, "negative cleanup age %v", p.OlderThan)
	}
	if err := p.Filter.Validate(); err != nil {
		return CleanupResult{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb, err := s.current()
	if err != nil {
		return CleanupResult{}, err
	}
	now := s.opts.Clock()
	f := TimeRange(FieldUpdated, time.Time{}, now.Add(-p.OlderThan))
	if !p.IncludeRecalled {
		f = And(f, Range(FieldAccessCount, 0, 0))
	}
	if p.Filter != nil {
		f = And(f, p.Filter)
	}
	var ms []Memory
	if err := coll.Scan(ctx, f, func(m Memory) error { ms = append(ms, m); return nil }); err != nil {
		return CleanupResult{}, fmt.Errorf("memory: cleanup scan: %w", err)
	}
	slices.SortFunc(ms, func(a, b Memory) int { return a.Updated.Compare(b.Updated) })
	res := CleanupResult{Memories: ms}
	if p.DryRun || len(ms) == 0 {
		return stripped(res), nil
	}
	res.Batch = fmt.Sprintf("%020d-%s", now.UnixNano(), newID()[:8])
	h := archiveHeader{Fingerprint: emb.Fingerprint(), Dim: emb.Dim(), Archived: now.UTC()}
	part := 0
	for i := 0; i < len(ms); i += archivePart {
		if err := s.writeArchive(res.Batch, &part, h, ms[i:min(i+archivePart, len(ms))]); err != nil {
			return CleanupResult{}, fmt.Errorf("memory: writing archive: %w", err)
		}
	}
	ids := make([]string, len(ms))
	for i := range ms {
		ids[i] = ms[i].ID
	}
	if _, err := coll.Delete(ctx, ids); err != nil {
		return CleanupResult{}, fmt.Errorf("memory: archived batch %s, deleting its memories: %w (they are safe; run Cleanup again)", res.Batch, err)
	}
	return stripped(res), nil
}

// writeArchive stores ms as the next part(s) of a batch, halving until each fits a KV value.
func (s *Store) writeArchive(batch string, part *int, h archiveHeader, ms []Memory) error {
	b, err := encodeArchive(h, ms)
	if err != nil {
		return err
	}
	if len(b) > maxArchiveValue && len(ms) > 1 {
		if err := s.writeArchive(batch, part, h, ms[:len(ms)/2]); err != nil {
			return err
		}
		return s.writeArchive(batch, part, h, ms[len(ms)/2:])
	}
	*part++
	return s.kv.Put(fmt.Sprintf("%s%s/%06d", archivePrefix, batch, *part), b)
}

func stripped(r CleanupResult) CleanupResult {
	for i := range r.Memories {
		r.Memories[i].Vector = nil
	}
	return r
}

// Archived lists the archived memories (without vectors), oldest batch first.
func (s *Store) Archived(ctx context.Context) ([]Memory, error) {
	var out []Memory
	err := s.kv.Scan(archivePrefix, func(key string, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, ms, err := decodeArchive(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		for _, m := range ms {
			m.Vector = nil
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// Restore moves archived memories back into the live collection: those with the given IDs, or
// all when ids is empty. It returns how many it restored. A memory is restored exactly as it
// was archived (text, metadata, timestamps, access statistics, vector) unless the store has
// switched embedding models since, in which case its text is embedded again. An archived memory
// whose ID is live again is not overwritten; its archive entry is dropped. Restore is
// idempotent: a crash part way leaves every memory live or archived, and running it again
// finishes the job.
func (s *Store) Restore(ctx context.Context, ids ...string) (int, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb, err := s.current()
	if err != nil {
		return 0, err
	}
	type part struct {
		key string
		val []byte
	}
	var parts []part
	if err := s.kv.Scan(archivePrefix, func(k string, v []byte) error {
		parts = append(parts, part{k, v})
		return nil
	}); err != nil {
		return 0, err
	}
	restored := 0
	for _, p := range parts {
		h, ms, err := decodeArchive(p.val)
		if err != nil {
			return restored, fmt.Errorf("%s: %w", p.key, err)
		}
		var take, keep []Memory
		for _, m := range ms {
			if len(want) == 0 || want[m.ID] {
				take = append(take, m)
			} else {
				keep = append(keep, m)
			}
		}
		if len(take) == 0 {
			continue
		}
		n, err := s.restorePart(ctx, coll, emb, h, take)
		if err != nil {
			return restored, err
		}
		restored += n
		if len(keep) == 0 {
			err = s.kv.Delete(p.key)
		} else {
			var b []byte
			if b, err = encodeArchive(h, keep); err == nil {
				err = s.kv.Put(p.key, b)
			}
		}
		if err != nil {
			return restored, fmt.Errorf("memory: restored %d memories, updating %s: %w (run Restore again)", restored, p.key, err)
		}
	}
	return restored, nil
}

// restorePart upserts the memories of take that are not live, re-embedding them when the
// archive was written under another model.
func (s *Store) restorePart(ctx context.Context, coll Collection, emb Embedder, h archiveHeader, take []Memory) (int, error) {
	ids := make([]string, len(take))
	for i := range take {
		ids[i] = take[i].ID
	}
	live, err := coll.Get(ctx, ids)
	if err != nil {
		return 0, err
	}
	isLive := map[string]bool{}
	for _, m := range live {
		isLive[m.ID] = true
	}
	var up []Memory
	var texts []string
	for _, m := range take {
		if !isLive[m.ID] {
			up = append(up, m)
			texts = append(texts, m.Text)
		}
	}
	if len(up) == 0 {
		return 0, nil
	}
	if h.Fingerprint != emb.Fingerprint() || h.Dim != emb.Dim() {
		vecs, err := s.embed(ctx, emb, texts)
		if err != nil {
			return 0, err
		}
		for i := range up {
			up[i].Vector = vecs[i]
		}
	}
	if err := upsert(ctx, coll, up); err != nil {
		return 0, fmt.Errorf("memory: restoring: %w", err)
	}
	return len(up), nil
}
