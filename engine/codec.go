package engine

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"sort"
	"time"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// errShort is what a decoder reports when its input ends early or a length
// field points past the end; callers wrap it with the file that was read.
var errShort = errors.New("truncated or malformed encoding")

// enc appends little-endian and varint fields to a byte slice.
type enc struct{ b []byte }

func (e *enc) u8(v byte)        { e.b = append(e.b, v) }
func (e *enc) u32(v uint32)     { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)     { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) f32s(v []float32) {
	e.b = slices.Grow(e.b, 4*len(v))
	for _, x := range v {
		e.u32(math.Float32bits(x))
	}
}

// dec reads what enc wrote. The first error sticks; every read after it
// returns zero values, so callers check err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() { d.err = errShort; d.b = nil }

func (d *dec) u8() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u32() uint32 {
	if len(d.b) < 4 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) u64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must not exceed max, nor the remaining bytes
// when each element takes at least minSize bytes; it guards allocations
// against hostile lengths.
func (d *dec) count(max, minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(max) || (minSize > 0 && n > uint64(len(d.b)/minSize)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *dec) raw(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) bytes() []byte { return d.raw(d.count(math.MaxInt32, 1)) }
func (d *dec) str() string   { return string(d.bytes()) }

func (d *dec) f32s(n int) []float32 {
	p := d.raw(4 * n)
	if p == nil {
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return v
}

// Metadata encoding: count, then per key (sorted, for deterministic bytes):
// key, kind, payload.
func appendMeta(e *enc, m Metadata) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		v := m[k]
		e.str(k)
		e.u8(byte(v.kind))
		switch v.kind {
		case KindString:
			e.str(v.s)
		case KindInt, KindBool, KindTime:
			e.varint(v.n)
		case KindFloat:
			e.u64(math.Float64bits(v.f))
		case KindStringList:
			e.uvarint(uint64(len(v.list)))
			for _, s := range v.list {
				e.str(s)
			}
		}
	}
}

func readMeta(d *dec) Metadata {
	n := d.count(MaxMetaKeys, 2)
	if n == 0 {
		return nil
	}
	m := make(Metadata, n)
	for range n {
		k := d.str()
		v := Value{kind: Kind(d.u8())}
		switch v.kind {
		case KindString:
			v.s = d.str()
		case KindInt, KindBool, KindTime:
			v.n = d.varint()
		case KindFloat:
			v.f = math.Float64frombits(d.u64())
		case KindStringList:
			c := d.count(MaxMetaBytes, 1)
			v.list = make([]string, c)
			for i := range v.list {
				v.list[i] = d.str()
			}
		default:
			d.fail()
		}
		if _, dup := m[k]; dup {
			d.fail()
		}
		if d.err != nil {
			return nil
		}
		m[k] = v
	}
	return m
}

// lookupMeta finds one key in an encoded metadata blob without building the
// map; filters on segment records evaluate through it.
func lookupMeta(b []byte, key string) (Value, bool) {
	d := dec{b: b}
	n := d.count(MaxMetaKeys, 2)
	for range n {
		k := d.bytes()
		kind := Kind(d.u8())
		match := string(k) == key
		v := Value{kind: kind}
		switch kind {
		case KindString:
			s := d.bytes()
			if match {
				v.s = string(s)
			}
		case KindInt, KindBool, KindTime:
			v.n = d.varint()
		case KindFloat:
			v.f = math.Float64frombits(d.u64())
		case KindStringList:
			c := d.count(MaxMetaBytes, 1)
			for range c {
				s := d.bytes()
				if match {
					v.list = append(v.list, string(s))
				}
			}
		default:
			return Value{}, false
		}
		if d.err != nil {
			return Value{}, false
		}
		if match {
			return v, true
		}
	}
	return Value{}, false
}

func cloneMeta(m Metadata) Metadata {
	if m == nil {
		return nil
	}
	c := make(Metadata, len(m))
	for k, v := range m {
		v.list = slices.Clone(v.list)
		c[k] = v
	}
	return c
}

// zeroTime encodes the zero time.Time (the Unix epoch is a valid time).
const zeroTime = math.MinInt64

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
