package engine

import (
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"
)

// Kind is the type of a metadata Value.
type Kind uint8

// The metadata kinds. The zero Kind marks an invalid (zero) Value.
const (
	KindString Kind = iota + 1
	KindInt
	KindFloat
	KindBool
	KindTime
	KindStringList
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindTime:
		return "time"
	case KindStringList:
		return "string list"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Value is one typed metadata value. Build it with String, Int, Float, Bool,
// Time or StringList; the zero Value is invalid and rejected by Upsert.
// Values are compared with Equal and Compare, never with ==: Int(3) equals
// Float(3), and times compare as instants.
type Value struct {
	kind Kind
	s    string
	n    int64   // Int; Bool (0/1); Time (Unix nanoseconds, UTC)
	f    float64 // Float
	list []string
}

// String returns a string Value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int returns an integer Value.
func Int(n int64) Value { return Value{kind: KindInt, n: n} }

// Float returns a floating-point Value. NaN and infinities are rejected by Upsert.
func Float(f float64) Value { return Value{kind: KindFloat, f: f} }

// Bool returns a boolean Value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.n = 1
	}
	return v
}

// Time returns a time Value, stored with nanosecond precision as an instant
// (the location is dropped; values come back in UTC). A time outside
// MinTime..MaxTime makes an invalid Value that Upsert and filters refuse
// (ErrInvalid), never a wrapped one.
func Time(t time.Time) Value {
	if err := CheckTime(t); err != nil {
		return Value{kind: KindTime, s: errOutOfRange}
	}
	return Value{kind: KindTime, n: t.UnixNano()}
}

// errOutOfRange marks a time Value built from an unrepresentable time (its
// string field is otherwise unused).
const errOutOfRange = "out of range"

// MinTime and MaxTime bound the times the engine stores (every time field
// is int64 Unix nanoseconds; the lowest value means the zero time): about
// 1677-09-21 to 2262-04-11. Times outside are refused, never wrapped.
var (
	MinTime = time.Unix(0, math.MinInt64+1).UTC()
	MaxTime = time.Unix(0, math.MaxInt64).UTC()
)

// CheckTime returns an error wrapping ErrInvalid when t is neither the zero
// time nor within MinTime..MaxTime.
func CheckTime(t time.Time) error {
	if t.IsZero() || !t.Before(MinTime) && !t.After(MaxTime) {
		return nil
	}
	return fmt.Errorf("%w: time %s is outside the storable range %s .. %s", ErrInvalid,
		t.UTC().Format(time.RFC3339Nano), MinTime.Format(time.RFC3339Nano), MaxTime.Format(time.RFC3339Nano))
}

// StringList returns a list-of-strings Value (tags). The slice is copied.
func StringList(items ...string) Value {
	return Value{kind: KindStringList, list: slices.Clone(items)}
}

// Kind returns the Value's kind, 0 for the zero Value.
func (v Value) Kind() Kind { return v.kind }

// Str returns the string and whether v is a string.
func (v Value) Str() (string, bool) { return v.s, v.kind == KindString }

// IntValue returns the integer and whether v is an Int.
func (v Value) IntValue() (int64, bool) { return v.n, v.kind == KindInt }

// FloatValue returns v as a float64 and whether v is numeric (Int or Float).
func (v Value) FloatValue() (float64, bool) {
	switch v.kind {
	case KindFloat:
		return v.f, true
	case KindInt:
		return float64(v.n), true
	}
	return 0, false
}

// BoolValue returns the boolean and whether v is a Bool.
func (v Value) BoolValue() (bool, bool) { return v.n != 0, v.kind == KindBool }

// TimeValue returns the time (UTC) and whether v is a Time.
func (v Value) TimeValue() (time.Time, bool) {
	if v.kind != KindTime {
		return time.Time{}, false
	}
	return time.Unix(0, v.n).UTC(), true
}

// List returns a copy of the strings and whether v is a StringList.
func (v Value) List() ([]string, bool) {
	return slices.Clone(v.list), v.kind == KindStringList
}

// GoString renders v for debugging and error messages.
func (v Value) GoString() string {
	switch v.kind {
	case KindString:
		return fmt.Sprintf("String(%q)", v.s)
	case KindInt:
		return fmt.Sprintf("Int(%d)", v.n)
	case KindFloat:
		return fmt.Sprintf("Float(%v)", v.f)
	case KindBool:
		return fmt.Sprintf("Bool(%v)", v.n != 0)
	case KindTime:
		return fmt.Sprintf("Time(%s)", time.Unix(0, v.n).UTC().Format(time.RFC3339Nano))
	case KindStringList:
		return fmt.Sprintf("StringList(%q)", v.list)
	}
	return "Value{}"
}

func (v Value) numeric() bool { return v.kind == KindInt || v.kind == KindFloat }

// Equal reports whether v and w are the same value. Int and Float compare
// numerically; other kinds are equal only to their own kind.
func (v Value) Equal(w Value) bool {
	if v.numeric() && w.numeric() {
		c, ok := v.Compare(w)
		return ok && c == 0
	}
	if v.kind != w.kind {
		return false
	}
	switch v.kind {
	case KindString:
		return v.s == w.s
	case KindBool, KindTime:
		return v.n == w.n
	case KindStringList:
		return slices.Equal(v.list, w.list)
	}
	return false
}

// Compare orders two numbers (Int/Float, compared numerically), two times or
// two strings. ok is false when the values are not comparable.
func (v Value) Compare(w Value) (c int, ok bool) {
	switch {
	case v.kind == KindInt && w.kind == KindInt:
		return cmpOrdered(v.n, w.n), true
	case v.numeric() && w.numeric():
		a, _ := v.FloatValue()
		b, _ := w.FloatValue()
		return cmpOrdered(a, b), true
	case v.kind == KindTime && w.kind == KindTime:
		return cmpOrdered(v.n, w.n), true
	case v.kind == KindString && w.kind == KindString:
		return cmpOrdered(v.s, w.s), true
	}
	return 0, false
}

func cmpOrdered[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Metadata is a record's typed attributes.
type Metadata map[string]Value

// Limits on records; exceeding one is an error that writes nothing.
const (
	MaxIDLen        = 512     // bytes in a record ID
	MaxTextLen      = 1 << 20 // bytes of text per record
	MaxMetaKeys     = 64      // keys per record
	MaxMetaKeyLen   = 128     // bytes per key
	MaxMetaBytes    = 64 << 10
	MaxDim          = 8192
	MaxBatchRecords = 10000
	MaxNameLen      = 64 // collection name
)

func validateValue(v Value) error {
	switch v.kind {
	case KindString:
		if !utf8.ValidString(v.s) {
			return fmt.Errorf("string is not valid UTF-8")
		}
	case KindFloat:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return fmt.Errorf("float %v is not finite", v.f)
		}
	case KindTime:
		if v.s == errOutOfRange {
			return fmt.Errorf("time is outside the storable range %s .. %s", MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339))
		}
	case KindInt, KindBool:
	case KindStringList:
		for _, s := range v.list {
			if !utf8.ValidString(s) {
				return fmt.Errorf("list item is not valid UTF-8")
			}
		}
	default:
		return fmt.Errorf("zero Value (build values with engine.String, Int, ...)")
	}
	return nil
}

func validateMeta(m Metadata) error {
	if len(m) > MaxMetaKeys {
		return fmt.Errorf("%d metadata keys, limit %d", len(m), MaxMetaKeys)
	}
	size := 0
	for k, v := range m {
		if k == "" || len(k) > MaxMetaKeyLen || !utf8.ValidString(k) {
			return fmt.Errorf("metadata key %q: must be 1..%d bytes of UTF-8", k, MaxMetaKeyLen)
		}
		if err := validateValue(v); err != nil {
			return fmt.Errorf("metadata %q: %w", k, err)
		}
		size += len(k) + len(v.s) + 16
		for _, s := range v.list {
			size += len(s) + 2
		}
	}
	if size > MaxMetaBytes {
		return fmt.Errorf("metadata is about %d bytes, limit %d", size, MaxMetaBytes)
	}
	return nil
}
