package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// The corruption matrix: every file kind of a store (MANIFEST, each segment
// section, each field of a segment's section table and trailer, every
// byte of both with ENGRAM_MATRIX_EVERY_BYTE=1, a whole segment file, the
// WAL segment after the checkpoint and one wholly before it, LOCK, foreign
// files) times each kind of damage
// (flip a byte, truncate, zero, delete, append garbage), each asserting
// that Check (or Open) reports it, that no query answers from damaged
// bytes, that Repair leaves a store that opens with a clean Check, and that
// the records lost are at most those whose primary data was destroyed.
// `go test ./engine -run TestCorruptionMatrix -v` prints the table.

// matrixBase is a store written once and copied for every scenario.
type matrixBase struct {
	dir  string
	want map[string]Record // every live record, vectors as stored
	// WAL records after the checkpoint, one record each: ID and LSN.
	tailIDs  []string
	tailLSNs []wal.LSN
	tailSeg  string // the WAL segment holding them
	seg1     string // path of seg 1 in the base
	seg2IDs  []string
	oldWAL   string // a WAL segment wholly before the checkpoint ("" in the main base)
}

const matrixDim = 16

func matrixRecords(r *rand.Rand, from, n int) []Record {
	recs := mkRecords(r, matrixDim, from, n)
	for i := range recs {
		recs[i].Meta["u"] = Int(1_000_000_007 + int64(from+i)*7919) // a value found by its bytes
	}
	return recs
}

// buildMatrixBase: seg 1 holds r00000..r00299 (r00000..r00009 deleted
// afterwards, r00100 touched: manifest state), seg 2 r01000..r01099, and
// 20 records r02000..r02019 are only in the WAL after the checkpoint. With
// oldWAL, the log first rolls over a 8 MiB segment, which is put back after
// the flush that made it obsolete (as a crash between the manifest and the
// WAL truncation leaves it).
func buildMatrixBase(t *testing.T, oldWAL bool) *matrixBase {
	t.Helper()
	b := &matrixBase{dir: filepath.Join(t.TempDir(), "base"), want: map[string]Record{}}
	db := openT(t, b.dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "m", Dim: matrixDim, Metric: quant.Cosine, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	add := func(recs []Record) {
		t.Helper()
		if err := c.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			got, err := c.Get(rec.ID) // the vector as stored (normalized)
			if err != nil {
				t.Fatal(err)
			}
			rec.Vector = got.Vector
			b.want[rec.ID] = rec
		}
	}
	var saved []byte
	if oldWAL {
		// Incompressible texts roll the log over its 8 MiB segment.
		for i := range 9 {
			big := matrixRecords(r, 5000+i, 1)
			var sb strings.Builder
			for sb.Len() < 1<<20-64 {
				sb.WriteByte(byte('a' + r.IntN(26)))
			}
			big[0].Text = sb.String()
			add(big)
		}
		names, _ := os.ReadDir(filepath.Join(b.dir, "wal"))
		if len(names) < 2 {
			t.Fatalf("the WAL did not roll over: %v", names)
		}
		b.oldWAL = filepath.Join(b.dir, "wal", names[0].Name())
		if saved, err = os.ReadFile(b.oldWAL); err != nil {
			t.Fatal(err)
		}
	}
	add(matrixRecords(r, 0, 300))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete("r00000", "r00001", "r00002", "r00003", "r00004", "r00005", "r00006", "r00007", "r00008", "r00009"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		delete(b.want, fmt.Sprintf("r%05d", i))
	}
	if err := c.Touch([]string{"r00100"}, MaxTime); err != nil {
		t.Fatal(err)
	}
	seg2 := matrixRecords(r, 1000, 100)
	add(seg2)
	for _, rec := range seg2 {
		b.seg2IDs = append(b.seg2IDs, rec.ID)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		rec := matrixRecords(r, 2000+i, 1)
		add(rec)
		b.tailIDs = append(b.tailIDs, rec[0].ID)
		b.tailLSNs = append(b.tailLSNs, db.lastLSN)
	}
	b.tailSeg = filepath.Join(b.dir, "wal", fmt.Sprintf("%08d", b.tailLSNs[0].Segment()))
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if oldWAL {
		if err := os.WriteFile(b.oldWAL, saved, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.seg1 = filepath.Join(b.dir, "seg", segName(1))
	return b
}

// rel returns the path p of the base inside the copy dir.
func (b *matrixBase) rel(p, dir string) string {
	r, _ := filepath.Rel(b.dir, p)
	return filepath.Join(dir, r)
}

// region is a byte range of a file.
type region struct{ off, len int }

// seg1Layout locates what the scenarios aim at in seg 1, through the
// engine's own section parsers (never the hnsw layout).
type seg1Layout struct {
	table     map[sectionKind]sectionEntry
	n         int
	ids       idSection
	idsBlob   int // file offset of the id blob
	vecOff    map[string]int
	textBlock int // file offset of the compressed blocks
	texts     textSection
	uVals     int // file offset of column "u"'s values
	nodeIDs   []string
	tableOff  int                 // file offset of the section table
	entryAt   map[sectionKind]int // file offset of each kind's table entry
	size      int                 // file size (the trailer is its last 24 bytes)
}

func layoutSeg1(t *testing.T, b *matrixBase) *seg1Layout {
	t.Helper()
	raw, err := os.ReadFile(b.seg1)
	if err != nil {
		t.Fatal(err)
	}
	l := &seg1Layout{table: sectionTable(t, b.seg1), vecOff: map[string]int{}}
	secs, _, err := parseSegment(raw)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseInfo(secs[secInfo], segVersion)
	if err != nil {
		t.Fatal(err)
	}
	l.n = int(h.count)
	if l.ids, err = parseIDs(secs[secIDs], l.n); err != nil {
		t.Fatal(err)
	}
	l.idsBlob = int(l.table[secIDs].off+l.table[secIDs].len) - len(l.ids.blob)
	for node := range l.n {
		l.nodeIDs = append(l.nodeIDs, string(l.ids.id(uint32(node))))
	}
	for _, id := range l.nodeIDs {
		rec, ok := b.want[id]
		if !ok {
			continue
		}
		var pat []byte
		for _, x := range rec.Vector {
			pat = binary.LittleEndian.AppendUint32(pat, math.Float32bits(x))
		}
		if i := bytes.Index(raw, pat); i >= 0 {
			l.vecOff[id] = i
		}
	}
	if l.texts, err = parseTexts(secs[secText], l.n); err != nil {
		t.Fatal(err)
	}
	l.textBlock = int(l.table[secText].off+l.table[secText].len) - len(l.texts.blocks)
	cols, err := parseColumns(secs[secColumns], l.n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if c.name == "u" {
			l.uVals = int(l.table[secColumns].off) + int(uintptrDiff(secs[secColumns], c.vals))
		}
	}
	l.size = len(raw)
	l.tableOff = int(le.Uint64(raw[len(raw)-segTrailer:]))
	l.entryAt = map[sectionKind]int{}
	for i := range int(le.Uint32(raw[l.tableOff:])) {
		at := l.tableOff + 4 + i*segEntrySize
		l.entryAt[sectionKind(le.Uint32(raw[at:]))] = at
	}
	return l
}

// uintptrDiff is the offset of sub inside b (sub is a subslice of b).
func uintptrDiff(b, sub []byte) int {
	for i := range len(b) - len(sub) + 1 {
		if &b[i] == &sub[0] {
			return i
		}
	}
	panic("not a subslice")
}

// overlapping returns the IDs whose byte range [at(id), at(id)+size) in
// seg 1 overlaps r.
func overlapping(r region, ranges map[string][2]int) []string {
	var out []string
	for id, rg := range ranges {
		if rg[0] < r.off+r.len && r.off < rg[1] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

type damageKind string

const (
	flip     damageKind = "flip"
	truncate damageKind = "truncate"
	zero     damageKind = "zero"
	remove   damageKind = "delete"
	garbage  damageKind = "append garbage"
)

func applyDamage(t *testing.T, path string, k damageKind, off, n int) {
	t.Helper()
	if k == remove {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch k {
	case flip:
		b[off] ^= 0x20
	case zero:
		clear(b[off:min(off+n, len(b))])
	case truncate:
		b = b[:off]
	case garbage:
		g := make([]byte, 4096)
		for i := range g {
			g[i] = byte(i*131 + 7)
		}
		b = append(b, g...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type scenario struct {
	name string
	old  bool // on the base with an obsolete WAL segment
	// damage changes the copy in dir.
	damage func(t *testing.T, b *matrixBase, dir string)
	// allowed are the records whose primary data the damage destroys.
	allowed func(b *matrixBase) []string
	// harmless: the damage touches nothing a store reads (LOCK).
	harmless bool
	// walLost, when set, is the LSN Repair must name as the first WAL
	// position lost (RepairReport.WALLost).
	walLost func(b *matrixBase) wal.LSN
	// pending names the missing piece when this row fails today.
	pending string
}

type matrixRow struct {
	name, detected, lost, status string
}

func TestCorruptionMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the corruption matrix writes and repairs some 60 stores")
	}
	base := buildMatrixBase(t, false)
	old := buildMatrixBase(t, true)
	l := layoutSeg1(t, base)
	none := func(*matrixBase) []string { return nil }
	const zeroLen = 16
	onFile := func(file func(b *matrixBase) string, k damageKind, off func(b *matrixBase, size int) int) func(t *testing.T, b *matrixBase, dir string) {
		return func(t *testing.T, b *matrixBase, dir string) {
			p := b.rel(file(b), dir)
			size := 0
			if st, err := os.Stat(p); err == nil {
				size = int(st.Size())
			}
			o := 0
			if off != nil {
				o = off(b, size)
			}
			applyDamage(t, p, k, o, zeroLen)
		}
	}
	manifest := func(b *matrixBase) string { // the newest, which CURRENT names
		cur, err := os.ReadFile(filepath.Join(b.dir, currentName))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(b.dir, strings.TrimSpace(string(cur)))
	}
	lock := func(b *matrixBase) string { return filepath.Join(b.dir, "LOCK") }
	seg1 := func(b *matrixBase) string { return b.seg1 }
	seg2 := func(b *matrixBase) string { return filepath.Join(b.dir, "seg", segName(2)) }
	tail := func(b *matrixBase) string { return b.tailSeg }
	oldWAL := func(b *matrixBase) string { return b.oldWAL }
	half := func(_ *matrixBase, size int) int { return size / 2 }
	middle := func(_ *matrixBase, size int) int { return size / 2 }

	var scenarios []scenario
	for _, k := range []damageKind{flip, truncate, zero, remove, garbage} {
		scenarios = append(scenarios, scenario{name: "MANIFEST/" + string(k), damage: onFile(manifest, k, middle), allowed: none})
	}
	// Sections of seg 1: derived ones lose nothing, primary ones exactly the
	// records whose bytes they hold.
	vecRanges := map[string][2]int{}
	for id, o := range l.vecOff {
		vecRanges[id] = [2]int{o, o + 4*matrixDim}
	}
	idRanges, timeRanges, textRanges, uRanges := map[string][2]int{}, map[string][2]int{}, map[string][2]int{}, map[string][2]int{}
	blockOf := map[uint64][2]int{}
	for b := uint64(0); b < l.texts.nblocks; b++ {
		blockOf[b] = [2]int{l.textBlock + int(u64at(l.texts.boff, 0, b)), l.textBlock + int(u64at(l.texts.boff, 0, b+1))}
	}
	tm := l.table[secTimes]
	for node, id := range l.nodeIDs {
		idRanges[id] = [2]int{l.idsBlob + int(u64at(l.ids.off, 0, uint64(node))), l.idsBlob + int(u64at(l.ids.off, 0, uint64(node)+1))}
		blk, _, _ := l.texts.where(uint32(node))
		textRanges[id] = blockOf[blk]
		uRanges[id] = [2]int{l.uVals + 8*node, l.uVals + 8*node + 8}
		for col := range 4 {
			// A record's four time fields, one per array.
			key := fmt.Sprintf("%s#%d", id, col)
			at := int(tm.off) + 8 + 8*(col*l.n+node)
			timeRanges[key] = [2]int{at, at + 8}
		}
	}
	stripCol := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			id, _, _ = strings.Cut(id, "#")
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	type target struct {
		name    string
		off     int
		primary map[string][2]int // nil: derived
	}
	g := l.table[secGraph]
	targets := []target{
		{"info", int(l.table[secInfo].off) + 3, nil},
		{"graph header", int(g.off) + 40, nil},
		{"graph codes", int(g.off) + 300, nil},
		{"graph vector", l.vecOff["r00150"] + 5, vecRanges},
		{"graph flags", int(g.off+g.len) - 9, nil},
		{"ids blob", idRanges["r00150"][0] + 2, idRanges},
		{"ids sorted", int(l.table[secIDs].off) + 16 + 8*(l.n+1) + 4*123, nil},
		{"text block", blockOf[l.texts.nblocks-1][0] + 10, textRanges},
		{"times", int(tm.off) + 8 + 8*150 + 2, timeRanges},
		{"columns value", uRanges["r00150"][0] + 1, uRanges},
		{"keyword", int(l.table[secKeyword].off + l.table[secKeyword].len/2), nil},
		{"namespace", int(l.table[secNamespace].off) + 5, nil},
		{"sums", int(l.table[secSums].off) + 8 + 4*77, nil},
		{"chunks", int(l.table[secChunks].off) + 20 + 4*3, nil},
	}
	for _, tg := range targets {
		for _, k := range []damageKind{flip, zero} {
			n := 1
			if k == zero {
				n = zeroLen
			}
			allowed := none
			if tg.primary != nil {
				ids := stripCol(overlapping(region{off: tg.off, len: n}, tg.primary))
				allowed = func(*matrixBase) []string { return ids }
			}
			off := tg.off
			scenarios = append(scenarios, scenario{name: "seg/" + tg.name + "/" + string(k),
				damage: onFile(seg1, k, func(*matrixBase, int) int { return off }), allowed: allowed})
		}
	}
	// The section table and the trailer of seg 1: they only say where the
	// sections are, and the sections prove themselves by their checksums
	// (an entry's damaged checksum by the trailer's table checksum), so
	// nothing is lost. Field by field here; ENGRAM_MATRIX_EVERY_BYTE=1 adds
	// every byte of both, flipped and zeroed (some 700 more rows).
	type tableTarget struct {
		name  string
		off   int
		kinds []damageKind
	}
	both, flipOnly := []damageKind{flip, zero}, []damageKind{flip}
	tableTargets := []tableTarget{{"table count", l.tableOff, both}} // zero: the count, the first entry's kind and offset
	for _, k := range sectionOrder(segVersion) {
		e, dmg := l.entryAt[k], flipOnly
		if k == secTimes || k == secGraph {
			dmg = both
		}
		tableTargets = append(tableTargets,
			tableTarget{"table " + k.String() + " offset", e + 8, dmg},    // zero: offset and length
			tableTarget{"table " + k.String() + " checksum", e + 24, dmg}) // zero: checksum, the next entry's kind
	}
	tmAt, grAt := l.entryAt[secTimes], l.entryAt[secGraph]
	end := l.size - segTrailer
	tableTargets = append(tableTargets,
		tableTarget{"table times kind", tmAt, both},
		tableTarget{"table times padding", tmAt + 4, flipOnly},
		tableTarget{"table times length", tmAt + 16, both}, // zero: length and checksum
		tableTarget{"table graph length", grAt + 16, both},
		tableTarget{"trailer table offset", end, both}, // zero: offset, length, checksum
		tableTarget{"trailer table length", end + 8, both},
		tableTarget{"trailer table checksum", end + 12, both},
		tableTarget{"trailer magic", end + 16, both},
	)
	if os.Getenv("ENGRAM_MATRIX_EVERY_BYTE") != "" {
		for p := l.tableOff; p < l.size; p++ {
			tableTargets = append(tableTargets, tableTarget{fmt.Sprintf("table+trailer byte %d", p-l.tableOff), p, both})
		}
	}
	for _, tg := range tableTargets {
		for _, k := range tg.kinds {
			off := tg.off
			scenarios = append(scenarios, scenario{name: "seg/" + tg.name + "/" + string(k),
				damage: onFile(seg1, k, func(*matrixBase, int) int { return off }), allowed: none})
		}
	}
	seg2Lost := func(b *matrixBase) []string { return b.seg2IDs }
	scenarios = append(scenarios,
		scenario{name: "seg file/truncate", damage: onFile(seg2, truncate, half), allowed: seg2Lost},
		scenario{name: "seg file/delete", damage: onFile(seg2, remove, nil), allowed: seg2Lost},
		scenario{name: "seg file/append garbage", damage: onFile(seg2, garbage, nil), allowed: none},
	)
	// The WAL after the checkpoint: record 10 of the 20 is damaged.
	tailAt := func(i int) func(*matrixBase, int) int {
		return func(b *matrixBase, _ int) int { return int(uint32(b.tailLSNs[i])) + 12 }
	}
	fromRecord := func(i int) func(b *matrixBase) []string { return func(b *matrixBase) []string { return b.tailIDs[i:] } }
	rec10 := func(b *matrixBase) []string { return b.tailIDs[10:11] }
	lsn10 := func(b *matrixBase) wal.LSN { return b.tailLSNs[10] }
	scenarios = append(scenarios,
		scenario{name: "WAL after checkpoint/flip", damage: onFile(tail, flip, tailAt(10)), allowed: rec10, walLost: lsn10},
		scenario{name: "WAL after checkpoint/zero", damage: onFile(tail, zero, tailAt(10)), allowed: rec10, walLost: lsn10},
		scenario{name: "WAL after checkpoint/truncate", damage: func(t *testing.T, b *matrixBase, dir string) {
			applyDamage(t, b.rel(b.tailSeg, dir), truncate, tailAt(10)(b, 0), 0)
		}, allowed: fromRecord(10), walLost: lsn10},
		scenario{name: "WAL after checkpoint/delete", damage: onFile(tail, remove, nil), allowed: fromRecord(0)},
		scenario{name: "WAL after checkpoint/append garbage", damage: onFile(tail, garbage, nil), allowed: none},
	)
	for _, k := range []damageKind{flip, truncate, zero, remove, garbage} {
		// Deleting a segment whose records are all in segment files loses
		// nothing and needs no report (flushes delete them).
		scenarios = append(scenarios, scenario{name: "WAL before checkpoint/" + string(k), old: true,
			damage: onFile(oldWAL, k, middle), allowed: none, harmless: k == remove})
	}
	for _, k := range []damageKind{flip, truncate, zero, remove, garbage} {
		scenarios = append(scenarios, scenario{name: "LOCK/" + string(k), damage: onFile(lock, k, func(_ *matrixBase, size int) int { return size / 2 }),
			allowed: none, harmless: true})
	}
	foreign := func(sub string, dirEntry bool) func(t *testing.T, b *matrixBase, dir string) {
		return func(t *testing.T, b *matrixBase, dir string) {
			p := filepath.Join(dir, sub, "notes")
			var err error
			if dirEntry {
				err = os.MkdirAll(filepath.Join(p, "inner"), 0o700)
			} else {
				err = os.WriteFile(p, []byte("a user's file"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	scenarios = append(scenarios,
		scenario{name: "foreign/file in seg", damage: foreign("seg", false), allowed: none},
		scenario{name: "foreign/directory in seg", damage: foreign("seg", true), allowed: none},
		scenario{name: "foreign/file in wal", damage: foreign("wal", false), allowed: none},
		scenario{name: "foreign/directory in wal", damage: foreign("wal", true), allowed: none},
		scenario{name: "foreign/file in the store root", damage: foreign("", false), allowed: none},
	)
	// The last WAL record damaged (whole, not torn), the newest WAL
	// segment cut inside its header, and random bytes under the names of a
	// WAL segment and of segment files (issue 23).
	lastRec := func(b *matrixBase) []string { return b.tailIDs[19:] }
	lsn19 := func(b *matrixBase) wal.LSN { return b.tailLSNs[19] }
	lsn0 := func(b *matrixBase) wal.LSN { return b.tailLSNs[0] }
	cutTail := func(n int) func(t *testing.T, b *matrixBase, dir string) {
		return func(t *testing.T, b *matrixBase, dir string) { applyDamage(t, b.rel(b.tailSeg, dir), truncate, n, 0) }
	}
	randomAt := func(names ...string) func(t *testing.T, b *matrixBase, dir string) {
		return func(t *testing.T, b *matrixBase, dir string) {
			r := rand.New(rand.NewPCG(23, uint64(len(names))))
			for _, n := range names {
				g := make([]byte, 5000)
				for i := range g {
					g[i] = byte(r.Uint32())
				}
				if err := os.WriteFile(filepath.Join(dir, n), g, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	scenarios = append(scenarios,
		scenario{name: "WAL after checkpoint/flip last record", damage: onFile(tail, flip, tailAt(19)), allowed: lastRec, walLost: lsn19},
		scenario{name: "WAL after checkpoint/empty", damage: cutTail(0), allowed: fromRecord(0), walLost: lsn0},
		scenario{name: "WAL after checkpoint/truncate to 1 byte", damage: cutTail(1), allowed: fromRecord(0), walLost: lsn0},
		scenario{name: "foreign/random bytes named like a WAL segment", damage: randomAt("wal/00000009"), allowed: none},
		scenario{name: "foreign/random bytes named like segment files", damage: randomAt("seg/00000003.seg", "seg/00000099.seg"), allowed: none},
	)

	var mu sync.Mutex
	var rows []matrixRow
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			b := base
			if sc.old {
				b = old
			}
			row := runScenario(t, b, sc)
			mu.Lock()
			rows = append(rows, row)
			mu.Unlock()
			if strings.HasPrefix(row.status, "pending") {
				t.Skip(row.status)
			}
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-40s | %-34s | %-22s | %s\n", "scenario", "detected", "records lost (allowed)", "status")
	fmt.Fprintf(&sb, "%s\n", strings.Repeat("-", 130))
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-40s | %-34s | %-22s | %s\n", r.name, r.detected, r.lost, r.status)
	}
	t.Log(sb.String())
}

// runScenario damages a copy of b, checks detection and answers, repairs
// and counts what was lost. A failure of a pending row is reported in the
// row (and skipped by the caller); of any other row it fails the test.
func runScenario(t *testing.T, b *matrixBase, sc scenario) matrixRow {
	dir := copyFixture(t, b.dir)
	sc.damage(t, b, dir)
	row := matrixRow{name: sc.name}
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	// Detection: Open refuses it as corruption, or Check reports it, or
	// UnknownFiles lists it.
	db, err := Open(dir, testOpts())
	switch {
	case err != nil && errors.Is(err, ErrCorrupt):
		row.detected = "Open: ErrCorrupt"
	case err != nil:
		row.detected = "Open: " + err.Error()
		fail("Open failed without ErrCorrupt: %v", err)
	default:
		if cerr := db.Check(); cerr != nil {
			row.detected = "Check: " + kindOf(cerr)
		} else if u, _ := UnknownFiles(dir); len(u) > 0 {
			row.detected = "Check: unknown file " + u[0]
		}
		answersIntact(db, b, fail)
		db.Close()
	}
	if row.detected == "" {
		if sc.harmless {
			row.detected = "n/a (nothing needed lost)"
		} else {
			row.detected = "NOT DETECTED"
			fail("damage not detected")
		}
	}

	rep, err := Repair(dir, Options{})
	if err != nil {
		fail("Repair: %v", err)
	}
	if sc.walLost != nil {
		if want := sc.walLost(b); len(rep.WALLost) == 0 || rep.WALLost[0].LSN != want {
			fail("Repair reports WAL losses %+v, want the first at %v", rep.WALLost, want)
		}
	}
	lost := map[string]bool{}
	db, err = Open(dir, testOpts())
	if err != nil {
		fail("Open after Repair: %v", err)
		for id := range b.want {
			lost[id] = true
		}
	} else {
		if err := db.Check(); err != nil {
			fail("Check after Repair: %v", err)
		}
		c, err := db.Collection("m")
		for id, want := range b.want {
			if err != nil {
				lost[id] = true
				continue
			}
			got, gerr := c.Get(id)
			if gerr != nil || !sameContent(got, want) {
				lost[id] = true
			}
		}
		db.Close()
	}
	allowed := sc.allowed(b)
	var extra []string
	for id := range lost {
		if !slices.Contains(allowed, id) {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		fail("%d records lost beyond the destroyed ones (first %s)", len(extra), extra[0])
	}
	if len(rep.LostRecords) > len(allowed) {
		fail("Repair reports %d lost records, %d destroyed", len(rep.LostRecords), len(allowed))
	}
	row.lost = fmt.Sprintf("%d (%d)", len(lost), len(allowed))
	switch {
	case len(problems) == 0:
		row.status = "ok"
	case sc.pending != "":
		row.status = "pending (" + sc.pending + "): " + strings.Join(problems, "; ")
	default:
		row.status = "FAIL: " + strings.Join(problems, "; ")
		t.Error(row.status)
	}
	return row
}

func kindOf(err error) string {
	var ce *CorruptionError
	var ue *UnreachableError
	switch {
	case errors.As(err, &ce):
		s := "ErrCorrupt " + filepath.Base(ce.File)
		return s
	case errors.As(err, &ue):
		return "UnreachableError"
	}
	return err.Error()
}

// sameContent compares what a record holds (not its access statistics,
// which live in the manifest).
func sameContent(got, want Record) bool {
	if got.ID != want.ID || got.Text != want.Text || !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) ||
		len(got.Meta) != len(want.Meta) || !slices.Equal(got.Vector, want.Vector) {
		return false
	}
	for k, v := range want.Meta {
		if !got.Meta[k].Equal(v) {
			return false
		}
	}
	return true
}

// answersIntact runs queries on the damaged store: each either fails or
// answers exactly what the intact store holds.
func answersIntact(db *DB, b *matrixBase, fail func(string, ...any)) {
	c, err := db.Collection("m")
	if err != nil {
		return
	}
	for _, id := range []string{"r00150", "r00200", "r01050", "r02010", "r02019"} {
		want := b.want[id]
		if got, err := c.Get(id); err == nil && !sameContent(got, want) {
			fail("Get(%s) answered damaged content", id)
		}
		hits, err := c.Search(ctx, SearchRequest{Vector: want.Vector, K: 3})
		if err == nil {
			for _, h := range hits {
				w, ok := b.want[h.ID]
				w.Vector = h.Record.Vector
				if !ok || !sameContent(h.Record, w) {
					fail("Search answered %s with damaged content", h.ID)
				}
			}
			if len(hits) == 0 || hits[0].ID != id {
				fail("Search for %s's vector answered %v", id, hits)
			}
		}
		th, err := c.SearchText(ctx, id, 1, nil)
		want.Vector = nil
		if err == nil && (len(th) != 1 || th[0].ID != id || !sameContent(th[0].Record, want)) {
			fail("SearchText(%s) answered %v", id, th)
		}
	}
}
