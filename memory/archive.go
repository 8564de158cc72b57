package memory

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The cold archive is a collection of its own, one per embedding model ("archive-" and a hash of
// the model's fingerprint and dimension), listed under keyArchives in the KV namespace, so its
// memories live in the backend's segments like live ones: compressed, read on demand, found by
// ID, and carried by backups and migrations. Stores of the first release kept it in the KV
// namespace as zstd-compressed JSON Lines parts under "memory/archive/<batch>/<part>"
// (docs/format/archive.md); New moves such parts into the archive collections (upgradeArchive),
// which is all the code below the constants is still for.

const (
	legacyArchivePrefix = "memory/archive/"
	archiveFormat       = "engram-memory-archive"
	archiveVersion      = 1
	// maxArchivePart bounds the decompressed size of one part (a defence against corrupt or
	// hostile values, well above a part's 256 memories of 4096-d vectors).
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

// archivedMemory writes a Memory as the first release's archive did (the vector as base64 of
// its float32 bytes), for the tests of the upgrade; MemoryJSON reads it.
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
		var a MemoryJSON // the archive's lines are the one JSON form of a memory
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return h, nil, fmt.Errorf("memory: archive part line %d: %w", len(ms)+2, err)
		}
		if a.ID == "" {
			return h, nil, fmt.Errorf("memory: archive part line %d: memory without ID", len(ms)+2)
		}
		ms = append(ms, a.Memory())
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
	// Progress, if set, hears how many of the selected memories have moved (after each batch).
	Progress func(done, total int64)
}

// cleanupBatch is how many memories Cleanup moves at a time.
const cleanupBatch = 256

// DefaultCleanupAge is the default CleanupPolicy.OlderThan.
const DefaultCleanupAge = 180 * 24 * time.Hour

// CleanupResult lists the memories Cleanup selected (without vectors) and where they went.
type CleanupResult struct {
	Memories []Memory
	// Batch names the archive batch written ("" for a dry run or when nothing qualified).
	Batch string
}

// Cleanup moves the memories the policy selects into the cold archive, 256 at a time: it writes
// and syncs each part into the archive, then deletes those memories, so a crash in between leaves
// them both live and archived (Restore then keeps the live copy), never lost; a cancelled ctx
// stops it between parts. With DryRun it only lists them.
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
	if err := s.expireLocked(ctx); err != nil {
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
	ac, err := s.archiveFor(ctx, emb.Fingerprint(), emb.Dim(), true)
	if err != nil {
		return CleanupResult{}, err
	}
	report := func(done int) {
		if p.Progress != nil {
			p.Progress(int64(done), int64(len(ms)))
		}
	}
	report(0)
	// Batch by batch, each archived (durably) before its memories are deleted, so progress and
	// cancellation come between batches and a crash still loses nothing.
	for i := 0; i < len(ms); i += cleanupBatch {
		if err := ctx.Err(); err != nil {
			return CleanupResult{}, fmt.Errorf("memory: cleanup moved %d of %d memories, then: %w", i, len(ms), err)
		}
		part := ms[i:min(i+cleanupBatch, len(ms))]
		if err := upsert(ctx, ac, part); err != nil {
			return CleanupResult{}, fmt.Errorf("memory: writing archive: %w", err)
		}
		ids := make([]string, len(part))
		for j := range part {
			ids[j] = part[j].ID
		}
		if _, err := coll.Delete(ctx, ids); err != nil {
			return CleanupResult{}, fmt.Errorf("memory: archived batch %s, deleting its memories: %w (they are safe; run the cleanup again)", res.Batch, err)
		}
		report(i + len(part))
	}
	return stripped(res), nil
}

// keyArchives lists the archive collections' names, one JSON array (one name per model used).
const keyArchives = "memory/archives"

// archiveName is the archive collection of one embedding model.
func archiveName(fingerprint string, dim int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", fingerprint, dim))
	return "archive-" + hex.EncodeToString(h[:8])
}

// sideNames reads a list of side collections (archives under keyArchives, trashes under
// keyForgotten).
func (s *Store) sideNames(key string) ([]string, error) {
	v, ok, err := s.kv.Get(key)
	if err != nil || !ok {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(v, &names); err != nil {
		return nil, fmt.Errorf("memory: decoding %s: %w", key, err)
	}
	return names, nil
}

// archiveFor opens the archive collection of a model, registering and creating it when create is
// set (nil, nil when it does not exist and create is not).
func (s *Store) archiveFor(ctx context.Context, fingerprint string, dim int, create bool) (Collection, error) {
	return s.sideFor(ctx, keyArchives, archiveName(fingerprint, dim), fingerprint, dim, create)
}

// sideFor opens the side collection name of a model listed under key, registering and creating
// it when create is set (nil, nil when it does not exist and create is not). The name is
// registered before the collection is made, so a crash leaves at worst a listed name without a
// collection, which readers skip.
func (s *Store) sideFor(ctx context.Context, key, name, fingerprint string, dim int, create bool) (Collection, error) {
	c, err := s.b.Collection(ctx, name)
	if err == nil || !errors.Is(err, ErrNoCollection) || !create {
		if errors.Is(err, ErrNoCollection) {
			return nil, nil
		}
		return c, err
	}
	names, err := s.sideNames(key)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, name) {
		b, _ := json.Marshal(append(names, name))
		if err := s.kv.Put(key, b); err != nil {
			return nil, fmt.Errorf("memory: registering %s: %w", name, err)
		}
	}
	c, err = s.b.CreateCollection(ctx, CollectionSpec{Name: name, Dim: dim, Fingerprint: fingerprint})
	if err != nil {
		return nil, fmt.Errorf("memory: creating %s: %w", name, err)
	}
	return c, nil
}

// archives returns the archive collections that exist.
func (s *Store) archives(ctx context.Context) ([]Collection, error) {
	return s.sideColls(ctx, keyArchives)
}

// sideColls returns the side collections listed under key that exist.
func (s *Store) sideColls(ctx context.Context, key string) ([]Collection, error) {
	names, err := s.sideNames(key)
	if err != nil {
		return nil, err
	}
	var out []Collection
	for _, n := range names {
		c, err := s.b.Collection(ctx, n)
		if errors.Is(err, ErrNoCollection) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("memory: opening %s: %w", n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ArchiveSpecs returns the specs of the archive collections in b, for tools that copy a store
// collection by collection (migrate).
func ArchiveSpecs(ctx context.Context, b Backend) ([]CollectionSpec, error) {
	s := &Store{b: b, kv: b.KV()}
	cs, err := s.archives(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CollectionSpec, len(cs))
	for i, c := range cs {
		out[i] = c.Spec()
	}
	return out, nil
}

func stripped(r CleanupResult) CleanupResult {
	for i := range r.Memories {
		r.Memories[i].Vector = nil
	}
	return r
}

// Archived lists the archived memories (without vectors), least recently written first.
func (s *Store) Archived(ctx context.Context) ([]Memory, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	acs, err := s.archives(ctx)
	if err != nil {
		return nil, err
	}
	var out []Memory
	for _, ac := range acs {
		err := ac.Scan(ctx, nil, func(m Memory) error {
			m.Vector = nil
			out = append(out, m)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("memory: reading archive %s: %w", ac.Spec().Name, err)
		}
	}
	slices.SortFunc(out, func(a, b Memory) int {
		if c := a.Updated.Compare(b.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// archivedCount counts the archived memories.
func (s *Store) archivedCount(ctx context.Context) (int, error) {
	acs, err := s.archives(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ac := range acs {
		k, err := ac.Count(ctx, nil)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// restoreBatch is how many archived memories Restore reads at a time.
const restoreBatch = 256

// Restore moves archived memories back into the live collection: those with the given IDs, or
// all when ids is empty. It returns how many it restored. A memory is restored exactly as it
// was archived (text, metadata, timestamps, access statistics, vector) unless the store has
// switched embedding models since, in which case its text is embedded again. An archived memory
// whose ID is live again is not overwritten; its archive entry is dropped. Restore is
// idempotent: it writes the live copy before it deletes the archived one, so a crash part way
// leaves every memory live or archived, and running it again finishes the job.
func (s *Store) Restore(ctx context.Context, ids ...string) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb, err := s.current()
	if err != nil {
		return 0, err
	}
	acs, err := s.archives(ctx)
	if err != nil {
		return 0, err
	}
	restored := 0
	for _, ac := range acs {
		want := ids
		if len(want) == 0 { // IDs only in memory: the vectors are read batch by batch
			if err := ac.Scan(ctx, nil, func(m Memory) error { want = append(want, m.ID); return nil }); err != nil {
				return restored, fmt.Errorf("memory: listing archive %s: %w", ac.Spec().Name, err)
			}
		}
		for i := 0; i < len(want); i += restoreBatch {
			take, err := ac.Get(ctx, want[i:min(i+restoreBatch, len(want))])
			if err != nil {
				return restored, fmt.Errorf("memory: reading archive %s: %w", ac.Spec().Name, err)
			}
			if len(take) == 0 {
				continue
			}
			n, err := s.restorePart(ctx, coll, emb, ac.Spec(), take)
			if err != nil {
				return restored, err
			}
			restored += n
			got := make([]string, len(take))
			for j := range take {
				got[j] = take[j].ID
			}
			if _, err := ac.Delete(ctx, got); err != nil {
				return restored, fmt.Errorf("memory: restored %d memories, removing them from the archive: %w (run the restore again)", restored, err)
			}
		}
	}
	return restored, nil
}

// restorePart upserts the memories of take that are not live, re-embedding them when the
// archive was written under another model.
func (s *Store) restorePart(ctx context.Context, coll Collection, emb Embedder, spec CollectionSpec, take []Memory) (int, error) {
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
	if spec.Fingerprint != emb.Fingerprint() || spec.Dim != emb.Dim() {
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

// upgradeArchive moves the archive parts a first-release store kept in the KV namespace into
// the archive collections, one part at a time: each part's memories are written before its key
// is deleted, so a crash repeats at most one part's upserts on the next open.
func (s *Store) upgradeArchive(ctx context.Context) error {
	var keys []string
	if err := s.kv.Scan(legacyArchivePrefix, func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
		return err
	}
	for _, k := range keys {
		v, ok, err := s.kv.Get(k)
		if err != nil || !ok {
			return err
		}
		h, ms, err := decodeArchive(v)
		if err != nil {
			return fmt.Errorf("memory: upgrading archive part %s: %w", k, err)
		}
		ac, err := s.archiveFor(ctx, h.Fingerprint, h.Dim, true)
		if err != nil {
			return err
		}
		for i := range ms {
			if len(ms[i].Vector) != h.Dim {
				return fmt.Errorf("memory: upgrading archive part %s: memory %s has %d dimensions, header says %d", k, ms[i].ID, len(ms[i].Vector), h.Dim)
			}
		}
		if err := upsert(ctx, ac, ms); err != nil {
			return fmt.Errorf("memory: upgrading archive part %s: %w", k, err)
		}
		if err := s.kv.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ParseAge reads an age: a Go duration or a number of days with a "d"
// suffix (180d).
func ParseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || !(days > 0 && days <= 1e6) { // also refuses NaN
			return 0, fmt.Errorf("invalid age %q (e.g. 180d or 72h)", s)
		}
		return time.Duration(days * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid age %q (e.g. 180d or 72h)", s)
	}
	return d, nil
}
