package memory

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of a memory's user metadata (Memory.Metadata).
const (
	MaxMetadataKeys     = 32
	MaxMetadataKeyBytes = 120
	MaxMetadataValue    = 4 << 10  // bytes of one string value
	MaxMetadataBytes    = 16 << 10 // bytes of all keys and string values together
)

// metaFieldPrefix starts the Field of a user metadata key.
const metaFieldPrefix = "metadata."

// MetaField is the filter field of user metadata key k. On such a field Eq and In match string
// values (a bool value matches "true" or "false"), Range matches number values, and Exists
// matches memories that have the key.
func MetaField(k string) Field { return Field(metaFieldPrefix + k) }

// MetaKey returns the metadata key of a MetaField.
func (f Field) MetaKey() (string, bool) {
	k, ok := strings.CutPrefix(string(f), metaFieldPrefix)
	return k, ok && k != ""
}

// CheckMetadata validates user metadata: at most MaxMetadataKeys keys of 1..MaxMetadataKeyBytes
// bytes of UTF-8 without control characters; values are strings (valid UTF-8, at most
// MaxMetadataValue bytes, MaxMetadataBytes in all), finite numbers or booleans. Numbers of any Go numeric type are
// accepted and stored as float64 by NormalizeMetadata.
func CheckMetadata(md map[string]any) error {
	_, err := NormalizeMetadata(md)
	return err
}

// NormalizeMetadata returns a copy of md with every number as float64, or an error naming the
// first bad key (see CheckMetadata). A nil or empty map gives nil.
func NormalizeMetadata(md map[string]any) (map[string]any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	if len(md) > MaxMetadataKeys {
		return nil, errorf(ErrInvalidInput, "%d metadata keys, at most %d", len(md), MaxMetadataKeys)
	}
	out := make(map[string]any, len(md))
	size := 0
	for _, k := range slices.Sorted(maps.Keys(md)) {
		size += len(k) + 8
		if s, ok := md[k].(string); ok {
			size += len(s)
		}
		if size > MaxMetadataBytes {
			return nil, errorf(ErrInvalidInput, "metadata exceeds %d bytes", MaxMetadataBytes)
		}
		if k == "" || len(k) > MaxMetadataKeyBytes || !utf8.ValidString(k) || strings.ContainsFunc(k, isControl) {
			return nil, errorf(ErrInvalidInput, "metadata key %q: must be 1..%d bytes of UTF-8 without control characters", k, MaxMetadataKeyBytes)
		}
		v, err := metaValue(md[k])
		if err != nil {
			return nil, errorf(ErrInvalidInput, "metadata %q: %v", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func metaValue(v any) (any, error) {
	var f float64
	switch v := v.(type) {
	case string:
		if len(v) > MaxMetadataValue || !utf8.ValidString(v) {
			return nil, fmt.Errorf("string values must be valid UTF-8 of at most %d bytes", MaxMetadataValue)
		}
		return v, nil
	case bool:
		return v, nil
	case float64:
		f = v
	case float32:
		f = float64(v)
	case int:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint:
		f = float64(v)
	case uint32:
		f = float64(v)
	case uint64:
		f = float64(v)
	default:
		return nil, fmt.Errorf("value of type %T: want a string, number or boolean", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %v is not finite", f)
	}
	return f, nil
}

// matchMeta evaluates a leaf filter on a user metadata field.
func (f *Filter) matchMeta(m *Memory) bool {
	k, _ := f.Field.MetaKey()
	v, ok := m.Metadata[k]
	if !ok {
		return false
	}
	switch f.Op {
	case OpExists:
		return true
	case OpEq, OpIn:
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		default:
			return false
		}
		return slices.Contains(f.Values, s)
	case OpRange:
		x, ok := v.(float64)
		return ok && x >= f.Min && x <= f.Max
	}
	return false
}
