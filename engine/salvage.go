package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"path/filepath"
	"slices"
	"time"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/wal"
)

// Salvage: what Repair reads back from a damaged segment file. Derived
// sections (the graph's codes and lists, keyword and namespace postings,
// the sorted id table, column ranks, record checksums) are never trusted
// for anything but speed and are rebuilt; a record is kept when its
// primary data (ID, vector, text, metadata, times) is proven intact: by
// its record checksum (version 3), or by the checksums of every primary
// section (older versions). Format of the quarantine file:
// docs/format/quarantine.md.

// LostRecord is a record Repair could not keep: part of its primary data
// was destroyed.
type LostRecord struct {
	Segment string `json:"segment"` // the damaged segment file
	Node    uint32 `json:"node"`    // its node in that file
	// ID is the record's ID as read; IDKnown is false when the id section
	// itself is damaged, so that the bytes read may not be the ID.
	ID      string `json:"id"`
	IDKnown bool   `json:"id_known"`
}

// salvaged is the outcome of salvageSegment.
type salvaged struct {
	path    string
	damaged []sectionKind // sections failing their checksums or unreadable
	intact  []Record      // with Vector (stored form)
	lost    []LostRecord
	export  []quarantined // what is readable of the lost records
	// unknown counts live records that could not even be located (the
	// container is gone): their IDs are unknown.
	unknown int
	lsn     uint64
}

// quarantined is one line of a quarantine file.
type quarantined struct {
	Segment        string                     `json:"segment"`
	Node           uint32                     `json:"node"`
	ID             string                     `json:"id"`
	DamagedSection []string                   `json:"damaged_sections"`
	Readable       []string                   `json:"readable"`
	Text           string                     `json:"text,omitempty"`
	Meta           map[string]json.RawMessage `json:"meta,omitempty"`
	Vector         []float32                  `json:"vector,omitempty"`
	Created        string                     `json:"created,omitempty"`
	Updated        string                     `json:"updated,omitempty"`
	LastAccess     string                     `json:"last_access,omitempty"`
	AccessCount    uint64                     `json:"access_count"`
}

// findContainer locates the last intact trailer and section table in b
// when the file's end is not one (garbage appended after it).
func findContainer(b []byte) (map[sectionKind][]byte, []sectionEntry, error) {
	end := len(b)
	for tries := 0; tries < 1024; tries++ {
		i := bytes.LastIndex(b[:end], []byte(segMagic))
		if i <= 8 {
			break
		}
		if secs, entries, err := parseContainer(b[:i+len(segMagic)]); err == nil {
			return secs, entries, nil
		}
		end = i + len(segMagic) - 1
	}
	return nil, nil, errors.New("no intact section table")
}

// locateSections finds the sections of a file whose section table or
// trailer is damaged (parseContainer refuses it and no intact container
// ends before it) from what the sections prove themselves, taking the
// file's length as right (its last 24 bytes are the trailer, and the table
// ends where the trailer begins):
//
//   - the number of entries is the one given by the trailer's length or
//     offset field, or by the count at the table's head, that the most
//     entries bear out;
//   - an entry is proven when the bytes at its offset and length match
//     its checksum; one whose offset or length is damaged is searched for
//     by its checksum where the writer's layout puts its section: at the
//     first multiple of 64 after the section before it, ending less than
//     64 bytes before the next one (the last: less than 8 before the
//     table);
//   - a kind that is not one of the version's or is claimed twice is the
//     one the writer puts at that place (sectionOrder);
//   - an entry whose checksum field is what was damaged is located by the
//     layout and proven by the table's checksum in the trailer (intact
//     when the damage is in the table): the table rebuilt from the
//     located sections must hash to it.
//
// Sections that are located but not proven are listed in unproven; the
// caller reads them as damaged (a record in them is kept only when its
// record checksum matches). ok is false when no entry is proven. Every
// offset is bounds-checked before use: damaged bytes never panic. It costs
// about one checksum pass over the file, plus one per damaged entry over
// its section.
func locateSections(b []byte, n int) (secs map[sectionKind][]byte, entries []sectionEntry, unproven map[sectionKind]bool, ok bool) {
	const first = segAlign // the first section follows the 12-byte header
	if len(b) < first+4+segEntrySize+segTrailer {
		return nil, nil, nil, false
	}
	end := uint64(len(b) - segTrailer)
	maxSlots := int(min(maxSections, (end-first-4)/segEntrySize))
	// Slot j (from 1) is the entry j·32 bytes before the trailer.
	slot := func(j int) sectionEntry {
		p := b[end-uint64(j)*segEntrySize:]
		return sectionEntry{kind: sectionKind(le.Uint32(p)), off: le.Uint64(p[8:]), len: le.Uint64(p[16:]), crc: le.Uint32(p[24:])}
	}
	holds := func(e sectionEntry, limit uint64) bool {
		return e.off >= first && e.off%segAlign == 0 && e.len > 0 && e.off <= limit && e.len <= limit-e.off &&
			crc(b[e.off:e.off+e.len]) == e.crc
	}
	proven := make([]bool, maxSlots+1)
	for j := 1; j <= maxSlots; j++ {
		proven[j] = holds(slot(j), end)
	}
	// The entry count: each field that gives one votes for it.
	votes := make([]int, maxSlots+1)
	tr := b[end:]
	if tl := uint64(le.Uint32(tr[8:])); tl > 4 && (tl-4)%segEntrySize == 0 && (tl-4)/segEntrySize <= uint64(maxSlots) {
		votes[(tl-4)/segEntrySize]++
	}
	if to := le.Uint64(tr); to < end && end-to > 4 && (end-to-4)%segEntrySize == 0 && (end-to-4)/segEntrySize <= uint64(maxSlots) {
		votes[(end-to-4)/segEntrySize]++
	}
	for c := 1; c <= maxSlots; c++ {
		if le.Uint32(b[end-4-uint64(c)*segEntrySize:]) == uint32(c) {
			votes[c]++
		}
	}
	count, score := 0, 0
	for c := 1; c <= maxSlots; c++ {
		if votes[c] == 0 {
			continue
		}
		s, tableOff := 0, end-4-uint64(c)*segEntrySize
		for j := 1; j <= c; j++ {
			if e := slot(j); proven[j] && e.off+e.len <= tableOff {
				s++
			}
		}
		if s > score || s == score && s > 0 && votes[c] > votes[count] {
			count, score = c, s
		}
	}
	if score == 0 {
		return nil, nil, nil, false
	}
	tableOff := end - 4 - uint64(count)*segEntrySize
	es := make([]sectionEntry, count)
	known := make([]bool, count) // proven by its own checksum
	var kinds []section
	for i := range es {
		es[i] = slot(count - i)
		known[i] = proven[count-i] && es[i].off+es[i].len <= tableOff
		if known[i] {
			kinds = append(kinds, section{kind: es[i].kind})
		}
	}
	version := le.Uint32(b[8:])
	if requiredSections[version] == nil {
		version = sectionsVersion(kinds)
	}
	resolveKinds(es, sectionOrder(version))

	// Place the entries not proven, in table order (= file order).
	type open struct {
		i    int
		lens []uint64 // the lengths the layout leaves open
	}
	var uncertain []open
	drop := make([]bool, count)
	prevEnd := uint64(first)
	for i := range es {
		if known[i] {
			prevEnd = (es[i].off + es[i].len + segAlign - 1) / segAlign * segAlign
			continue
		}
		e := es[i]
		if prevEnd >= tableOff {
			drop[i] = true
			continue
		}
		// Where the next section starts: proven, the table, or (a hint
		// only) the next entry's own offset.
		nextOff, slack, sure := tableOff, uint64(8), true // the table is 8-aligned
		if i+1 < count {
			nextOff, slack, sure = 0, segAlign, known[i+1]
			if nx := es[i+1]; sure || nx.off%segAlign == 0 && nx.off > prevEnd && nx.off <= tableOff {
				nextOff = nx.off
			}
		}
		var lens []uint64 // the lengths that end where the next starts
		if nextOff > prevEnd {
			for l := nextOff - prevEnd; l > 0 && l+slack > nextOff-prevEnd; l-- {
				lens = append(lens, l) // longest first
			}
		}
		ownLen := e.len > 0 && e.len <= tableOff-prevEnd
		if !sure && ownLen && !slices.Contains(lens, e.len) {
			// Its own length over an unproven next offset: one of them is
			// damaged, and a single damage to the table leaves at most
			// one field of these two entries other than this checksum.
			lens = []uint64{e.len}
		}
		// Its checksum, at a length the layout allows (its offset or
		// length was damaged) or at its own length (its offset was).
		found := false
		if ownLen && crc(b[prevEnd:prevEnd+e.len]) == e.crc {
			es[i].off, found = prevEnd, true
		}
		if len(lens) > 0 && !found {
			short := lens[len(lens)-1]
			h := crc(b[prevEnd : prevEnd+short])
			for l := short; ; l++ {
				if h == e.crc {
					es[i].off, es[i].len, found = prevEnd, l, true
					break
				}
				if l == lens[0] {
					break
				}
				h = crc32.Update(h, castagnoli, b[prevEnd+l:prevEnd+l+1])
			}
		}
		if found {
			known[i] = true
			prevEnd = (es[i].off + es[i].len + segAlign - 1) / segAlign * segAlign
			continue
		}
		if len(lens) == 0 {
			drop[i] = true
			continue
		}
		// Its checksum field is damaged: located, proven below if the
		// table checksum allows. Its own length if the layout allows it,
		// else the longest that parses as its kind.
		es[i].off, es[i].len = prevEnd, lens[0]
		if slices.Contains(lens, e.len) {
			es[i].len = e.len
		} else {
			for _, l := range lens {
				if sectionFits(e.kind, b[prevEnd:prevEnd+l], n, version) {
					es[i].len = l
					break
				}
			}
		}
		uncertain = append(uncertain, open{i, lens})
		prevEnd = (es[i].off + es[i].len + segAlign - 1) / segAlign * segAlign
	}
	if len(uncertain) > 0 && !slices.Contains(drop, true) {
		// The table as the writer wrote it, with each uncertain entry's
		// checksum taken from its section, against the trailer's.
		table := make([]byte, 4+count*segEntrySize)
		le.PutUint32(table, uint32(count))
		put := func(i int, e sectionEntry) {
			p := table[4+i*segEntrySize:]
			le.PutUint32(p, uint32(e.kind))
			le.PutUint64(p[8:], e.off)
			le.PutUint64(p[16:], e.len)
			le.PutUint32(p[24:], e.crc)
		}
		sums := make([]uint32, count)
		for i, e := range es {
			if !known[i] {
				e.crc = crc(b[e.off : e.off+e.len])
				sums[i] = e.crc
			}
			put(i, e)
		}
		want := le.Uint32(tr[12:])
		switch {
		case crc(table) == want:
			for _, u := range uncertain {
				es[u.i].crc, known[u.i] = sums[u.i], true
			}
		case len(uncertain) == 1:
			// Which of the lengths the padding leaves open is its own.
			u := uncertain[0]
			for _, l := range u.lens {
				e := es[u.i]
				e.len = l
				e.crc = crc(b[e.off : e.off+e.len])
				put(u.i, e)
				if crc(table) == want {
					es[u.i], known[u.i] = e, true
					break
				}
			}
		}
	}
	secs, unproven = map[sectionKind][]byte{}, map[sectionKind]bool{}
	for _, proof := range []bool{true, false} { // a proven section wins a kind claimed twice
		for i, e := range es {
			if _, dup := secs[e.kind]; dup || drop[i] || known[i] != proof {
				continue
			}
			secs[e.kind] = b[e.off : e.off+e.len : e.off+e.len]
			entries = append(entries, e)
			if !proof {
				unproven[e.kind] = true
			}
		}
	}
	return secs, entries, unproven, true
}

// resolveKinds gives an entry whose kind is not one of order's, or is
// claimed twice, the kind its place in a table of order's length holds;
// else a single such entry the single kind of order no entry claims.
func resolveKinds(es []sectionEntry, order []sectionKind) {
	want := map[sectionKind]bool{}
	for _, k := range order {
		want[k] = true
	}
	claims := map[sectionKind]int{}
	for _, e := range es {
		claims[e.kind]++
	}
	odd := func(k sectionKind) bool { return !want[k] || claims[k] > 1 }
	if len(es) == len(order) {
		for i := range es {
			if k := es[i].kind; k != order[i] && odd(k) && claims[order[i]] == 0 {
				claims[k]--
				es[i].kind = order[i]
				claims[order[i]]++
			}
		}
		return
	}
	var missing []sectionKind
	for _, k := range order {
		if claims[k] == 0 {
			missing = append(missing, k)
		}
	}
	var strays []int
	for i, e := range es {
		if !want[e.kind] {
			strays = append(strays, i)
		}
	}
	if len(missing) == 1 && len(strays) == 1 {
		es[strays[0]].kind = missing[0]
	}
}

// sectionOrder lists the sections of a version in the order the writer
// puts them in the file and its table (buildSectionsVersion; every build
// has written this order).
func sectionOrder(version uint32) []sectionKind {
	meta := secColumns
	if version == segVersionV1 {
		meta = secMeta
	}
	order := []sectionKind{secInfo, secGraph, secIDs, meta, secText, secTimes, secKeyword, secNamespace}
	if version >= segVersionV3 {
		order = append(order, secSums)
	}
	if version >= segVersion {
		order = append(order, secChunks)
	}
	return order
}

// sectionFits reports whether sec parses as a section of kind k for n
// nodes: of the lengths the padding after a section leaves open, the size
// fields of most kinds accept only their own. Kinds without a parser here
// (keyword, namespace, chunks: derived, rebuilt by Repair) fit any.
func sectionFits(k sectionKind, sec []byte, n int, version uint32) bool {
	var err error
	switch k {
	case secInfo:
		_, err = parseInfo(sec, version)
	case secGraph:
		_, err = hnsw.OpenViewUnverified(sec)
	case secIDs:
		_, err = parseIDs(sec, n)
	case secMeta:
		_, err = parseRows(sec, n)
	case secText:
		_, err = parseTexts(sec, n)
	case secTimes:
		_, err = parseTimes(sec, n)
	case secColumns:
		_, err = parseColumns(sec, n)
	case secSums:
		_, err = parseSums(sec, n)
	}
	return err == nil
}

// salvageSegment reads the segment file of ms (a collection cfg) and
// sorts its live records into intact and lost. An error is returned only
// for I/O failures: damage of any extent is an outcome.
func salvageSegment(fsys FS, path string, cfg CollectionConfig, ms manifestSeg) (*salvaged, error) {
	// A sealed file is decrypted leniently: chunks that fail
	// authentication are zeros, so the sections they held fail their
	// checksums and are salvaged around like any damage (a file whose key
	// a purge destroyed is empty: every record lost).
	b, err := readSegBytes(fsys, path, true)
	if err != nil {
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return salvageBytes(nil, path, cfg, ms), nil
		}
		return nil, fmt.Errorf("engine: repair: %w", err)
	}
	defer b.close()
	// Everything salvaged is copied out of the mapping (colMeta and the
	// text decoder copy; vectors are cloned).
	return salvageBytes(b.data, path, cfg, ms), nil
}

// salvageBytes is salvageSegment over the file's bytes b.
func salvageBytes(b []byte, path string, cfg CollectionConfig, ms manifestSeg) *salvaged {
	sv := &salvaged{path: path}
	n := int(ms.count)
	liveCount := n - len(ms.deleted)
	secs, entries, err := parseContainer(b)
	if err != nil {
		secs, entries, err = findContainer(b)
	}
	var unproven map[sectionKind]bool
	if err != nil {
		var ok bool
		if secs, entries, unproven, ok = locateSections(b, n); ok {
			err = nil
		}
	}
	if err != nil {
		// Nothing can be located: every live record is lost, unnamed.
		sv.damaged = []sectionKind{secInfo, secGraph, secIDs, secText, secTimes, secColumns}
		sv.unknown = liveCount
		return sv
	}
	bad := map[sectionKind]bool{}
	for _, e := range entries {
		if unproven[e.kind] || crc(secs[e.kind]) != e.crc {
			bad[e.kind] = true
		}
	}
	kinds := make([]section, 0, len(entries))
	for _, e := range entries {
		kinds = append(kinds, section{kind: e.kind})
	}
	version := sectionsVersion(kinds) // by its sections: the version field may be what is damaged
	dead := make([]uint64, (n+63)/64)
	markDead := func(node uint32) {
		if int(node) < n {
			dead[node>>6] |= 1 << (node & 63)
		}
	}
	for _, node := range ms.deleted {
		markDead(node)
	}
	if !bad[secInfo] {
		if h, err := parseInfo(secs[secInfo], version); err == nil {
			for _, node := range h.dead {
				markDead(node)
			}
			sv.lsn = uint64(h.lsn)
		}
	}

	// Vectors: through the View when its header reads, else where the
	// layout puts them; verified by the vectors checksum or per record.
	var vectors func(node uint32) []float32
	vecOK := false
	if g := secs[secGraph]; g != nil {
		if v, err := hnsw.OpenViewUnverified(g); err == nil && v.Len() == n && v.Dim() == cfg.Dim {
			vecOK = !bad[secGraph] || v.VerifyVectors() == nil
			vectors = v.Vector
		} else if all, err := hnsw.RecoverVectors(g, n, cfg.Dim); err == nil {
			vectors = func(node uint32) []float32 { return all[int(node)*cfg.Dim : int(node+1)*cfg.Dim] }
		}
	}
	if !vecOK {
		sv.damaged = append(sv.damaged, secGraph)
	}

	ids, idErr := parseIDs(secs[secIDs], n)
	texts, textErr := parseTexts(secs[secText], n)
	times, timeErr := parseTimes(secs[secTimes], n)
	var cols []column
	var rows *rowSection
	var metaErr error
	metaKind := secColumns
	if version == segVersionV1 {
		metaKind = secMeta
		rows, metaErr = parseRows(secs[secMeta], n)
	} else if cols, metaErr = parseColumns(secs[secColumns], n); metaErr == nil {
		for i := range cols {
			cols[i].recomputeRanks() // derived: never trusted in a damaged file
		}
	}
	primary := map[sectionKind]bool{
		secIDs: idErr == nil && !bad[secIDs], secText: textErr == nil && !bad[secText],
		secTimes: timeErr == nil && !bad[secTimes], metaKind: metaErr == nil && !bad[metaKind],
	}
	for _, k := range []sectionKind{secIDs, secText, secTimes, metaKind} {
		if !primary[k] {
			sv.damaged = append(sv.damaged, k)
		}
	}
	allPrimary := vecOK && primary[secIDs] && primary[secText] && primary[secTimes] && primary[metaKind]
	var sums *sumSection
	if version >= segVersionV3 && !bad[secSums] {
		if s, err := parseSums(secs[secSums], n); err == nil {
			sums = &s
		}
	}
	for _, k := range []sectionKind{secKeyword, secNamespace, secSums, secInfo} {
		if bad[k] {
			sv.damaged = append(sv.damaged, k)
		}
	}
	slices.Sort(sv.damaged)
	sv.damaged = slices.Compact(sv.damaged)
	if idErr == nil && !bad[secIDs] && version < segVersionV3 {
		for _, node := range ids.deadNodes() {
			markDead(node)
		}
	}

	blocks := map[uint64][]byte{}
	textOf := func(node uint32) (string, bool) {
		if textErr != nil {
			return "", false
		}
		blk, off, ln := texts.where(node)
		if ln == 0 {
			return "", true
		}
		raw, ok := blocks[blk]
		if !ok {
			comp := texts.block(blk)
			if comp != nil {
				raw, _ = zstdDecoder().DecodeAll(comp, nil)
			}
			blocks[blk] = raw
		}
		t := slice(raw, off, off+ln)
		return string(t), t != nil
	}
	for node := uint32(0); node < uint32(n); node++ {
		if dead[node>>6]&(1<<(node&63)) != 0 {
			continue
		}
		r := Record{}
		readable := []string{}
		ok := true
		if idErr == nil {
			id := ids.id(node)
			r.ID = string(id)
			ok = ok && id != nil && validateID(r.ID) == nil
		} else {
			ok = false
		}
		if vectors != nil {
			if v := vectors(node); len(v) == cfg.Dim {
				r.Vector = slices.Clone(v)
			}
		}
		if r.Vector == nil {
			ok = false
		}
		text, tok := textOf(node)
		r.Text, ok = text, ok && tok
		switch {
		case rows != nil:
			if mb := rows.row(node); len(mb) > 0 {
				d := dec{b: mb}
				r.Meta = readMeta(&d)
				ok = ok && d.err == nil
			}
		case cols != nil:
			m, err := colMeta(cols, node)
			r.Meta, ok = m, ok && err == nil
		default:
			ok = false
		}
		if timeErr == nil {
			r.Created = fromUnixNano(int64(at64(times.created, node)))
			r.Updated = fromUnixNano(int64(at64(times.updated, node)))
			r.LastAccess = fromUnixNano(int64(at64(times.lastAccess, node)))
			r.AccessCount = at64(times.count, node)
		} else {
			ok = false
		}
		var intact bool
		if sums != nil {
			intact = ok && recordSum(&r, r.Vector) == sums.at(node)
		} else {
			intact = ok && allPrimary
		}
		if intact {
			sv.intact = append(sv.intact, r)
			continue
		}
		for _, p := range []struct {
			name string
			ok   bool
		}{{"id", primary[secIDs]}, {"vector", vecOK}, {"text", primary[secText]}, {"meta", primary[metaKind]}, {"times", primary[secTimes]}} {
			if p.ok {
				readable = append(readable, p.name)
			}
		}
		sv.lost = append(sv.lost, LostRecord{Segment: path, Node: node, ID: r.ID, IDKnown: primary[secIDs]})
		sv.export = append(sv.export, exportRecord(path, node, &r, sv.damaged, readable))
	}
	return sv
}

// recomputeRanks rebuilds a bitmap column's rank table from its words.
func (c *column) recomputeRanks() {
	if c.words == nil {
		return
	}
	ranks := make([]byte, len(c.ranks))
	var r uint32
	for w := 0; 8*w+8 <= len(c.words) && 4*w+4 <= len(ranks); w++ {
		binary.LittleEndian.PutUint32(ranks[4*w:], r)
		r += uint32(bits.OnesCount64(le.Uint64(c.words[8*w:])))
	}
	c.ranks = ranks
}

func exportRecord(path string, node uint32, r *Record, damaged []sectionKind, readable []string) quarantined {
	q := quarantined{Segment: filepath.Base(path), Node: node, ID: r.ID, Readable: readable, Text: r.Text,
		Vector: r.Vector, AccessCount: r.AccessCount}
	for _, k := range damaged {
		q.DamagedSection = append(q.DamagedSection, k.String())
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	}
	q.Created, q.Updated, q.LastAccess = stamp(r.Created), stamp(r.Updated), stamp(r.LastAccess)
	if len(r.Meta) > 0 {
		q.Meta = map[string]json.RawMessage{}
		for k, v := range r.Meta {
			q.Meta[k] = valueJSON(v)
		}
	}
	return q
}

// valueJSON writes a metadata value as {"<kind>": value}.
func valueJSON(v Value) json.RawMessage {
	var x any
	switch v.kind {
	case KindString:
		x = map[string]string{"string": v.s}
	case KindInt:
		x = map[string]int64{"int": v.n}
	case KindFloat:
		x = map[string]any{"float": v.f}
	case KindBool:
		x = map[string]bool{"bool": v.n != 0}
	case KindTime:
		x = map[string]int64{"time_unix_ns": v.n}
	case KindStringList:
		x = map[string][]string{"list": v.list}
	}
	b, err := json.Marshal(x)
	if err != nil { // a non-finite float read from damaged bytes
		b, _ = json.Marshal(map[string]string{"unreadable": v.kind.String()})
	}
	return b
}

// lostSuffix names the quarantine file of a segment: seg/NAME.lost.
const lostSuffix = ".lost"

// writeQuarantine writes what is readable of the lost records of sv as
// JSON lines into seg/NAME.lost (atomically), returning its path; nothing
// when no record was lost by name.
func writeQuarantine(fsys FS, segDir string, sv *salvaged) (string, error) {
	if len(sv.export) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range sv.export {
		if err := enc.Encode(&sv.export[i]); err != nil {
			return "", err
		}
	}
	name := filepath.Base(sv.path) + lostSuffix
	if err := writeFileAtomic(fsys, segDir, name, buf.Bytes()); err != nil {
		return "", err
	}
	return filepath.Join(segDir, name), nil
}

// rebuildSegment writes the intact records of sv as a new segment file
// numbered file (superseding sv's), graph, postings and columns built
// afresh; it returns the manifest entry (nil when no record survived).
func rebuildSegment(opts *Options, segDir string, cfg CollectionConfig, sv *salvaged, old, file uint64) (*manifestSeg, error) {
	if len(sv.intact) == 0 {
		return nil, nil
	}
	mem, err := newMemtable(cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range sv.intact {
		if err := mem.insert(r, r.Vector); err != nil {
			return nil, fmt.Errorf("engine: repair: rebuild %s: %w", sv.path, err)
		}
	}
	w := segWrite{file: file, lsn: wal.LSN(sv.lsn), replaces: []uint64{old}}
	size, err := writeMemtableSegment(opts.FS, segDir, cfg, mem, opts.NamespaceField, w, 0)
	if err != nil {
		_ = opts.FS.Remove(filepath.Join(segDir, segName(file)))
		return nil, fmt.Errorf("engine: repair: rebuild %s: %w", sv.path, err)
	}
	return &manifestSeg{file: file, count: uint32(len(mem.recs)), size: uint64(size)}, nil
}

// knownSectionSet reports whether the file at path holds exactly the
// sections of a version this build knows (whatever its version field
// says): a damaged version field, not a file of a newer build.
func knownSectionSet(fsys FS, path string) bool {
	sf, err := openSegFileAnyVersion(fsys, path)
	if err != nil {
		return false
	}
	kinds := make([]section, 0, len(sf))
	for _, k := range sf {
		kinds = append(kinds, section{kind: k})
	}
	want := requiredSections[sectionsVersion(kinds)]
	if len(want) != len(sf) {
		return false
	}
	for _, k := range want {
		if !slices.Contains(sf, k) {
			return false
		}
	}
	return true
}

// openSegFileAnyVersion returns the section kinds of the file at path,
// ignoring its version field.
func openSegFileAnyVersion(fsys FS, path string) ([]sectionKind, error) {
	b, err := readSegBytes(fsys, path, false)
	if err != nil {
		return nil, err
	}
	defer b.close()
	_, entries, err := parseContainer(b.data)
	if err != nil {
		return nil, err
	}
	out := make([]sectionKind, len(entries))
	for i, e := range entries {
		out[i] = e.kind
	}
	return out, nil
}
