package engine

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/quant"
)

// Record is one stored item. Vector has the collection's dimension; for a
// Cosine collection it is stored L2-normalized and comes back normalized.
// Times are stored with nanosecond precision in UTC.
type Record struct {
	ID          string
	Vector      []float32
	Text        string
	Meta        Metadata
	Created     time.Time
	Updated     time.Time
	LastAccess  time.Time
	AccessCount uint64
}

// Clone returns a deep copy of r.
func (r Record) Clone() Record {
	r.Vector = slices.Clone(r.Vector)
	r.Meta = cloneMeta(r.Meta)
	return r
}

// CollectionConfig describes a collection. Name, Dim and Metric are fixed at
// creation; Fingerprint identifies the embedding model (file hash, tokenizer,
// pooling) so that a collection is never searched with another model's
// vectors.
type CollectionConfig struct {
	Name        string
	Dim         int
	Metric      quant.Metric
	Fingerprint string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (c CollectionConfig) validate() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("%w: collection name %q must be 1..%d of [A-Za-z0-9_.-], starting with a letter or digit", ErrInvalid, c.Name, MaxNameLen)
	}
	if c.Dim <= 0 || c.Dim > MaxDim {
		return fmt.Errorf("%w: dimension %d outside 1..%d", ErrInvalid, c.Dim, MaxDim)
	}
	if !c.Metric.Valid() {
		return fmt.Errorf("%w: metric %v", ErrInvalid, c.Metric)
	}
	if len(c.Fingerprint) > 1024 || !utf8.ValidString(c.Fingerprint) {
		return fmt.Errorf("%w: fingerprint must be at most 1024 bytes of UTF-8", ErrInvalid)
	}
	return nil
}

func validateID(id string) error {
	if id == "" || len(id) > MaxIDLen || !utf8.ValidString(id) {
		return fmt.Errorf("%w: record ID %.40q must be 1..%d bytes of UTF-8", ErrInvalid, id, MaxIDLen)
	}
	return nil
}

// validateRecord checks r against the collection and returns the vector to
// store (normalized for Cosine; a copy, so the caller's slice is not kept).
func validateRecord(cfg CollectionConfig, r *Record) ([]float32, error) {
	if err := validateID(r.ID); err != nil {
		return nil, err
	}
	if len(r.Vector) != cfg.Dim {
		return nil, fmt.Errorf("%w: record %q: vector has dimension %d, collection %q wants %d", ErrDimension, r.ID, len(r.Vector), cfg.Name, cfg.Dim)
	}
	var norm float64
	for _, x := range r.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: record %q: vector contains NaN or Inf", ErrInvalid, r.ID)
		}
		norm += float64(x) * float64(x)
	}
	v := slices.Clone(r.Vector)
	if cfg.Metric == quant.Cosine {
		if norm == 0 {
			return nil, fmt.Errorf("%w: record %q: zero vector in a cosine collection", ErrInvalid, r.ID)
		}
		inv := 1 / math.Sqrt(norm)
		for i := range v {
			v[i] = float32(float64(v[i]) * inv)
		}
	}
	if len(r.Text) > MaxTextLen || !utf8.ValidString(r.Text) {
		return nil, fmt.Errorf("%w: record %q: text must be at most %d bytes of UTF-8 (has %d)", ErrInvalid, r.ID, MaxTextLen, len(r.Text))
	}
	if err := validateMeta(r.Meta); err != nil {
		return nil, fmt.Errorf("%w: record %q: %v", ErrInvalid, r.ID, err)
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"Created", r.Created}, {"Updated", r.Updated}, {"LastAccess", r.LastAccess}} {
		if err := CheckTime(t.t); err != nil {
			return nil, fmt.Errorf("record %q: %s: %w", r.ID, t.name, err)
		}
	}
	return v, nil
}

func appendRecord(e *enc, r *Record) {
	e.str(r.ID)
	e.uvarint(uint64(len(r.Vector)))
	e.f32s(r.Vector)
	e.str(r.Text)
	appendMeta(e, r.Meta)
	e.varint(unixNano(r.Created))
	e.varint(unixNano(r.Updated))
	e.varint(unixNano(r.LastAccess))
	e.uvarint(r.AccessCount)
}

func readRecord(d *dec) Record {
	var r Record
	r.ID = d.str()
	r.Vector = d.f32s(d.count(MaxDim, 4))
	r.Text = d.str()
	r.Meta = readMeta(d)
	r.Created = fromUnixNano(d.varint())
	r.Updated = fromUnixNano(d.varint())
	r.LastAccess = fromUnixNano(d.varint())
	r.AccessCount = d.uvarint()
	return r
}
