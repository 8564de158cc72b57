package memory

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/keyword"
)

// Memory is one stored memory: a chunk of text with its session, provenance and access statistics.
type Memory struct {
	ID      string
	Session string
	Text    string
	// Context is text that keyword search matches the memory by, each word counting a third of
	// one of Text's, without being part of it: for a conversation turn, the turns around it
	// (RememberOptions.Context, RememberConversation). Recall never returns it as Text, and
	// prompts never show it. Backends that cannot index it (Weaviate) ignore it.
	Context string
	Source  string
	Tags    []string
	// Importance is in (0, 1]; Remember stores DefaultImportance when the caller gives 0.
	Importance float64
	// Created is when the memory was first written; Updated when its text last changed (a
	// near-duplicate merge moves Updated, never Created).
	Created, Updated time.Time
	// LastAccess is the zero time until the memory is first returned by Recall.
	LastAccess  time.Time
	AccessCount uint64
	// Metadata holds the caller's own attributes: string, float64 or bool values (see
	// CheckMetadata), filterable as MetaField(key).
	Metadata map[string]any
	// SupersededBy is the ID of a newer memory of the same session that changes this memory's
	// fact (another value, a negation, a cancellation, a correction: see supersede.go), written
	// at SupersededAt; empty while the memory is current. A superseded memory stays (recalled
	// below its successor, and as it was by a recall AsOf before SupersededAt); the mark lapses
	// when the successor is forgotten.
	SupersededBy string
	SupersededAt time.Time
	// Vector is the stored embedding. Recall results leave it nil.
	Vector []float32
}

// Field names a filterable memory attribute.
type Field string

// The filterable fields. FieldTag matches when any of a memory's tags matches.
const (
	FieldSession     Field = "session"
	FieldSource      Field = "source"
	FieldTag         Field = "tags"
	FieldImportance  Field = "importance"
	FieldAccessCount Field = "access_count"
	FieldCreated     Field = "created"
	FieldUpdated     Field = "updated"
	FieldLastAccess  Field = "last_access"
)

type fieldKind int

const (
	kindUnknown fieldKind = iota
	kindString
	kindNumber
	kindTime
	kindMeta // user metadata: string, number or bool, told apart per memory
)

func (f Field) kind() fieldKind {
	if _, ok := f.MetaKey(); ok {
		return kindMeta
	}
	switch f {
	case FieldSession, FieldSource, FieldTag:
		return kindString
	case FieldImportance, FieldAccessCount:
		return kindNumber
	case FieldCreated, FieldUpdated, FieldLastAccess:
		return kindTime
	}
	return kindUnknown
}

// Op is a filter operator.
type Op int

// Filter operators.
const (
	OpEq Op = iota + 1
	OpIn
	OpRange
	OpExists
	OpAnd
	OpOr
	OpNot
)

// Filter is a predicate over memories. Build it with Eq, In, Range, TimeRange, Exists, And, Or and
// Not; the fields are exported so that a backend can translate a filter into its own language.
// A nil *Filter matches everything.
type Filter struct {
	Op    Op
	Field Field
	// Values holds the string operands of OpEq (one) and OpIn.
	Values []string
	// Min and Max bound OpRange on a number field, inclusive; ±Inf leaves a side open.
	Min, Max float64
	// From and To bound OpRange on a time field, inclusive; a zero time leaves a side open.
	From, To time.Time
	// Kids are the operands of OpAnd, OpOr (any number) and OpNot (exactly one).
	Kids []*Filter
}

// Eq matches memories whose string field equals v (for FieldTag: that carry tag v).
func Eq(f Field, v string) *Filter { return &Filter{Op: OpEq, Field: f, Values: []string{v}} }

// In matches memories whose string field equals one of vs.
func In(f Field, vs ...string) *Filter {
	return &Filter{Op: OpIn, Field: f, Values: slices.Clone(vs)}
}

// Range matches memories whose number field lies in [lo, hi]; use math.Inf for an open side.
func Range(f Field, lo, hi float64) *Filter { return &Filter{Op: OpRange, Field: f, Min: lo, Max: hi} }

// TimeRange matches memories whose time field lies in [from, to]; a zero time leaves a side open.
// A memory whose time field is unset (LastAccess of a never-recalled memory) never matches.
func TimeRange(f Field, from, to time.Time) *Filter {
	return &Filter{Op: OpRange, Field: f, From: from, To: to, Min: math.Inf(-1), Max: math.Inf(1)}
}

// Exists matches memories where the field is set: a non-empty string, at least one tag, a non-zero
// time or number.
func Exists(f Field) *Filter { return &Filter{Op: OpExists, Field: f} }

// And matches when every operand matches.
func And(fs ...*Filter) *Filter { return &Filter{Op: OpAnd, Kids: fs} }

// AllOf is the AND of the non-nil filters: nil (no condition) when there are
// none, the filter itself when there is one, And of them otherwise.
func AllOf(fs ...*Filter) *Filter {
	var kept []*Filter
	for _, f := range fs {
		if f != nil {
			kept = append(kept, f)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return And(kept...)
}

// Or matches when any operand matches.
func Or(fs ...*Filter) *Filter { return &Filter{Op: OpOr, Kids: fs} }

// Not matches when its operand does not.
func Not(f *Filter) *Filter { return &Filter{Op: OpNot, Kids: []*Filter{f}} }

// Validate reports a malformed filter: an unknown field, an operator the field's type does not
// support, a missing operand, or a nesting deeper than 32.
func (f *Filter) Validate() error { return f.validate(0) }

func (f *Filter) validate(depth int) error {
	if f == nil {
		return nil
	}
	if depth > 32 {
		return errorf(ErrInvalidFilter, "nested deeper than 32")
	}
	switch f.Op {
	case OpAnd, OpOr, OpNot:
		if f.Op == OpNot && len(f.Kids) != 1 {
			return errorf(ErrInvalidFilter, "Not takes exactly one operand, got %d", len(f.Kids))
		}
		if len(f.Kids) == 0 {
			return errorf(ErrInvalidFilter, "And/Or need at least one operand")
		}
		for _, k := range f.Kids {
			if k == nil {
				return errorf(ErrInvalidFilter, "nil operand")
			}
			if err := k.validate(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	k := f.Field.kind()
	if k == kindUnknown {
		return errorf(ErrInvalidFilter, "unknown field %q", f.Field)
	}
	switch f.Op {
	case OpEq:
		if k == kindMeta && len(f.Values) == 1 {
			return nil
		}
		if k != kindString || len(f.Values) != 1 {
			return errorf(ErrInvalidFilter, "Eq needs a string field and one value (field %q)", f.Field)
		}
	case OpIn:
		if k == kindMeta && len(f.Values) > 0 {
			return nil
		}
		if k != kindString || len(f.Values) == 0 {
			return errorf(ErrInvalidFilter, "In needs a string field and at least one value (field %q)", f.Field)
		}
	case OpRange:
		if k == kindString {
			return errorf(ErrInvalidFilter, "Range needs a number or time field (field %q)", f.Field)
		}
		if math.IsNaN(f.Min) || math.IsNaN(f.Max) || f.Min > f.Max {
			return errorf(ErrInvalidFilter, "Range bounds [%v, %v] on %q", f.Min, f.Max, f.Field)
		}
		if k == kindMeta && (!f.From.IsZero() || !f.To.IsZero()) {
			return errorf(ErrInvalidFilter, "Range on metadata %q compares numbers, not times", f.Field)
		}
		if k == kindTime && !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
			return errorf(ErrInvalidFilter, "TimeRange from %v is after to %v", f.From, f.To)
		}
		if engine.CheckTime(f.From) != nil || engine.CheckTime(f.To) != nil {
			return errorf(ErrInvalidFilter, "TimeRange [%v, %v] on %q: bounds must lie within %v .. %v (leave a bound zero for none)",
				f.From, f.To, f.Field, engine.MinTime, engine.MaxTime)
		}
	case OpExists:
	default:
		return errorf(ErrInvalidFilter, "unknown operator %d", f.Op)
	}
	return nil
}

// Match reports whether m satisfies the filter. The filter must be valid.
func (f *Filter) Match(m *Memory) bool {
	if f == nil {
		return true
	}
	switch f.Op {
	case OpAnd:
		for _, k := range f.Kids {
			if !k.Match(m) {
				return false
			}
		}
		return true
	case OpOr:
		for _, k := range f.Kids {
			if k.Match(m) {
				return true
			}
		}
		return false
	case OpNot:
		return !f.Kids[0].Match(m)
	}
	switch f.Field.kind() {
	case kindMeta:
		return f.matchMeta(m)
	case kindString:
		vals := m.strings(f.Field)
		switch f.Op {
		case OpEq, OpIn:
			for _, v := range vals {
				if slices.Contains(f.Values, v) {
					return true
				}
			}
			return false
		case OpExists:
			return len(vals) > 0 && (f.Field == FieldTag || vals[0] != "")
		}
	case kindNumber:
		x := m.number(f.Field)
		switch f.Op {
		case OpRange:
			return x >= f.Min && x <= f.Max
		case OpExists:
			return x != 0
		}
	case kindTime:
		t := m.time(f.Field)
		switch f.Op {
		case OpRange:
			return !t.IsZero() && (f.From.IsZero() || !t.Before(f.From)) && (f.To.IsZero() || !t.After(f.To))
		case OpExists:
			return !t.IsZero()
		}
	}
	return false
}

func (m *Memory) strings(f Field) []string {
	switch f {
	case FieldSession:
		return []string{m.Session}
	case FieldSource:
		return []string{m.Source}
	case FieldTag:
		return m.Tags
	}
	return nil
}

func (m *Memory) number(f Field) float64 {
	if f == FieldImportance {
		return m.Importance
	}
	return float64(m.AccessCount)
}

func (m *Memory) time(f Field) time.Time {
	switch f {
	case FieldCreated:
		return m.Created
	case FieldUpdated:
		return m.Updated
	}
	return m.LastAccess
}

// clone returns a deep copy (tags, metadata and vector included).
func (m Memory) clone() Memory {
	m.Tags = slices.Clone(m.Tags)
	m.Metadata = maps.Clone(m.Metadata)
	m.Vector = slices.Clone(m.Vector)
	return m
}

// keywordText is what a backend's keyword index holds for m: its text, then its context after
// keyword.ContextSeparator (the engine backend stores it so and splits it again on reading).
func keywordText(m *Memory) string {
	if m.Context == "" {
		return m.Text
	}
	return m.Text + keyword.ContextSeparator + m.Context
}
