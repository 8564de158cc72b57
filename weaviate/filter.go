package weaviate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// translate turns f into a Weaviate where clause. exact reports whether the
// clause matches exactly what f matches; otherwise it matches a superset (nil
// means everything) and the caller applies f to the results.
func translate(f *memory.Filter) (where map[string]any, exact bool) {
	if f == nil {
		return nil, true
	}
	switch f.Op {
	case memory.OpAnd:
		exact = true
		var ops []map[string]any
		for _, k := range f.Kids {
			w, e := translate(k)
			exact = exact && e
			if w != nil {
				ops = append(ops, w)
			}
		}
		return combine("And", ops), exact
	case memory.OpOr:
		exact = true
		var ops []map[string]any
		for _, k := range f.Kids {
			w, e := translate(k)
			if w == nil { // one operand matches everything: so does the Or
				return nil, false
			}
			exact = exact && e
			ops = append(ops, w)
		}
		return combine("Or", ops), exact
	case memory.OpNot:
		k := f.Kids[0]
		if (k.Op == memory.OpEq || k.Op == memory.OpIn) && (k.Field == memory.FieldSession || k.Field == memory.FieldSource) {
			var ops []map[string]any
			for _, v := range k.Values {
				ops = append(ops, leaf(k.Field, "NotEqual", "valueText", strPrefix+v))
			}
			return combine("And", ops), true
		}
		return nil, false
	}
	switch f.Field {
	case memory.FieldSession, memory.FieldSource:
		switch f.Op {
		case memory.OpEq, memory.OpIn:
			var ops []map[string]any
			for _, v := range f.Values {
				ops = append(ops, leaf(f.Field, "Equal", "valueText", strPrefix+v))
			}
			return combine("Or", ops), true
		case memory.OpExists:
			return leaf(f.Field, "NotEqual", "valueText", strPrefix), true
		}
	case memory.FieldTag:
		if f.Op == memory.OpEq || f.Op == memory.OpIn {
			vals := make([]string, len(f.Values))
			for i, v := range f.Values {
				vals[i] = tagPrefix + v
			}
			return leaf(f.Field, "ContainsAny", "valueTextArray", vals), true
		}
	case memory.FieldImportance, memory.FieldAccessCount:
		switch f.Op {
		case memory.OpRange:
			var ops []map[string]any
			if !math.IsInf(f.Min, -1) {
				ops = append(ops, leaf(f.Field, "GreaterThanEqual", "valueNumber", f.Min))
			}
			if !math.IsInf(f.Max, 1) {
				ops = append(ops, leaf(f.Field, "LessThanEqual", "valueNumber", f.Max))
			}
			return combine("And", ops), true
		case memory.OpExists:
			return combine("Or", []map[string]any{
				leaf(f.Field, "GreaterThan", "valueNumber", 0.0),
				leaf(f.Field, "LessThan", "valueNumber", 0.0),
			}), true
		}
	case memory.FieldCreated, memory.FieldUpdated, memory.FieldLastAccess:
		// Date properties may be stored at a coarser precision than the exact
		// times kept beside them, so time ranges are pushed down widened by a
		// second and checked exactly on the client.
		switch f.Op {
		case memory.OpRange:
			ops := []map[string]any{leaf(f.Field, "IsNull", "valueBoolean", false)}
			if !f.From.IsZero() {
				ops = append(ops, leaf(f.Field, "GreaterThanEqual", "valueDate", f.From.Add(-time.Second).UTC().Format(time.RFC3339Nano)))
			}
			if !f.To.IsZero() {
				ops = append(ops, leaf(f.Field, "LessThanEqual", "valueDate", f.To.Add(time.Second).UTC().Format(time.RFC3339Nano)))
			}
			return combine("And", ops), false
		case memory.OpExists:
			return leaf(f.Field, "IsNull", "valueBoolean", false), true
		}
	}
	return nil, false
}

func leaf(field memory.Field, op, valueKey string, value any) map[string]any {
	return map[string]any{"path": []string{string(field)}, "operator": op, valueKey: value}
}

// combine joins operands with op; one operand stands alone, none is nil.
func combine(op string, operands []map[string]any) map[string]any {
	switch len(operands) {
	case 0:
		return nil
	case 1:
		return operands[0]
	}
	return map[string]any{"operator": op, "operands": operands}
}

// renderWhere writes a where clause in GraphQL syntax: bare keys, bare
// operator enums, JSON literals for values.
func renderWhere(w map[string]any) string {
	var b strings.Builder
	renderValue(&b, "", w)
	return b.String()
}

func renderValue(b *strings.Builder, key string, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if k == "valueTextArray" { // GraphQL takes the list under valueText
				b.WriteString("valueText")
			} else {
				b.WriteString(k)
			}
			b.WriteString(": ")
			renderValue(b, k, v[k])
		}
		b.WriteString("}")
	case []map[string]any:
		b.WriteString("[")
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			renderValue(b, "", x)
		}
		b.WriteString("]")
	case string:
		if key == "operator" {
			b.WriteString(v)
			return
		}
		data, _ := json.Marshal(v)
		b.Write(data)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("weaviate: unrenderable where value %T", v)) // only this file builds where clauses
		}
		b.Write(data)
	}
}
