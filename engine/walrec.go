package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/engramdb/engram/quant"
)

// WAL payloads: one op byte, then the op's fields (codec.go encoding;
// docs/format/walrecords.md is the specification, with the KV key map).
// Every op is applied by the same code live and at replay, and carries
// resolved values (absolute access counts, the ids a filter matched), so
// replay reproduces exactly what was acknowledged.
const (
	walCreate   byte = iota + 1 // name, dim, metric, fingerprint
	walDrop                     // name
	walUpsert                   // name, n, records
	walDelete                   // name, n, ids
	walTouch                    // name, at, n, (id, count)
	walKVPut                    // key, value
	walKVDelete                 // key
)

type walOp struct {
	op      byte
	coll    string
	cfg     CollectionConfig
	records []Record
	ids     []string
	counts  []uint64
	at      int64
	key     string
	value   []byte
}

func encodeOp(o *walOp) []byte {
	var e enc
	e.u8(o.op)
	switch o.op {
	case walCreate:
		e.str(o.cfg.Name)
		e.uvarint(uint64(o.cfg.Dim))
		e.u8(byte(o.cfg.Metric))
		e.str(o.cfg.Fingerprint)
	case walDrop:
		e.str(o.coll)
	case walUpsert:
		// One array for the whole batch: grown by appends, a batch of
		// 1024-d records was copied about twice over on the way.
		size := len(o.coll) + 16
		for i := range o.records {
			r := &o.records[i]
			size += len(r.ID) + 4*len(r.Vector) + len(r.Text) + 64 + 32*len(r.Meta)
		}
		e.b = slices.Grow(e.b, size)
		e.str(o.coll)
		e.uvarint(uint64(len(o.records)))
		for i := range o.records {
			appendRecord(&e, &o.records[i])
		}
	case walDelete:
		e.str(o.coll)
		e.uvarint(uint64(len(o.ids)))
		for _, id := range o.ids {
			e.str(id)
		}
	case walTouch:
		e.str(o.coll)
		e.varint(o.at)
		e.uvarint(uint64(len(o.ids)))
		for i, id := range o.ids {
			e.str(id)
			e.uvarint(o.counts[i])
		}
	case walKVPut:
		e.str(o.key)
		e.bytes(o.value)
	case walKVDelete:
		e.str(o.key)
	}
	return e.b
}

func decodeOp(b []byte) (*walOp, error) {
	d := dec{b: b}
	o := &walOp{op: d.u8()}
	switch o.op {
	case walCreate:
		o.cfg = CollectionConfig{Name: d.str(), Dim: d.count(MaxDim, 0), Metric: quant.Metric(d.u8()), Fingerprint: d.str()}
	case walDrop:
		o.coll = d.str()
	case walUpsert:
		o.coll = d.str()
		n := d.count(MaxBatchRecords, 8)
		o.records = make([]Record, n)
		for i := range o.records {
			o.records[i] = readRecord(&d)
		}
	case walDelete:
		o.coll = d.str()
		o.ids = make([]string, d.count(1<<24, 1))
		for i := range o.ids {
			o.ids[i] = d.str()
		}
	case walTouch:
		o.coll = d.str()
		o.at = d.varint()
		n := d.count(1<<24, 2)
		o.ids, o.counts = make([]string, n), make([]uint64, n)
		for i := range o.ids {
			o.ids[i] = d.str()
			o.counts[i] = d.uvarint()
		}
	case walKVPut:
		o.key = d.str()
		o.value = bytes.Clone(d.bytes()) // the WAL reuses its buffer
	case walKVDelete:
		o.key = d.str()
	default:
		return nil, fmt.Errorf("unknown WAL op %d", o.op)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes in WAL op %d", len(d.b), o.op)
	}
	return o, nil
}

// apply performs a logged op on the in-memory state. The caller holds
// d.writeMu. Only invariant violations (a log written by a buggy or
// different build) make it fail.
func (d *DB) apply(o *walOp) error {
	switch o.op {
	case walCreate:
		if c, ok := d.colls[o.cfg.Name]; ok {
			if c.cfg == o.cfg {
				return nil
			}
			if !d.lenient {
				return fmt.Errorf("create %q: exists with another config", o.cfg.Name)
			}
			// Rebuilt from segments: those of the other config belong to
			// a collection this log dropped before it was created again.
			if err := d.apply(&walOp{op: walDrop, coll: o.cfg.Name}); err != nil {
				return err
			}
		}
		c, err := newCollection(d, o.cfg)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.colls[o.cfg.Name] = c
		d.mu.Unlock()
	case walDrop:
		c, ok := d.colls[o.coll]
		if !ok {
			return nil
		}
		d.mu.Lock()
		delete(d.colls, o.coll)
		d.mu.Unlock()
		c.mu.Lock()
		c.dropped = true
		for _, s := range c.brokenMan.segs {
			d.pendingNew = append(d.pendingNew, s.file)
		}
		for _, s := range c.segs {
			d.pendingNew = append(d.pendingNew, s.file)
			s.close()
		}
		c.segs = nil
		d.memBytes -= c.mem.size
		c.mu.Unlock()
	case walKVPut:
		d.mu.Lock()
		d.kv[o.key] = o.value
		d.mu.Unlock()
	case walKVDelete:
		d.mu.Lock()
		delete(d.kv, o.key)
		d.mu.Unlock()
	case walUpsert, walDelete, walTouch:
		c, ok := d.colls[o.coll]
		if !ok && d.lenient {
			d.replaySkipped++
			return nil
		}
		if !ok {
			return fmt.Errorf("op %d on unknown collection %q", o.op, o.coll)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		before := c.mem.size
		defer func() { d.memBytes += c.mem.size - before }()
		switch o.op {
		case walUpsert:
			for i := range o.records {
				r := o.records[i]
				c.removeLocked(r.ID)
				vec := r.Vector
				if err := c.mem.insert(r, vec); err != nil {
					return err
				}
			}
		case walDelete:
			for _, id := range o.ids {
				c.removeLocked(id)
			}
		case walTouch:
			for i, id := range o.ids {
				c.setAccessLocked(id, o.counts[i], o.at)
			}
		}
	default:
		return fmt.Errorf("unknown WAL op %d", o.op)
	}
	return nil
}
