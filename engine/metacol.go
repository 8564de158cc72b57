package engine

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"
	"unsafe"
)

// Columnar metadata (segment format version 2, section kind 9): one column
// per (field, kind) pair present in the segment, each with the nodes that
// hold it (a bitmap with per-word ranks, or a sorted node list when that is
// smaller) and their values in node order. Columns are read in place from
// the mapped file; a filter on a field reads only that field's columns.
// Format: docs/format/segment.md.

const (
	presBitmap = 0
	presList   = 1
	colHeader  = 16 // kind u8, presence u8, 0 u16, name length u32, count u64
)

// column is one column of a segment, every slice pointing into the file.
type column struct {
	name  string
	kind  Kind
	count uint64
	words []byte // presBitmap: (n+63)/64 u64 words
	ranks []byte // presBitmap: per word, the number of set bits before it (u32)
	nodes []byte // presList: count u32 node numbers, increasing
	vals  []byte // int/float/time: count u64; bool: count u8
	offs  []byte // string: count+1 u64 into blob; list: count+1 u64 item indexes
	items []byte // list: items+1 u64 into blob
	blob  []byte
}

// colKey orders columns by field name, then kind.
type colKey struct {
	name string
	kind Kind
}

func pad8(e *enc) {
	for len(e.b)%8 != 0 {
		e.b = append(e.b, 0)
	}
}

// encodeColumns builds the column section of m's live records.
func encodeColumns(m *memtable) []byte {
	n := len(m.recs)
	nodes := map[colKey][]uint32{}
	for i := range m.recs {
		if m.recs[i].dead {
			continue
		}
		for k, v := range m.recs[i].rec.Meta {
			key := colKey{k, v.kind}
			nodes[key] = append(nodes[key], uint32(i))
		}
	}
	keys := make([]colKey, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].name != keys[b].name {
			return keys[a].name < keys[b].name
		}
		return keys[a].kind < keys[b].kind
	})
	var e enc
	e.u64(uint64(n))
	e.u64(uint64(len(keys)))
	dir := len(e.b)
	e.b = append(e.b, make([]byte, 16*len(keys))...)
	nw := (n + 63) / 64
	for ci, key := range keys {
		start := len(e.b)
		list := nodes[key]
		pres := byte(presBitmap)
		if 4*len(list) < 12*nw { // a node list is smaller than bitmap + ranks
			pres = presList
		}
		e.u8(byte(key.kind))
		e.u8(pres)
		e.u8(0)
		e.u8(0)
		e.u32(uint32(len(key.name)))
		e.u64(uint64(len(list)))
		e.b = append(e.b, key.name...)
		pad8(&e)
		if pres == presBitmap {
			words := make([]uint64, nw)
			for _, node := range list {
				words[node>>6] |= 1 << (node & 63)
			}
			for _, w := range words {
				e.u64(w)
			}
			r := uint32(0)
			for _, w := range words {
				e.u32(r)
				r += uint32(bits.OnesCount64(w))
			}
		} else {
			for _, node := range list {
				e.u32(node)
			}
		}
		pad8(&e)
		val := func(node uint32) Value { return m.recs[node].rec.Meta[key.name] }
		switch key.kind {
		case KindInt, KindTime:
			for _, node := range list {
				e.u64(uint64(val(node).n))
			}
		case KindFloat:
			for _, node := range list {
				e.u64(math.Float64bits(val(node).f))
			}
		case KindBool:
			for _, node := range list {
				e.u8(byte(val(node).n))
			}
			pad8(&e)
		case KindString:
			off := uint64(0)
			for _, node := range list {
				e.u64(off)
				off += uint64(len(val(node).s))
			}
			e.u64(off)
			for _, node := range list {
				e.b = append(e.b, val(node).s...)
			}
		case KindStringList:
			it := uint64(0)
			for _, node := range list {
				e.u64(it)
				it += uint64(len(val(node).list))
			}
			e.u64(it)
			off := uint64(0)
			for _, node := range list {
				for _, s := range val(node).list {
					e.u64(off)
					off += uint64(len(s))
				}
			}
			e.u64(off)
			for _, node := range list {
				for _, s := range val(node).list {
					e.b = append(e.b, s...)
				}
			}
		}
		pad8(&e)
		le.PutUint64(e.b[dir+16*ci:], uint64(start))
		le.PutUint64(e.b[dir+16*ci+8:], uint64(len(e.b)-start))
	}
	return e.b
}

// parseColumns reads the directory and column headers of a column section
// for n nodes: O(columns), no per-record work. Every size is checked;
// offsets inside the values are checked when read.
func parseColumns(b []byte, n int) ([]column, error) {
	if len(b) < 16 || le.Uint64(b) != uint64(n) {
		return nil, errors.New("column section header")
	}
	nc := le.Uint64(b[8:])
	if nc > uint64(len(b)-16)/16 {
		return nil, errors.New("column directory too long")
	}
	nn := uint64(n)
	nw := (nn + 63) / 64
	cols := make([]column, nc)
	for i := range cols {
		off, ln := le.Uint64(b[16+16*i:]), le.Uint64(b[24+16*i:])
		cb := slice(b, off, off+ln)
		if cb == nil || off+ln < off || off%8 != 0 || len(cb) < colHeader {
			return nil, fmt.Errorf("column %d at %d+%d out of range", i, off, ln)
		}
		c := &cols[i]
		c.kind, c.count = Kind(cb[0]), le.Uint64(cb[8:])
		pres, nameLen := cb[1], uint64(le.Uint32(cb[4:]))
		if c.count > nn || c.count == 0 || nameLen == 0 || nameLen > MaxMetaKeyLen {
			return nil, fmt.Errorf("column %d: %d values, name of %d bytes", i, c.count, nameLen)
		}
		rest := cb[colHeader:]
		take := func(size uint64) []byte { // size bytes, then padding to 8
			if size > uint64(len(rest)) {
				rest = nil
				return nil
			}
			p := rest[:size:size]
			rest = rest[min(uint64(len(rest)), (size+7)/8*8):]
			return p
		}
		name := take(nameLen)
		if name == nil {
			return nil, fmt.Errorf("column %d name", i)
		}
		c.name = string(name)
		switch pres {
		case presBitmap:
			c.words, c.ranks = take(8*nw), take(4*nw)
			if c.words == nil || c.ranks == nil {
				return nil, fmt.Errorf("column %q bitmap", c.name)
			}
		case presList:
			if c.nodes = take(4 * c.count); c.nodes == nil {
				return nil, fmt.Errorf("column %q nodes", c.name)
			}
		default:
			return nil, fmt.Errorf("column %q: presence encoding %d", c.name, pres)
		}
		switch c.kind {
		case KindInt, KindTime, KindFloat:
			c.vals = take(8 * c.count)
		case KindBool:
			c.vals = take(c.count)
		case KindString:
			if c.offs = take(8 * (c.count + 1)); c.offs != nil {
				if c.blob = slice(rest, 0, le.Uint64(c.offs[8*c.count:])); c.blob == nil {
					return nil, fmt.Errorf("column %q strings", c.name)
				}
			}
		case KindStringList:
			if c.offs = take(8 * (c.count + 1)); c.offs != nil {
				items := le.Uint64(c.offs[8*c.count:])
				if items <= uint64(len(rest))/8 {
					if c.items = take(8 * (items + 1)); c.items != nil {
						c.blob = slice(rest, 0, le.Uint64(c.items[8*items:]))
					}
				}
			}
			if c.items == nil || c.blob == nil {
				return nil, fmt.Errorf("column %q items", c.name)
			}
		default:
			return nil, fmt.Errorf("column %q of kind %d", c.name, c.kind)
		}
		if c.vals == nil && c.offs == nil {
			return nil, fmt.Errorf("column %q values", c.name)
		}
		if i > 0 {
			p := &cols[i-1]
			if p.name > c.name || p.name == c.name && p.kind >= c.kind {
				return nil, fmt.Errorf("columns out of order at %q", c.name)
			}
		}
	}
	return cols, nil
}

// rank returns the index of node's value in c, false when node has none.
func (c *column) rank(node uint32) (uint64, bool) {
	var r uint64
	if c.words != nil {
		w := uint64(node >> 6)
		if 8*w+8 > uint64(len(c.words)) {
			return 0, false
		}
		word := le.Uint64(c.words[8*w:])
		bit := uint64(1) << (node & 63)
		if word&bit == 0 {
			return 0, false
		}
		r = uint64(le.Uint32(c.ranks[4*w:])) + uint64(bits.OnesCount64(word&(bit-1)))
	} else {
		cnt := len(c.nodes) / 4
		i := sort.Search(cnt, func(i int) bool { return le.Uint32(c.nodes[4*i:]) >= node })
		if i == cnt || le.Uint32(c.nodes[4*i:]) != node {
			return 0, false
		}
		r = uint64(i)
	}
	return r, r < c.count
}

// value returns the r-th value; ok is false for damaged offsets.
func (c *column) value(r uint64) (Value, bool) {
	v := Value{kind: c.kind}
	switch c.kind {
	case KindInt, KindTime:
		v.n = int64(le.Uint64(c.vals[8*r:]))
	case KindFloat:
		v.f = math.Float64frombits(le.Uint64(c.vals[8*r:]))
	case KindBool:
		v.n = int64(c.vals[r])
		if v.n > 1 {
			return Value{}, false
		}
	case KindString:
		s := slice(c.blob, le.Uint64(c.offs[8*r:]), le.Uint64(c.offs[8*r+8:]))
		if s == nil && le.Uint64(c.offs[8*r:]) != le.Uint64(c.offs[8*r+8:]) {
			return Value{}, false
		}
		v.s = string(s)
	case KindStringList:
		lo, hi := le.Uint64(c.offs[8*r:]), le.Uint64(c.offs[8*r+8:])
		if lo > hi || hi > uint64(len(c.items)/8-1) || hi-lo > MaxMetaBytes {
			return Value{}, false
		}
		v.list = make([]string, 0, hi-lo)
		for j := lo; j < hi; j++ {
			a, b := le.Uint64(c.items[8*j:]), le.Uint64(c.items[8*j+8:])
			s := slice(c.blob, a, b)
			if s == nil && a != b {
				return Value{}, false
			}
			v.list = append(v.list, string(s))
		}
	default:
		return Value{}, false
	}
	return v, true
}

// colGet looks field up for node in the columns named field (cols is
// sorted by name, so they are adjacent).
func colGet(cols []column, node uint32, field string) (Value, bool) {
	i := sort.Search(len(cols), func(i int) bool { return cols[i].name >= field })
	for ; i < len(cols) && cols[i].name == field; i++ {
		if r, ok := cols[i].rank(node); ok {
			return cols[i].value(r)
		}
	}
	return Value{}, false
}

// colMeta assembles node's metadata from every column.
func colMeta(cols []column, node uint32) (Metadata, error) {
	var m Metadata
	for i := range cols {
		r, ok := cols[i].rank(node)
		if !ok {
			continue
		}
		v, ok := cols[i].value(r)
		if !ok {
			return nil, fmt.Errorf("column %q value %d", cols[i].name, r)
		}
		if m == nil {
			m = make(Metadata)
		}
		if _, dup := m[cols[i].name]; dup {
			return nil, fmt.Errorf("field %q in two columns", cols[i].name)
		}
		m[cols[i].name] = v
	}
	if len(m) > MaxMetaKeys {
		return nil, fmt.Errorf("%d fields", len(m))
	}
	return m, nil
}

// eachNode calls fn with every node holding a value in c, in order.
func (c *column) eachNode(fn func(node uint32)) {
	if c.words != nil {
		for w := 0; w < len(c.words)/8; w++ {
			for word := le.Uint64(c.words[8*w:]); word != 0; word &= word - 1 {
				fn(uint32(64*w + bits.TrailingZeros64(word)))
			}
		}
		return
	}
	for j := 0; j < len(c.nodes)/4; j++ {
		fn(le.Uint32(c.nodes[4*j:]))
	}
}

// checkColumns verifies the structure of every column: presence and ranks
// agree, node lists increase, offsets are monotone and inside the blob,
// values are valid for their kind; and across columns, that no node holds
// a field in two columns (kinds) or more than MaxMetaKeys fields.
func checkColumns(cols []column, n int) error {
	if err := checkEachColumn(cols, n); err != nil {
		return err
	}
	fields := make([]uint16, n)
	var inGroup []uint64 // nodes holding the current field name
	for i := range cols {
		if i == 0 || cols[i].name != cols[i-1].name {
			inGroup = make([]uint64, (n+63)/64)
		}
		var err error
		cols[i].eachNode(func(node uint32) {
			if err != nil || int(node) >= n {
				return
			}
			if inGroup[node>>6]&(1<<(node&63)) != 0 {
				err = fmt.Errorf("node %d holds field %q in two columns", node, cols[i].name)
			}
			inGroup[node>>6] |= 1 << (node & 63)
			if fields[node]++; fields[node] > MaxMetaKeys {
				err = fmt.Errorf("node %d holds more than %d fields", node, MaxMetaKeys)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func checkEachColumn(cols []column, n int) error {
	for i := range cols {
		c := &cols[i]
		if !utf8.ValidString(c.name) {
			return fmt.Errorf("column name %q is not UTF-8", c.name)
		}
		if c.words != nil {
			r := uint64(0)
			for w := 0; w < len(c.words)/8; w++ {
				if uint64(le.Uint32(c.ranks[4*w:])) != r {
					return fmt.Errorf("column %q: rank of word %d", c.name, w)
				}
				word := le.Uint64(c.words[8*w:])
				if w == len(c.words)/8-1 && n%64 != 0 && word>>(n%64) != 0 {
					return fmt.Errorf("column %q: bits past the last node", c.name)
				}
				r += uint64(bits.OnesCount64(word))
			}
			if r != c.count {
				return fmt.Errorf("column %q: %d bits set for %d values", c.name, r, c.count)
			}
		} else {
			for j := uint64(0); j < c.count; j++ {
				node := le.Uint32(c.nodes[4*j:])
				if node >= uint32(n) || j > 0 && node <= le.Uint32(c.nodes[4*j-4:]) {
					return fmt.Errorf("column %q: node list out of order at %d", c.name, j)
				}
			}
		}
		mono := func(offs []byte, cnt, limit uint64) error {
			if le.Uint64(offs) != 0 || le.Uint64(offs[8*cnt:]) != limit {
				return fmt.Errorf("column %q: offsets do not span the data", c.name)
			}
			for j := uint64(0); j < cnt; j++ {
				if le.Uint64(offs[8*j:]) > le.Uint64(offs[8*j+8:]) {
					return fmt.Errorf("column %q: offsets decrease at %d", c.name, j)
				}
			}
			return nil
		}
		switch c.kind {
		case KindString:
			if err := mono(c.offs, c.count, uint64(len(c.blob))); err != nil {
				return err
			}
		case KindStringList:
			nitems := uint64(len(c.items)/8 - 1)
			if err := mono(c.offs, c.count, nitems); err != nil {
				return err
			}
			if err := mono(c.items, nitems, uint64(len(c.blob))); err != nil {
				return err
			}
		}
		for r := uint64(0); r < c.count; r++ {
			v, ok := c.value(r)
			if ok {
				ok = validateValue(v) == nil
			}
			if !ok {
				return fmt.Errorf("column %q: value %d is invalid", c.name, r)
			}
		}
	}
	return nil
}

// colMatcher compiles f against a segment's columns: each field operator
// is bound once to the columns of its field, so evaluating a record reads
// those columns only (no name lookup, no allocation for fixed-width kinds;
// strings are compared in place).
func colMatcher(f *Filter, cols []column) func(node uint32) bool {
	switch f.op {
	case opEq, opNe, opIn, opRange, opExists:
		lo := sort.Search(len(cols), func(i int) bool { return cols[i].name >= f.field })
		hi := lo
		for hi < len(cols) && cols[hi].name == f.field {
			hi++
		}
		cs := cols[lo:hi]
		if len(cs) == 0 {
			no := f.leaf(Value{}, false)
			return func(uint32) bool { return no }
		}
		// Eq/Ne/In of strings on a list column (tags) test membership
		// in place instead of building the list.
		strVals := f.op == opEq || f.op == opNe || f.op == opIn
		for _, v := range f.values {
			strVals = strVals && v.kind == KindString
		}
		return func(node uint32) bool {
			for i := range cs {
				r, ok := cs[i].rank(node)
				if !ok {
					continue
				}
				if strVals && cs[i].kind == KindStringList {
					hit := false
					for _, w := range f.values {
						h, ok := cs[i].listHas(r, w.s)
						if !ok {
							return f.leaf(Value{}, false)
						}
						if hit = h; hit {
							break
						}
					}
					return hit == (f.op != opNe)
				}
				v, ok := cs[i].valueInPlace(r)
				return f.leaf(v, ok) // damaged values count as absent
			}
			return f.leaf(Value{}, false)
		}
	case opAnd, opOr:
		ms := make([]func(uint32) bool, len(f.children))
		for i, c := range f.children {
			ms[i] = colMatcher(c, cols)
		}
		if f.op == opAnd {
			return func(node uint32) bool {
				for _, m := range ms {
					if !m(node) {
						return false
					}
				}
				return true
			}
		}
		return func(node uint32) bool {
			for _, m := range ms {
				if m(node) {
					return true
				}
			}
			return false
		}
	case opNot:
		m := colMatcher(f.children[0], cols)
		return func(node uint32) bool { return !m(node) }
	}
	return func(uint32) bool { return false }
}

// valueInPlace is value with strings pointing into the mapped file: only
// for evaluating a filter, which keeps nothing.
func (c *column) valueInPlace(r uint64) (Value, bool) {
	if c.kind != KindString {
		return c.value(r)
	}
	a, b := le.Uint64(c.offs[8*r:]), le.Uint64(c.offs[8*r+8:])
	s := slice(c.blob, a, b)
	if s == nil && a != b {
		return Value{}, false
	}
	return Value{kind: KindString, s: unsafe.String(unsafe.SliceData(s), len(s))}, true
}

// listHas reports whether the r-th list of a list column holds want; ok is
// false for damaged offsets (as value).
func (c *column) listHas(r uint64, want string) (found, ok bool) {
	lo, hi := le.Uint64(c.offs[8*r:]), le.Uint64(c.offs[8*r+8:])
	if lo > hi || hi > uint64(len(c.items)/8-1) || hi-lo > MaxMetaBytes {
		return false, false
	}
	for j := lo; j < hi; j++ {
		a, b := le.Uint64(c.items[8*j:]), le.Uint64(c.items[8*j+8:])
		s := slice(c.blob, a, b)
		if s == nil && a != b {
			return false, false
		}
		if !found && string(s) == want {
			found = true
		}
	}
	return found, true
}
