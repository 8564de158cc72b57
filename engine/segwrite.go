package engine

import (
	"io"
	"sort"
)

// buildSections returns the sections of a segment holding every node of m
// (dead nodes included: the caller records them as deleted), described by
// w.
func buildSections(cfg CollectionConfig, m *memtable, nsField string, w segWrite) []section {
	return buildSectionsVersion(cfg, m, nsField, writeVersion, w)
}

// buildSectionsVersion writes the current version or, for tests of the
// old formats, version 3 (no chunk checksums), 2 (no WAL position, no
// record checksums) or 1 (metadata as encoded rows).
func buildSectionsVersion(cfg CollectionConfig, m *memtable, nsField string, version uint32, sw segWrite) []section {
	n := len(m.recs)
	info := func(w io.Writer) error {
		var dead []uint32
		for i := range m.recs {
			if m.recs[i].dead {
				dead = append(dead, uint32(i))
			}
		}
		b := encodeInfo(cfg, n, dead, sw)
		if version < segVersionV3 {
			var e enc // the old layout ends after the fingerprint
			e.str(cfg.Name)
			e.uvarint(uint64(cfg.Dim))
			e.u8(byte(cfg.Metric))
			e.uvarint(uint64(n))
			e.str(cfg.Fingerprint)
			b = e.b
		}
		_, err := w.Write(b)
		return err
	}
	sums := func(w io.Writer) error {
		var e enc
		e.u64(uint64(n))
		var vec []float32
		for i := range m.recs {
			var sum uint32
			if !m.recs[i].dead {
				vec = m.idx.AppendVector(vec[:0], uint32(i))
				sum = recordSum(&m.recs[i].rec, vec)
			}
			e.u32(sum)
		}
		if n%2 == 1 {
			e.u32(0)
		}
		_, err := w.Write(e.b)
		return err
	}
	graph := func(w io.Writer) error { _, err := m.idx.WriteTo(w); return err }
	ids := func(w io.Writer) error {
		live := make([]uint32, 0, m.live)
		for i := range m.recs {
			if !m.recs[i].dead {
				live = append(live, uint32(i))
			}
		}
		sort.Slice(live, func(a, b int) bool { return m.recs[live[a]].rec.ID < m.recs[live[b]].rec.ID })
		var e enc
		e.u64(uint64(n))
		e.u64(uint64(len(live)))
		off := uint64(0)
		for i := range m.recs {
			e.u64(off)
			off += uint64(len(m.recs[i].rec.ID))
		}
		e.u64(off)
		for _, node := range live {
			e.u32(node)
		}
		if len(live)%2 == 1 {
			e.u32(0)
		}
		for i := range m.recs {
			e.b = append(e.b, m.recs[i].rec.ID...)
		}
		_, err := w.Write(e.b)
		return err
	}
	meta := func(w io.Writer) error {
		var blob enc
		var e enc
		e.u64(uint64(n))
		for i := range m.recs {
			e.u64(uint64(len(blob.b)))
			if len(m.recs[i].rec.Meta) > 0 {
				appendMeta(&blob, m.recs[i].rec.Meta)
			}
		}
		e.u64(uint64(len(blob.b)))
		if _, err := w.Write(e.b); err != nil {
			return err
		}
		_, err := w.Write(blob.b)
		return err
	}
	text := func(w io.Writer) error { return writeTexts(w, m) }
	times := func(w io.Writer) error {
		var e enc
		e.u64(uint64(n))
		for _, f := range []func(r *Record) uint64{
			func(r *Record) uint64 { return uint64(unixNano(r.Created)) },
			func(r *Record) uint64 { return uint64(unixNano(r.Updated)) },
			func(r *Record) uint64 { return uint64(unixNano(r.LastAccess)) },
			func(r *Record) uint64 { return r.AccessCount },
		} {
			for i := range m.recs {
				e.u64(f(&m.recs[i].rec))
			}
		}
		_, err := w.Write(e.b)
		return err
	}
	kw := func(w io.Writer) error { _, err := m.kw.WriteTo(w); return err }
	ns := func(w io.Writer) error {
		post := map[string][]uint32{}
		if nsField != "" {
			for i := range m.recs {
				if v, ok := m.recs[i].rec.Meta[nsField]; ok && v.kind == KindString && !m.recs[i].dead {
					post[v.s] = append(post[v.s], uint32(i))
				}
			}
		}
		var e enc
		e.str(nsField)
		keys := sortedKeys(post)
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			e.str(k)
			e.uvarint(uint64(len(post[k])))
			prev := uint32(0)
			for _, node := range post[k] {
				e.uvarint(uint64(node - prev))
				prev = node
			}
		}
		_, err := w.Write(e.b)
		return err
	}
	metaSec := section{secColumns, func(w io.Writer) error { _, err := w.Write(encodeColumns(m)); return err }}
	if version == segVersionV1 {
		metaSec = section{secMeta, meta}
	}
	secs := []section{
		{secInfo, info}, {secGraph, graph}, {secIDs, ids}, metaSec,
		{secText, text}, {secTimes, times}, {secKeyword, kw}, {secNamespace, ns},
	}
	if version >= segVersionV3 {
		secs = append(secs, section{secSums, sums})
	}
	if version >= segVersion {
		secs = append(secs, section{kind: secChunks}) // filled in by streamSegment
	}
	return secs
}

// writeTexts: n u64, nblocks u64, block offsets (nblocks+1) u64, per record
// (block u32, offset u32, length u32), padding to 8, compressed blocks.
func writeTexts(w io.Writer, m *memtable) error {
	n := len(m.recs)
	var blocks [][]byte
	var cur []byte
	loc := make([]uint32, 0, 3*n)
	for i := range m.recs {
		t := m.recs[i].rec.Text
		if m.recs[i].dead {
			t = ""
		}
		loc = append(loc, uint32(len(blocks)), uint32(len(cur)), uint32(len(t)))
		cur = append(cur, t...)
		if len(cur) >= textBlockSize {
			blocks = append(blocks, zstdEncoder().EncodeAll(cur, nil))
			cur = cur[:0]
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, zstdEncoder().EncodeAll(cur, nil))
	}
	var e enc
	e.u64(uint64(n))
	e.u64(uint64(len(blocks)))
	off := uint64(0)
	for _, b := range blocks {
		e.u64(off)
		off += uint64(len(b))
	}
	e.u64(off)
	for _, x := range loc {
		e.u32(x)
	}
	if len(loc)%2 == 1 {
		e.u32(0)
	}
	if _, err := w.Write(e.b); err != nil {
		return err
	}
	for _, b := range blocks {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
