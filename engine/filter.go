package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

type filterOp uint8

const (
	opEq filterOp = iota + 1
	opNe
	opIn
	opRange
	opExists
	opAnd
	opOr
	opNot
)

// Filter selects records by metadata. Build filters with Eq, Ne, In, Range,
// Exists, And, Or and Not; a nil *Filter matches every record. Filters are
// immutable values and may be shared between goroutines.
//
// Semantics:
//   - Eq(f, v) matches when field f equals v (Int and Float compare
//     numerically); when the field holds a StringList and v is a String, Eq
//     matches when the list contains v (tags).
//   - Ne(f, v) is Not(Eq(f, v)): it also matches records without the field.
//   - In(f, v...) is Or of Eq over the values.
//   - Range(f, min, max) matches min <= field <= max; either bound may be
//     the zero Value for "unbounded"; bounds are numbers, times or strings
//     and a field of another kind never matches.
//   - Exists(f) matches when the record has field f.
type Filter struct {
	op       filterOp
	field    string
	values   []Value
	lo, hi   Value
	children []*Filter
}

// Eq matches records whose field equals v (see Filter for list fields).
func Eq(field string, v Value) *Filter {
	return &Filter{op: opEq, field: field, values: []Value{v}}
}

// Ne matches records whose field is absent or differs from v.
func Ne(field string, v Value) *Filter {
	return &Filter{op: opNe, field: field, values: []Value{v}}
}

// In matches records whose field equals one of values.
func In(field string, values ...Value) *Filter {
	return &Filter{op: opIn, field: field, values: slices.Clone(values)}
}

// Range matches min <= field <= max; a zero Value leaves that side open.
func Range(field string, min, max Value) *Filter {
	return &Filter{op: opRange, field: field, lo: min, hi: max}
}

// Exists matches records that have field.
func Exists(field string) *Filter { return &Filter{op: opExists, field: field} }

// And matches records every child matches.
func And(children ...*Filter) *Filter {
	return &Filter{op: opAnd, children: slices.Clone(children)}
}

// Or matches records any child matches.
func Or(children ...*Filter) *Filter {
	return &Filter{op: opOr, children: slices.Clone(children)}
}

// Not matches records f does not match.
func Not(f *Filter) *Filter { return &Filter{op: opNot, children: []*Filter{f}} }

// ErrInvalidFilter is wrapped by every filter validation error.
var ErrInvalidFilter = errors.New("engine: invalid filter")

const maxFilterDepth = 32

// Validate reports a malformed filter: an empty field, a zero or non-finite
// value, an empty In, a Range with no bound or bounds of different kinds,
// And/Or without children, a nil child, or nesting deeper than 32.
func (f *Filter) Validate() error {
	if f == nil {
		return nil
	}
	if err := f.validate(0); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidFilter, err)
	}
	return nil
}

func (f *Filter) validate(depth int) error {
	if depth > maxFilterDepth {
		return fmt.Errorf("nested deeper than %d", maxFilterDepth)
	}
	switch f.op {
	case opEq, opNe, opIn, opRange, opExists:
		if f.field == "" {
			return errors.New("empty field name")
		}
	}
	switch f.op {
	case opEq, opNe, opIn:
		if len(f.values) == 0 {
			return fmt.Errorf("In(%q) without values", f.field)
		}
		for _, v := range f.values {
			if err := validateValue(v); err != nil {
				return fmt.Errorf("field %q: %v", f.field, err)
			}
		}
	case opRange:
		if f.lo.kind == 0 && f.hi.kind == 0 {
			return fmt.Errorf("Range(%q) without bounds", f.field)
		}
		for _, v := range []Value{f.lo, f.hi} {
			if v.kind == 0 {
				continue
			}
			if v.kind != KindInt && v.kind != KindFloat && v.kind != KindTime && v.kind != KindString {
				return fmt.Errorf("Range(%q) bound of kind %v (want number, time or string)", f.field, v.kind)
			}
			if err := validateValue(v); err != nil {
				return fmt.Errorf("Range(%q): %v", f.field, err)
			}
		}
		if f.lo.kind != 0 && f.hi.kind != 0 {
			if _, ok := f.lo.Compare(f.hi); !ok {
				return fmt.Errorf("Range(%q) bounds of different kinds %v and %v", f.field, f.lo.kind, f.hi.kind)
			}
		}
	case opExists:
	case opAnd, opOr, opNot:
		if len(f.children) == 0 {
			return errors.New("And/Or without children")
		}
		for _, c := range f.children {
			if c == nil {
				return errors.New("nil child filter")
			}
			if err := c.validate(depth + 1); err != nil {
				return err
			}
		}
	default:
		return errors.New("zero Filter (build filters with engine.Eq, And, ...)")
	}
	return nil
}

// getter returns a record's field; records in memory and in segments
// implement it differently.
type getter func(field string) (Value, bool)

func (f *Filter) match(get getter) bool {
	if f == nil {
		return true
	}
	switch f.op {
	case opEq, opNe, opIn, opRange, opExists:
		v, ok := get(f.field)
		return f.leaf(v, ok)
	case opAnd:
		for _, c := range f.children {
			if !c.match(get) {
				return false
			}
		}
		return true
	case opOr:
		for _, c := range f.children {
			if c.match(get) {
				return true
			}
		}
		return false
	case opNot:
		return !f.children[0].match(get)
	}
	return false
}

// leaf evaluates a field operator on the field's value (ok: present).
func (f *Filter) leaf(v Value, ok bool) bool {
	switch f.op {
	case opEq:
		return ok && eqMatch(v, f.values[0])
	case opNe:
		return !ok || !eqMatch(v, f.values[0])
	case opIn:
		if !ok {
			return false
		}
		for _, w := range f.values {
			if eqMatch(v, w) {
				return true
			}
		}
		return false
	case opRange:
		if !ok {
			return false
		}
		if f.lo.kind != 0 {
			if c, ok := v.Compare(f.lo); !ok || c < 0 {
				return false
			}
		}
		if f.hi.kind != 0 {
			if c, ok := v.Compare(f.hi); !ok || c > 0 {
				return false
			}
		}
		return true
	case opExists:
		return ok
	}
	return false
}

func eqMatch(field, want Value) bool {
	if field.kind == KindStringList && want.kind == KindString {
		return slices.Contains(field.list, want.s)
	}
	return field.Equal(want)
}

// namespaceValue reports the value v when f requires field == String(v)
// (directly or as a conjunct of an And); such filters are served from the
// namespace postings instead of a scan.
func (f *Filter) namespaceValue(field string) (string, bool) {
	if f == nil || field == "" {
		return "", false
	}
	switch f.op {
	case opEq:
		if f.field == field && f.values[0].kind == KindString {
			return f.values[0].s, true
		}
	case opAnd:
		for _, c := range f.children {
			if v, ok := c.namespaceValue(field); ok {
				return v, true
			}
		}
	}
	return "", false
}

// String renders the filter for error messages and logs.
func (f *Filter) String() string {
	if f == nil {
		return "all"
	}
	var b strings.Builder
	f.write(&b)
	return b.String()
}

func (f *Filter) write(b *strings.Builder) {
	name := map[filterOp]string{opEq: "Eq", opNe: "Ne", opIn: "In", opRange: "Range",
		opExists: "Exists", opAnd: "And", opOr: "Or", opNot: "Not"}[f.op]
	if name == "" {
		b.WriteString("Filter{}")
		return
	}
	b.WriteString(name + "(")
	switch f.op {
	case opAnd, opOr, opNot:
		for i, c := range f.children {
			if i > 0 {
				b.WriteString(", ")
			}
			if c == nil {
				b.WriteString("nil")
			} else {
				c.write(b)
			}
		}
	case opRange:
		fmt.Fprintf(b, "%q, %#v, %#v", f.field, f.lo, f.hi)
	default:
		fmt.Fprintf(b, "%q", f.field)
		for _, v := range f.values {
			fmt.Fprintf(b, ", %#v", v)
		}
	}
	b.WriteString(")")
}
