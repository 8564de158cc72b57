package chroma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// IDMap is what a Chroma vector segment's index_metadata.pickle says: which hnswlib label
// holds which record ID. Python Chroma pickles a PersistentData object
// (chromadb/segment/impl/vector/local_persistent_hnsw.py), Chroma 1.x's Rust segment a plain
// dict with the same keys (serde_pickle); ReadIDMap reads both.
type IDMap struct {
	Dimensionality     int
	TotalElementsAdded int
	LabelToID          map[uint64]string
}

// MaxPickle bounds the size of a pickle ReadIDMap reads.
const MaxPickle = 1 << 30

// ReadIDMap decodes index_metadata.pickle. It runs no code: the pickle is interpreted by a
// small stack machine that knows the opcodes of protocols 2 to 5 that dicts, lists, tuples,
// strings, numbers and plain objects use, builds objects as inert values, and refuses any
// other opcode. It never panics on malformed input.
func ReadIDMap(b []byte) (IDMap, error) {
	var m IDMap
	if len(b) > MaxPickle {
		return m, fmt.Errorf("index_metadata.pickle: over %d MiB", MaxPickle>>20)
	}
	v, err := unpickle(b)
	if err != nil {
		return m, fmt.Errorf("index_metadata.pickle: %w", err)
	}
	var state *pyDict
	switch v := v.(type) {
	case *pyDict:
		state = v
	case *pyObject:
		state, _ = v.state.(*pyDict)
	}
	if state == nil {
		return m, errors.New("index_metadata.pickle: not a PersistentData object or dict")
	}
	if d, ok := state.get("dimensionality").(int64); ok && d > 0 && d <= 1<<20 {
		m.Dimensionality = int(d)
	}
	if n, ok := state.get("total_elements_added").(int64); ok && n >= 0 && n <= math.MaxInt32 {
		m.TotalElementsAdded = int(n)
	}
	m.LabelToID = map[uint64]string{}
	if l2i, ok := state.get("label_to_id").(*pyDict); ok {
		for i, k := range l2i.keys {
			label, ok1 := k.(int64)
			id, ok2 := l2i.vals[i].(string)
			if !ok1 || !ok2 || label < 0 {
				return m, fmt.Errorf("index_metadata.pickle: label_to_id holds %T -> %T, want int -> str", k, l2i.vals[i])
			}
			m.LabelToID[uint64(label)] = id
		}
	} else if i2l, ok := state.get("id_to_label").(*pyDict); ok {
		for i, k := range i2l.keys {
			id, ok1 := k.(string)
			label, ok2 := i2l.vals[i].(int64)
			if !ok1 || !ok2 || label < 0 {
				return m, fmt.Errorf("index_metadata.pickle: id_to_label holds %T -> %T, want str -> int", k, i2l.vals[i])
			}
			m.LabelToID[uint64(label)] = id
		}
	} else {
		return m, errors.New("index_metadata.pickle: no label_to_id or id_to_label")
	}
	return m, nil
}

// The inert values the machine builds.
type (
	pyDict struct {
		keys, vals []any
		index      map[any]int // hashable keys (string, int64, float64, bool, nil) -> position
	}
	pyList   struct{ items []any }
	pyTuple  []any
	pyGlobal struct{ module, name string }
	pyObject struct {
		class any
		args  any
		state any
	}
	pyBytes []byte
	mark    struct{}
)

func newDict() *pyDict { return &pyDict{index: map[any]int{}} }

func (d *pyDict) set(k, v any) error {
	switch k.(type) {
	case string, int64, float64, bool, nil:
	default:
		return fmt.Errorf("dict key of type %T", k)
	}
	if i, ok := d.index[k]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[k] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

func (d *pyDict) get(k any) any {
	if i, ok := d.index[k]; ok {
		return d.vals[i]
	}
	return nil
}

// unpickle runs the pickle machine over b and returns the value STOP leaves.
func unpickle(b []byte) (any, error) {
	var stack []any
	memo := map[uint64]any{}
	pos := 0
	take := func(n uint64) ([]byte, error) {
		if n > uint64(len(b)-pos) {
			return nil, fmt.Errorf("truncated at byte %d", pos)
		}
		s := b[pos : pos+int(n)]
		pos += int(n)
		return s, nil
	}
	pop := func() (any, error) {
		if len(stack) == 0 {
			return nil, fmt.Errorf("stack underflow at byte %d", pos)
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := v.(mark); ok {
			return nil, fmt.Errorf("unexpected mark at byte %d", pos)
		}
		return v, nil
	}
	top := func() (any, error) {
		if len(stack) == 0 {
			return nil, fmt.Errorf("stack underflow at byte %d", pos)
		}
		return stack[len(stack)-1], nil
	}
	popMark := func() ([]any, error) {
		for i := len(stack) - 1; i >= 0; i-- {
			if _, ok := stack[i].(mark); ok {
				items := append([]any(nil), stack[i+1:]...)
				stack = stack[:i]
				return items, nil
			}
		}
		return nil, fmt.Errorf("no mark at byte %d", pos)
	}
	le := func(n uint64) (uint64, error) {
		s, err := take(n)
		if err != nil {
			return 0, err
		}
		var x uint64
		for i := len(s) - 1; i >= 0; i-- {
			x = x<<8 | uint64(s[i])
		}
		return x, nil
	}
	line := func() (string, error) {
		for i := pos; i < len(b); i++ {
			if b[i] == '\n' {
				s := string(b[pos:i])
				pos = i + 1
				return s, nil
			}
		}
		return "", fmt.Errorf("unterminated line at byte %d", pos)
	}
	for {
		if pos >= len(b) {
			return nil, errors.New("no STOP opcode")
		}
		op := b[pos]
		pos++
		switch op {
		case 0x80: // PROTO
			p, err := take(1)
			if err != nil {
				return nil, err
			}
			if p[0] > 5 {
				return nil, fmt.Errorf("pickle protocol %d", p[0])
			}
		case 0x95: // FRAME: a length hint; the frame's opcodes follow inline
			if _, err := take(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			v, err := pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case '(': // MARK
			stack = append(stack, mark{})
		case 'N':
			stack = append(stack, nil)
		case 0x88:
			stack = append(stack, true)
		case 0x89:
			stack = append(stack, false)
		case 'J': // BININT
			x, err := le(4)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(int32(x)))
		case 'K': // BININT1
			x, err := le(1)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(x))
		case 'M': // BININT2
			x, err := le(2)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(x))
		case 0x8a, 0x8b: // LONG1, LONG4: little-endian two's complement
			w := uint64(1)
			if op == 0x8b {
				w = 4
			}
			n, err := le(w)
			if err != nil {
				return nil, err
			}
			s, err := take(n)
			if err != nil {
				return nil, err
			}
			v, err := longValue(s)
			if err != nil {
				return nil, err
			}
			stack = append(stack, v)
		case 'I', 'L': // INT, LONG (protocol 0 text)
			s, err := line()
			if err != nil {
				return nil, err
			}
			switch s {
			case "01":
				stack = append(stack, true)
			case "00":
				stack = append(stack, false)
			default:
				if len(s) > 0 && s[len(s)-1] == 'L' {
					s = s[:len(s)-1]
				}
				x, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("integer %q at byte %d", s, pos)
				}
				stack = append(stack, x)
			}
		case 'G': // BINFLOAT, big-endian
			s, err := take(8)
			if err != nil {
				return nil, err
			}
			stack = append(stack, math.Float64frombits(binary.BigEndian.Uint64(s)))
		case 'X', 0x8c, 0x8d, 'T', 'U': // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINSTRING, SHORT_BINSTRING
			w := map[byte]uint64{'X': 4, 0x8c: 1, 0x8d: 8, 'T': 4, 'U': 1}[op]
			n, err := le(w)
			if err != nil {
				return nil, err
			}
			s, err := take(n)
			if err != nil {
				return nil, err
			}
			stack = append(stack, string(s))
		case 'B', 'C', 0x8e: // BINBYTES, SHORT_BINBYTES, BINBYTES8
			w := map[byte]uint64{'B': 4, 'C': 1, 0x8e: 8}[op]
			n, err := le(w)
			if err != nil {
				return nil, err
			}
			s, err := take(n)
			if err != nil {
				return nil, err
			}
			stack = append(stack, pyBytes(append([]byte(nil), s...)))
		case ')':
			stack = append(stack, pyTuple{})
		case 0x85, 0x86, 0x87: // TUPLE1..3
			n := int(op - 0x84)
			if len(stack) < n {
				return nil, fmt.Errorf("stack underflow at byte %d", pos)
			}
			t := make(pyTuple, n)
			for i := n - 1; i >= 0; i-- {
				v, err := pop()
				if err != nil {
					return nil, err
				}
				t[i] = v
			}
			stack = append(stack, t)
		case 't': // TUPLE
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			stack = append(stack, pyTuple(items))
		case ']':
			stack = append(stack, &pyList{})
		case 'l': // LIST
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			stack = append(stack, &pyList{items: items})
		case 'a': // APPEND
			v, err := pop()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			l, ok := t.(*pyList)
			if !ok {
				return nil, fmt.Errorf("APPEND to %T at byte %d", t, pos)
			}
			l.items = append(l.items, v)
		case 'e', 0x90: // APPENDS, ADDITEMS (a set is read as a list)
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			l, ok := t.(*pyList)
			if !ok {
				return nil, fmt.Errorf("APPENDS to %T at byte %d", t, pos)
			}
			l.items = append(l.items, items...)
		case 0x8f: // EMPTY_SET
			stack = append(stack, &pyList{})
		case 0x91: // FROZENSET
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			stack = append(stack, &pyList{items: items})
		case '}':
			stack = append(stack, newDict())
		case 'd': // DICT
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			d, err := dictOf(items)
			if err != nil {
				return nil, fmt.Errorf("%v at byte %d", err, pos)
			}
			stack = append(stack, d)
		case 's': // SETITEM
			v, err := pop()
			if err != nil {
				return nil, err
			}
			k, err := pop()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			d, ok := t.(*pyDict)
			if !ok {
				return nil, fmt.Errorf("SETITEM on %T at byte %d", t, pos)
			}
			if err := d.set(k, v); err != nil {
				return nil, fmt.Errorf("%v at byte %d", err, pos)
			}
		case 'u': // SETITEMS
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			d, ok := t.(*pyDict)
			if !ok || len(items)%2 != 0 {
				return nil, fmt.Errorf("SETITEMS on %T with %d items at byte %d", t, len(items), pos)
			}
			for i := 0; i < len(items); i += 2 {
				if err := d.set(items[i], items[i+1]); err != nil {
					return nil, fmt.Errorf("%v at byte %d", err, pos)
				}
			}
		case 0x94: // MEMOIZE
			t, err := top()
			if err != nil {
				return nil, err
			}
			memo[uint64(len(memo))] = t
		case 'q', 'r': // BINPUT, LONG_BINPUT
			w := uint64(1)
			if op == 'r' {
				w = 4
			}
			i, err := le(w)
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			memo[i] = t
		case 'p': // PUT
			s, err := line()
			if err != nil {
				return nil, err
			}
			i, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("PUT %q at byte %d", s, pos)
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			memo[i] = t
		case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
			var i uint64
			var err error
			switch op {
			case 'h':
				i, err = le(1)
			case 'j':
				i, err = le(4)
			default:
				var s string
				if s, err = line(); err == nil {
					i, err = strconv.ParseUint(s, 10, 64)
				}
			}
			if err != nil {
				return nil, err
			}
			v, ok := memo[i]
			if !ok {
				return nil, fmt.Errorf("memo %d unset at byte %d", i, pos)
			}
			stack = append(stack, v)
		case 'c': // GLOBAL
			mod, err := line()
			if err != nil {
				return nil, err
			}
			name, err := line()
			if err != nil {
				return nil, err
			}
			stack = append(stack, pyGlobal{mod, name})
		case 0x93: // STACK_GLOBAL
			name, err := pop()
			if err != nil {
				return nil, err
			}
			mod, err := pop()
			if err != nil {
				return nil, err
			}
			ms, ok1 := mod.(string)
			ns, ok2 := name.(string)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("STACK_GLOBAL of %T, %T at byte %d", mod, name, pos)
			}
			stack = append(stack, pyGlobal{ms, ns})
		case 0x81, 'R': // NEWOBJ, REDUCE: an inert object of that class
			args, err := pop()
			if err != nil {
				return nil, err
			}
			cls, err := pop()
			if err != nil {
				return nil, err
			}
			stack = append(stack, &pyObject{class: cls, args: args})
		case 0x92: // NEWOBJ_EX
			if _, err := pop(); err != nil { // kwargs
				return nil, err
			}
			args, err := pop()
			if err != nil {
				return nil, err
			}
			cls, err := pop()
			if err != nil {
				return nil, err
			}
			stack = append(stack, &pyObject{class: cls, args: args})
		case 'b': // BUILD
			st, err := pop()
			if err != nil {
				return nil, err
			}
			t, err := top()
			if err != nil {
				return nil, err
			}
			switch o := t.(type) {
			case *pyObject:
				// A (dict, slots) pair sets both; the dict is what PersistentData has.
				if tu, ok := st.(pyTuple); ok && len(tu) == 2 {
					if tu[0] != nil {
						st = tu[0]
					} else {
						st = tu[1]
					}
				}
				o.state = st
			case *pyDict:
				if sd, ok := st.(*pyDict); ok {
					for i, k := range sd.keys {
						if err := o.set(k, sd.vals[i]); err != nil {
							return nil, err
						}
					}
				}
			default:
				return nil, fmt.Errorf("BUILD on %T at byte %d", t, pos)
			}
		case 0x84: // POP_MARK
			if _, err := popMark(); err != nil {
				return nil, err
			}
		case '0': // POP
			if len(stack) == 0 {
				return nil, fmt.Errorf("stack underflow at byte %d", pos)
			}
			stack = stack[:len(stack)-1]
		case '2': // DUP
			t, err := top()
			if err != nil {
				return nil, err
			}
			stack = append(stack, t)
		default:
			return nil, fmt.Errorf("unsupported opcode 0x%02x at byte %d", op, pos-1)
		}
	}
}

func dictOf(items []any) (*pyDict, error) {
	if len(items)%2 != 0 {
		return nil, fmt.Errorf("DICT with %d items", len(items))
	}
	d := newDict()
	for i := 0; i < len(items); i += 2 {
		if err := d.set(items[i], items[i+1]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// longValue decodes a LONG1/LONG4 payload, which must fit an int64.
func longValue(s []byte) (int64, error) {
	if len(s) == 0 {
		return 0, nil
	}
	if len(s) > 8 {
		// Sign extension bytes beyond 8 are allowed only if redundant.
		ext := byte(0)
		if s[7]&0x80 != 0 {
			ext = 0xff
		}
		for _, c := range s[8:] {
			if c != ext {
				return 0, fmt.Errorf("integer of %d bytes", len(s))
			}
		}
		s = s[:8]
	}
	var x uint64
	for i := len(s) - 1; i >= 0; i-- {
		x = x<<8 | uint64(s[i])
	}
	if len(s) < 8 && s[len(s)-1]&0x80 != 0 { // negative: sign-extend
		x |= ^uint64(0) << (8 * uint(len(s)))
	}
	return int64(x), nil
}
