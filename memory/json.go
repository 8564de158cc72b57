package memory

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// MemoryJSON is the one JSON form of a memory, used by export files, the archive, the history,
// the HTTP service and the MCP tools (docs/format/export.md): snake_case keys, times in UTC
// RFC 3339 with nanoseconds, last_access null until the memory is first recalled, the vector
// only where asked for.
type MemoryJSON struct {
	ID          string         `json:"id"`
	Session     string         `json:"session"`
	Text        string         `json:"text"`
	Context     string         `json:"context,omitempty"`
	Source      string         `json:"source,omitempty"`
	Tags        []string       `json:"tags,omitempty"`
	Importance  float64        `json:"importance"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Created     time.Time      `json:"created"`
	Updated     time.Time      `json:"updated"`
	LastAccess  *time.Time     `json:"last_access"`
	AccessCount uint64         `json:"access_count"`
	// SupersededBy and SupersededAt are Memory's: the newer memory that changed this one's
	// fact, and when; left out while the memory is current.
	SupersededBy string     `json:"superseded_by,omitempty"`
	SupersededAt *time.Time `json:"superseded_at,omitempty"`
	Vector       Vector     `json:"vector,omitempty"`
}

// ToJSON returns m's JSON form, with its vector when withVector is set.
func ToJSON(m *Memory, withVector bool) MemoryJSON {
	j := MemoryJSON{ID: m.ID, Session: m.Session, Text: m.Text, Context: m.Context, Source: m.Source, Tags: m.Tags,
		Importance: m.Importance, Metadata: m.Metadata, Created: m.Created.UTC(), Updated: m.Updated.UTC(),
		AccessCount: m.AccessCount}
	if !m.LastAccess.IsZero() {
		t := m.LastAccess.UTC()
		j.LastAccess = &t
	}
	if m.SupersededBy != "" {
		t := m.SupersededAt.UTC()
		j.SupersededBy, j.SupersededAt = m.SupersededBy, &t
	}
	if withVector {
		j.Vector = m.Vector
	}
	return j
}

// Memory returns the memory j describes.
func (j *MemoryJSON) Memory() Memory {
	m := Memory{ID: j.ID, Session: j.Session, Text: j.Text, Context: j.Context, Source: j.Source, Tags: j.Tags,
		Importance: j.Importance, Metadata: j.Metadata, Created: j.Created, Updated: j.Updated,
		AccessCount: j.AccessCount, Vector: j.Vector}
	if j.LastAccess != nil {
		m.LastAccess = *j.LastAccess
	}
	if j.SupersededBy != "" {
		m.SupersededBy = j.SupersededBy
		if j.SupersededAt != nil {
			m.SupersededAt = *j.SupersededAt
		}
	}
	return m
}

// Vector is an embedding in JSON: written as an array of numbers (float32 values round-trip
// exactly), read from such an array or from a base64 string of little-endian float32 bytes (the
// first release's archive form).
type Vector []float32

// UnmarshalJSON accepts an array of numbers or a base64 string.
func (v *Vector) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("vector: %w", err)
		}
		if len(b)%4 != 0 {
			return fmt.Errorf("vector of %d bytes is not a whole number of float32", len(b))
		}
		out := make(Vector, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		*v = out
		return nil
	}
	var fs []float32
	if err := json.Unmarshal(data, &fs); err != nil {
		return err
	}
	*v = fs
	return nil
}

// ResultJSON is a recalled memory in JSON: the memory, why it came back, and whether a newer
// memory changes it (Result.Stale, Newer, Replaces; left out when not).
type ResultJSON struct {
	MemoryJSON
	Score    Score    `json:"score"`
	Stale    bool     `json:"stale,omitempty"`
	Newer    string   `json:"newer,omitempty"`
	Replaces []string `json:"replaces,omitempty"`
}

// ResultToJSON returns r's JSON form (without the vector).
func ResultToJSON(r *Result) ResultJSON {
	return ResultJSON{MemoryJSON: ToJSON(&r.Memory, false), Score: r.Score, Stale: r.Stale, Newer: r.Newer, Replaces: r.Replaces}
}

// VersionJSON is an earlier version of a memory in JSON (History).
type VersionJSON struct {
	Version int        `json:"version"`
	Change  Change     `json:"change"`
	At      time.Time  `json:"at"`
	By      string     `json:"by,omitempty"`
	Memory  MemoryJSON `json:"memory"`
}

// VersionToJSON returns v's JSON form.
func VersionToJSON(v *Version) VersionJSON {
	return VersionJSON{Version: v.Version, Change: v.Change, At: v.At.UTC(), By: v.By, Memory: ToJSON(&v.Memory, false)}
}
