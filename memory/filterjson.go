package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The JSON filter language (docs/format/filter.md), taken by every door: an object whose keys
// are fields or the combinators "and", "or" and "not", all ANDed:
//
//	{"session": "alice", "tags": {"in": ["travel", "work"]}}
//	{"importance": {"range": {"gte": 0.5}}, "created": {"range": {"gte": "2026-01-01T00:00:00Z"}}}
//	{"or": [{"source": "chat"}, {"not": {"tags": {"exists": true}}}]}
//	{"metadata.project": {"ne": "apollo"}, "access_count": {"range": {"gt": 0}}}
//
// A field's condition is a value (equality) or an object of operators, all ANDed: "eq", "ne"
// (a value), "in" (a non-empty array of values), "range" (an object of "gte", "gt", "lte", "lt")
// and "exists" (a boolean). Fields: session, source, tags (a condition on any tag), importance
// and access_count (numbers), created, updated and last_access (RFC 3339 times), and
// "metadata.KEY" (strings, numbers or booleans). Decoding is strict: unknown fields and
// operators, duplicate keys, values of the wrong type, empty objects and arrays are errors.

// MaxFilterInValues bounds the values of one "in".
const MaxFilterInValues = 1000

// MaxFilterKeys bounds the object keys of one filter, in all its objects together: fields,
// operators and combinators. A filter states a few conditions; one of thousands is a mistake or
// an attack, and costs with its size on every candidate it is evaluated against. The parser stops
// reading at the first key past the bound.
const MaxFilterKeys = 1000

// ParseFilter decodes a JSON filter; the result is valid (Validate). Errors match
// ErrInvalidFilter and say where in the filter the problem is.
func ParseFilter(data []byte) (*Filter, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	keys := 0
	v, err := readJSON(dec, 0, &keys)
	if err != nil {
		return nil, errorf(ErrInvalidFilter, "%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errorf(ErrInvalidFilter, "trailing data after the filter object")
	}
	f, err := filterFrom(v, "filter", 0)
	if err != nil {
		return nil, errorf(ErrInvalidFilter, "%v", err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// UnmarshalJSON decodes the JSON filter language into f (see ParseFilter).
func (f *Filter) UnmarshalJSON(data []byte) error {
	g, err := ParseFilter(data)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

// jsonObject keeps an object's members in order, duplicates refused.
type jsonObject struct {
	keys []string
	vals []any
}

// maxJSONDepth bounds nesting while reading (the filter itself allows 32 levels).
const maxJSONDepth = 100

// readJSON reads one JSON value: objects as *jsonObject, arrays as []any, numbers as json.Number.
// keys counts the object keys read so far, against MaxFilterKeys; the work is linear in the input.
func readJSON(dec *json.Decoder, depth int, keys *int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty filter, expected a JSON object")
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{}
			seen := map[string]bool{}
			for dec.More() {
				if *keys++; *keys > MaxFilterKeys {
					return nil, fmt.Errorf("more than %d keys in the filter", MaxFilterKeys)
				}
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				if seen[k] {
					return nil, fmt.Errorf("key %q appears twice", k)
				}
				seen[k] = true
				v, err := readJSON(dec, depth+1, keys)
				if err != nil {
					return nil, err
				}
				o.keys, o.vals = append(o.keys, k), append(o.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			var a []any
			for dec.More() {
				v, err := readJSON(dec, depth+1, keys)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if a == nil {
				a = []any{}
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func filterFrom(v any, at string, depth int) (*Filter, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%s: nested deeper than 32", at)
	}
	o, ok := v.(*jsonObject)
	if !ok {
		return nil, fmt.Errorf("%s: want an object, got %s", at, jsonType(v))
	}
	if len(o.keys) == 0 {
		return nil, fmt.Errorf("%s: empty object", at)
	}
	var kids []*Filter
	for i, k := range o.keys {
		here := at + "." + k
		var f *Filter
		var err error
		switch k {
		case "and", "or":
			a, ok := o.vals[i].([]any)
			if !ok || len(a) == 0 {
				return nil, fmt.Errorf("%s: want a non-empty array of filters", here)
			}
			var fs []*Filter
			for j, e := range a {
				g, err := filterFrom(e, fmt.Sprintf("%s[%d]", here, j), depth+1)
				if err != nil {
					return nil, err
				}
				fs = append(fs, g)
			}
			if k == "and" {
				f = And(fs...)
			} else {
				f = Or(fs...)
			}
		case "not":
			g, err := filterFrom(o.vals[i], here, depth+1)
			if err != nil {
				return nil, err
			}
			f = Not(g)
		default:
			f, err = fieldFilter(Field(k), o.vals[i], here)
			if err != nil {
				return nil, err
			}
		}
		kids = append(kids, f)
	}
	return AllOf(kids...), nil
}

func fieldFilter(field Field, v any, at string) (*Filter, error) {
	if field.kind() == kindUnknown {
		return nil, fmt.Errorf("%s: unknown field %q (want session, source, tags, importance, access_count, created, updated, last_access, metadata.KEY, and, or, not)", at, field)
	}
	o, ok := v.(*jsonObject)
	if !ok {
		return eqFilter(field, v, at)
	}
	if len(o.keys) == 0 {
		return nil, fmt.Errorf("%s: empty condition", at)
	}
	var kids []*Filter
	for i, op := range o.keys {
		here := at + "." + op
		val := o.vals[i]
		var f *Filter
		var err error
		switch op {
		case "eq":
			f, err = eqFilter(field, val, here)
		case "ne":
			f, err = eqFilter(field, val, here)
			f = Not(f)
		case "in":
			a, ok := val.([]any)
			if !ok || len(a) == 0 || len(a) > MaxFilterInValues {
				return nil, fmt.Errorf("%s: want an array of 1..%d values", here, MaxFilterInValues)
			}
			var fs []*Filter
			var strs []string
			for j, e := range a {
				if s, ok := e.(string); ok && field.kind() != kindNumber && field.kind() != kindTime {
					strs = append(strs, s)
					continue
				}
				g, err := eqFilter(field, e, fmt.Sprintf("%s[%d]", here, j))
				if err != nil {
					return nil, err
				}
				fs = append(fs, g)
			}
			if len(strs) > 0 {
				fs = append(fs, In(field, strs...))
			}
			if len(fs) == 1 {
				f = fs[0]
			} else {
				f = Or(fs...)
			}
		case "range":
			f, err = rangeFilter(field, val, here)
		case "exists":
			b, ok := val.(bool)
			if !ok {
				return nil, fmt.Errorf("%s: want true or false, got %s", here, jsonType(val))
			}
			f = Exists(field)
			if !b {
				f = Not(f)
			}
		default:
			return nil, fmt.Errorf("%s: unknown operator %q (want eq, ne, in, range, exists)", at, op)
		}
		if err != nil {
			return nil, err
		}
		kids = append(kids, f)
	}
	return AllOf(kids...), nil
}

// eqFilter is field = v.
func eqFilter(field Field, v any, at string) (*Filter, error) {
	switch field.kind() {
	case kindString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: %s takes a string, got %s", at, field, jsonType(v))
		}
		return Eq(field, s), nil
	case kindNumber:
		x, err := number(v, at)
		if err != nil {
			return nil, err
		}
		return Range(field, x, x), nil
	case kindTime:
		t, err := timeValue(v, at)
		if err != nil {
			return nil, err
		}
		return TimeRange(field, t, t), nil
	}
	switch v := v.(type) { // metadata
	case string:
		return Eq(field, v), nil
	case bool:
		return Eq(field, strconv.FormatBool(v)), nil
	case json.Number:
		x, err := number(v, at)
		if err != nil {
			return nil, err
		}
		return Range(field, x, x), nil
	}
	return nil, fmt.Errorf("%s: metadata values are strings, numbers or booleans, got %s", at, jsonType(v))
}

func rangeFilter(field Field, v any, at string) (*Filter, error) {
	k := field.kind()
	if k == kindString {
		return nil, fmt.Errorf("%s: %s is a string field, range takes numbers or times", at, field)
	}
	o, ok := v.(*jsonObject)
	if !ok || len(o.keys) == 0 {
		return nil, fmt.Errorf("%s: want an object of gte, gt, lte, lt", at)
	}
	if k == kindTime {
		var from, to time.Time
		for i, op := range o.keys {
			t, err := timeValue(o.vals[i], at+"."+op)
			if err != nil {
				return nil, err
			}
			switch op {
			case "gte":
				from = latest(from, t)
			case "gt":
				from = latest(from, t.Add(time.Nanosecond))
			case "lte":
				to = earliest(to, t)
			case "lt":
				to = earliest(to, t.Add(-time.Nanosecond))
			default:
				return nil, fmt.Errorf("%s: unknown bound %q (want gte, gt, lte, lt)", at, op)
			}
		}
		if !from.IsZero() && !to.IsZero() && from.After(to) {
			return nil, fmt.Errorf("%s: empty range, from %s to %s", at, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
		}
		return TimeRange(field, from, to), nil
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	for i, op := range o.keys {
		x, err := number(o.vals[i], at+"."+op)
		if err != nil {
			return nil, err
		}
		switch op {
		case "gte":
			lo = max(lo, x)
		case "gt":
			lo = max(lo, math.Nextafter(x, math.Inf(1)))
		case "lte":
			hi = min(hi, x)
		case "lt":
			hi = min(hi, math.Nextafter(x, math.Inf(-1)))
		default:
			return nil, fmt.Errorf("%s: unknown bound %q (want gte, gt, lte, lt)", at, op)
		}
	}
	if lo > hi {
		return nil, fmt.Errorf("%s: empty range [%v, %v]", at, lo, hi)
	}
	return Range(field, lo, hi), nil
}

func latest(a, b time.Time) time.Time {
	if a.IsZero() || b.After(a) {
		return b
	}
	return a
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

func number(v any, at string) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: want a number, got %s", at, jsonType(v))
	}
	x, err := n.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, fmt.Errorf("%s: number %s out of range", at, n)
	}
	return x, nil
}

func timeValue(v any, at string) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("%s: want an RFC 3339 time string, got %s", at, jsonType(v))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not an RFC 3339 time (2026-01-31T12:00:00Z)", at, s)
	}
	if t.IsZero() {
		return time.Time{}, fmt.Errorf("%s: the zero time %q cannot bound a range", at, s)
	}
	return t, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case *jsonObject:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// FilterSessions returns the sessions a filter confines memories to, and whether it does: an
// equality or "in" on the session field, directly or as a conjunct of an And. A service uses
// it to check a filter against the sessions a caller may see.
func FilterSessions(f *Filter) ([]string, bool) {
	if f == nil {
		return nil, false
	}
	switch f.Op {
	case OpEq, OpIn:
		if f.Field == FieldSession {
			return slices.Clone(f.Values), true
		}
	case OpAnd:
		for _, k := range f.Kids {
			if ss, ok := FilterSessions(k); ok {
				return ss, true
			}
		}
	}
	return nil, false
}

// MarshalJSON renders f in the JSON filter language; ParseFilter reads it back to a filter that
// matches the same memories.
func (f *Filter) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(f.jsonForm())
}

func (f *Filter) jsonForm() any {
	switch f.Op {
	case OpAnd, OpOr:
		kids := make([]any, len(f.Kids))
		for i, k := range f.Kids {
			kids[i] = k.jsonForm()
		}
		return map[string]any{strings.ToLower(opName(f.Op)): kids}
	case OpNot:
		return map[string]any{"not": f.Kids[0].jsonForm()}
	}
	var cond map[string]any
	switch f.Op {
	case OpEq:
		cond = map[string]any{"eq": f.Values[0]}
	case OpIn:
		cond = map[string]any{"in": f.Values}
	case OpExists:
		cond = map[string]any{"exists": true}
	case OpRange:
		bounds := map[string]any{}
		if f.Field.kind() == kindTime {
			if !f.From.IsZero() {
				bounds["gte"] = f.From.UTC().Format(time.RFC3339Nano)
			}
			if !f.To.IsZero() {
				bounds["lte"] = f.To.UTC().Format(time.RFC3339Nano)
			}
			if len(bounds) == 0 {
				cond = map[string]any{"exists": true} // an open time range: the time is set
				break
			}
		} else {
			if !math.IsInf(f.Min, -1) {
				bounds["gte"] = f.Min
			}
			if !math.IsInf(f.Max, 1) {
				bounds["lte"] = f.Max
			}
			if len(bounds) == 0 {
				bounds["gte"] = -math.MaxFloat64
			}
		}
		if cond == nil {
			cond = map[string]any{"range": bounds}
		}
	}
	return map[string]any{string(f.Field): cond}
}

func opName(op Op) string {
	if op == OpAnd {
		return "and"
	}
	return "or"
}
