package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// ID returns the memory ID of the record sourceID of a source of this kind, within scope (see
// the package documentation).
func ID(kind, scope, sourceID string) string {
	h := sha256.New()
	for _, s := range []string{kind, scope, sourceID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Record is one source record, before it is mapped onto a memory.
type Record struct {
	SourceID string
	Text     string
	Session  string
	// Created and Updated are the source's times; zero when it has none.
	Created, Updated time.Time
	// Metadata holds the record's other attributes as the source keeps them: string, int64,
	// float64, bool, nil, []any or map[string]any values.
	Metadata map[string]any
	// Vector is the record's embedding when the reader decided to keep it, else nil.
	Vector []float32
}

// Mapping says how a reader's records become memories.
type Mapping struct {
	Kind  string // the source kind, "chroma" or "mem0"
	Scope string // the scope of the source's IDs (see ID)
	// IDKey is the metadata key that keeps the source's own ID ("chroma_id").
	IDKey string
	// Now stands in for a time the source does not have.
	Now time.Time
}

// Memory maps rec onto a memory and counts what it did into r. It returns false, counting the
// reason in r.Dropped, for a record that cannot be a memory (no text, a text the store would
// refuse). The memory's fields are valid for memory.Store.Import.
func (mp Mapping) Memory(rec Record, r *Report) (memory.Memory, bool) {
	r.Records++
	switch {
	case strings.TrimSpace(rec.Text) == "":
		r.drop("no text")
		return memory.Memory{}, false
	case !utf8.ValidString(rec.Text):
		r.drop("text is not valid UTF-8")
		return memory.Memory{}, false
	case len(rec.Text) > memory.DefaultMaxTextBytes:
		r.drop(fmt.Sprintf("text over %d KiB", memory.DefaultMaxTextBytes>>10))
		return memory.Memory{}, false
	case strings.Contains(rec.Text, "\x1e"):
		r.drop("text contains U+001E")
		return memory.Memory{}, false
	case len(rec.Session) > memory.MaxSessionBytes || !utf8.ValidString(rec.Session):
		r.drop(fmt.Sprintf("session over %d bytes or not UTF-8", memory.MaxSessionBytes))
		return memory.Memory{}, false
	}
	m := memory.Memory{
		ID: ID(mp.Kind, mp.Scope, rec.SourceID), Session: rec.Session, Text: rec.Text,
		Importance: memory.DefaultImportance, Created: rec.Created, Updated: rec.Updated, Vector: rec.Vector,
	}
	md := map[string]any{}
	size := 0
	if mp.IDKey != "" {
		md[mp.IDKey] = rec.SourceID
		size = len(mp.IDKey) + 8 + len(rec.SourceID)
		r.field("id", "id, metadata "+mp.IDKey)
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Metadata)) {
		v := rec.Metadata[k]
		if k == mp.IDKey {
			r.unmapped(k, "key taken by the importer")
			continue
		}
		if mp.mapField(&m, k, v, r) {
			continue
		}
		// Into user metadata, as it is.
		mv, reason := metaValue(v)
		if reason != "" {
			r.unmapped(k, reason)
			continue
		}
		if k == "" || len(k) > memory.MaxMetadataKeyBytes || !utf8.ValidString(k) || strings.ContainsFunc(k, isControl) {
			r.unmapped(k, "key not 1..120 bytes of UTF-8 without control characters")
			continue
		}
		n := len(k) + 8
		if s, ok := mv.(string); ok {
			n += len(s)
		}
		if len(md) >= memory.MaxMetadataKeys {
			r.unmapped(k, fmt.Sprintf("over %d metadata keys", memory.MaxMetadataKeys))
			continue
		}
		if size+n > memory.MaxMetadataBytes {
			r.unmapped(k, fmt.Sprintf("over %d KiB of metadata", memory.MaxMetadataBytes>>10))
			continue
		}
		size += n
		md[k] = mv
		r.field(k, "metadata")
	}
	if len(md) > 0 {
		m.Metadata = md
	}
	mp.fixTimes(&m, r)
	if m.Vector != nil {
		r.Vectors.Kept++
	} else {
		r.Vectors.Embedded++
	}
	r.Memories++
	return m, true
}

// mapField puts the value of key k onto the memory field of the same name and reports whether
// it did; a value that does not fit its field is left for the metadata.
func (mp Mapping) mapField(m *memory.Memory, k string, v any, r *Report) bool {
	switch k {
	case "source":
		s, ok := v.(string)
		if !ok || s == "" || len(s) > memory.MaxTagBytes || !utf8.ValidString(s) {
			return false
		}
		m.Source = s
	case "tags":
		tags, ok := Tags(v)
		if !ok {
			return false
		}
		m.Tags = tags
	case "importance":
		f, ok := number(v)
		if !ok || !(f > 0 && f <= 1) {
			return false
		}
		m.Importance = f
	case "created", "created_at", "updated", "updated_at":
		s, ok := v.(string)
		if !ok {
			return false
		}
		t, err := ParseTime(s)
		if err != nil || engine.CheckTime(t) != nil {
			return false
		}
		if strings.HasPrefix(k, "created") {
			m.Created = t
		} else {
			m.Updated = t
		}
		r.field(k, strings.TrimSuffix(k, "_at"))
		return true
	default:
		return false
	}
	r.field(k, k)
	return true
}

// fixTimes gives a memory the times Import needs: a missing or unstorable time becomes Now
// (Created) or Created (Updated), and Updated never precedes Created.
func (mp Mapping) fixTimes(m *memory.Memory, r *Report) {
	now := mp.Now
	if now.IsZero() {
		now = time.Now()
	}
	if m.Created.IsZero() || engine.CheckTime(m.Created) != nil {
		m.Created = now.UTC()
		r.defaulted("created: the import's time")
	}
	if m.Updated.IsZero() || engine.CheckTime(m.Updated) != nil {
		m.Updated = m.Created
		r.defaulted("updated: the created time")
	} else if m.Updated.Before(m.Created) {
		m.Updated = m.Created
		r.defaulted("updated before created: the created time")
	}
}

// Tags reads a tags value: a list of strings, or one string of comma-separated tags. It
// reports false for anything else, or for tags engram would refuse.
func Tags(v any) ([]string, bool) {
	var raw []string
	switch v := v.(type) {
	case string:
		raw = strings.Split(v, ",")
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			raw = append(raw, s)
		}
	default:
		return nil, false
	}
	var tags []string
	for _, t := range raw {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if len(t) > memory.MaxTagBytes || !utf8.ValidString(t) {
			return nil, false
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 || len(tags) > memory.MaxTags {
		return nil, false
	}
	return tags, true
}

// ParseTime reads the time forms sources write: RFC 3339 (with or without fractions), the
// same without a zone or with a space for the T (read as UTC), as SQLite's CURRENT_TIMESTAMP
// writes them.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q is not RFC 3339", s)
}

// metaValue returns v as engram user metadata keeps it, or why it cannot.
func metaValue(v any) (any, string) {
	switch v := v.(type) {
	case nil:
		return nil, "null value"
	case string:
		if !utf8.ValidString(v) {
			return nil, "string not valid UTF-8"
		}
		if len(v) > memory.MaxMetadataValue {
			return nil, fmt.Sprintf("string over %d KiB", memory.MaxMetadataValue>>10)
		}
		return v, ""
	case bool:
		return v, ""
	case []any:
		return nil, "list value"
	case map[string]any:
		return nil, "object value"
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Sprintf("value of type %T", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, "number not finite"
	}
	return f, ""
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	}
	return 0, false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
