package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// rebuildN and rebuildDim size the stores of the rebuild tests (smaller
// with -short: the race detector makes every graph build slow).
func rebuildN() int {
	if testing.Short() {
		return 160
	}
	return 400
}

func rebuildDim() int {
	if testing.Short() {
		return 32
	}
	return 64
}

// rebuildStore writes rebuildN() records in one segment file (seg 1) and
// returns the store's directory, the records and the file's section table.
func rebuildStore(t *testing.T) (string, []Record, map[sectionKind]sectionEntry) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: rebuildDim(), Metric: quant.Cosine, Fingerprint: "m"})
	if err != nil {
		t.Fatal(err)
	}
	recs := mkRecords(rand.New(rand.NewPCG(3, 4)), rebuildDim(), 0, rebuildN())
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, recs, sectionTable(t, filepath.Join(dir, "seg", segName(1)))
}

func sectionTable(t *testing.T, path string) map[sectionKind]sectionEntry {
	t.Helper()
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()
	out := map[sectionKind]sectionEntry{}
	for _, e := range sf.entries {
		out[e.kind] = e
	}
	return out
}

// vectorOffset finds where rec's stored vector lies in the file (by its
// bytes, without reading the graph layout).
func vectorOffset(t *testing.T, path string, rec Record) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pat []byte
	for _, x := range normalized(rec.Vector) {
		pat = binary.LittleEndian.AppendUint32(pat, math.Float32bits(x))
	}
	i := bytes.Index(b, pat)
	if i < 0 {
		t.Fatalf("vector of %s not found in the file", rec.ID)
	}
	return i
}

// checkRecords asserts the store holds exactly want (plus nothing), each
// record equal to what was written, searchable by vector and by keyword.
func checkRecords(t *testing.T, dir string, want []Record) {
	t.Helper()
	db := openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("Check after Repair: %v", err)
	}
	c, err := db.Collection("a")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Count(nil); err != nil || n != len(want) {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(want))
	}
	for i, w := range want {
		got, err := c.Get(w.ID)
		if err != nil {
			t.Fatalf("Get(%s): %v", w.ID, err)
		}
		if got.Text != w.Text || !got.Created.Equal(w.Created) || !got.Meta["n"].Equal(w.Meta["n"]) || !got.Meta["tags"].Equal(w.Meta["tags"]) {
			t.Fatalf("Get(%s) = %+v, want %+v", w.ID, got, w)
		}
		if i%37 == 0 {
			hits, err := c.Search(ctx, SearchRequest{Vector: w.Vector, K: 1})
			if err != nil || len(hits) != 1 || hits[0].ID != w.ID {
				t.Fatalf("Search(vector of %s) = %v, %v", w.ID, hits, err)
			}
			th, err := c.SearchText(ctx, w.ID, 1, Eq("session", w.Meta["session"]))
			if err != nil || len(th) != 1 || th[0].ID != w.ID {
				t.Fatalf("SearchText(%s) = %v, %v", w.ID, th, err)
			}
		}
	}
}

// TestRepairRebuildsDerived: one flipped byte in a derived part of a
// segment (graph header, codes, lists and flags, keyword and namespace
// postings, the sorted id table, the record checksums) makes Repair
// rebuild the file from its vectors, texts and metadata: no record is
// lost. (Before, Repair moved the file aside and reported 400 records
// lost.)
func TestRepairRebuildsDerived(t *testing.T) {
	_, _, table := rebuildStore(t)
	g, ids := table[secGraph], table[secIDs]
	cases := []struct {
		name string
		off  func() int
	}{
		{"graph header", func() int { return int(g.off) + 40 }},
		{"graph codes", func() int { return int(g.off) + 300 }},
		{"graph flags", func() int { return int(g.off+g.len) - 9 }},
		{"graph lists", func() int { return int(g.off+g.len) - 4*rebuildN() - 200 }}, // upper lists, before the flags
		{"keyword", func() int { return int(table[secKeyword].off + table[secKeyword].len/2) }},
		{"namespace", func() int { return int(table[secNamespace].off) + 5 }},
		{"sorted ids", func() int { return int(ids.off) + 16 + 8*(rebuildN()+1) + 4*123 }},
		{"sums", func() int { return int(table[secSums].off) + 8 + 4*77 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, recs, _ := rebuildStore(t)
			path := filepath.Join(dir, "seg", segName(1))
			flipByte(t, path, tc.off())
			db := openT(t, dir, testOpts())
			if err := db.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want ErrCorrupt", err)
			}
			db.Close()
			rep, err := Repair(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.DroppedRecords != 0 || len(rep.LostRecords) != 0 || !slices.Equal(rep.RebuiltSegments, []string{path}) ||
				len(rep.QuarantineFiles) != 0 || len(rep.QuarantinedSegments) != 0 {
				t.Fatalf("Repair = %+v, want the file rebuilt with nothing lost", rep)
			}
			checkRecords(t, dir, recs)
			if rep, err := Repair(dir, Options{}); err != nil || len(rep.RebuiltSegments) != 0 {
				t.Fatalf("second Repair = %+v, %v; want nothing to do", rep, err)
			}
		})
	}
}

// TestRepairPrimaryDamage: damage to one record's primary data loses that
// record alone; Repair names it and exports what is readable of it.
func TestRepairPrimaryDamage(t *testing.T) {
	cases := []struct {
		name string
		off  func(path string, recs []Record, table map[sectionKind]sectionEntry) int
		lost []string // exactly these (nil: check the text block case below)
	}{
		{"vector", func(path string, recs []Record, _ map[sectionKind]sectionEntry) int {
			return vectorOffset(t, path, recs[17]) + 5
		}, []string{"r00017"}},
		{"created time", func(_ string, _ []Record, table map[sectionKind]sectionEntry) int {
			return int(table[secTimes].off) + 8 + 8*150 + 2
		}, []string{"r00150"}},
		{"id bytes", func(_ string, _ []Record, table map[sectionKind]sectionEntry) int {
			return int(table[secIDs].len+table[secIDs].off) - 6*rebuildN() + 6*99 + 3 // the blob: 6 bytes per ID
		}, []string{"r00099"}},
		{"text block", func(_ string, _ []Record, table map[sectionKind]sectionEntry) int {
			return int(table[secText].off + table[secText].len - 20)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, recs, table := rebuildStore(t)
			path := filepath.Join(dir, "seg", segName(1))
			flipByte(t, path, tc.off(path, recs, table))
			rep, err := Repair(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var lost []string
			for _, l := range rep.LostRecords {
				lost = append(lost, l.ID)
			}
			if tc.lost != nil && (!slices.Equal(lost, tc.lost) || rep.DroppedRecords != len(tc.lost)) {
				if tc.name != "id bytes" || len(lost) != 1 || rep.LostRecords[0].Node != 99 {
					t.Fatalf("lost %v (%+v), want %v", lost, rep, tc.lost)
				}
			}
			if tc.lost == nil && (len(lost) == 0 || len(lost) > 40 || rep.DroppedRecords != len(lost)) {
				t.Fatalf("a damaged text block lost %d records: %v", len(lost), lost)
			}
			if !slices.Equal(rep.QuarantinedSegments, []string{path}) || len(rep.QuarantineFiles) != 1 {
				t.Fatalf("Repair = %+v", rep)
			}
			if _, err := os.Stat(path + quarantineSuffix); err != nil {
				t.Fatalf("the damaged file is not kept aside: %v", err)
			}
			// The quarantine file holds one JSON line per lost record.
			f, err := os.Open(rep.QuarantineFiles[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			var exported []string
			for sc.Scan() {
				var q quarantined
				if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
					t.Fatal(err)
				}
				exported = append(exported, q.ID)
				if q.Segment != segName(1) || len(q.DamagedSection) == 0 || len(q.Readable) == 0 {
					t.Fatalf("quarantine line %s", sc.Bytes())
				}
			}
			if !slices.Equal(exported, lost) {
				t.Fatalf("quarantine file holds %v, report %v", exported, lost)
			}
			var keep []Record
			for _, r := range recs {
				if !slices.Contains(lost, r.ID) && !(tc.name == "id bytes" && r.ID == "r00099") {
					keep = append(keep, r)
				}
			}
			checkRecords(t, dir, keep)
		})
	}
}

// TestCompactRebuildsDerived: Compact rewrites a segment whose keyword
// postings or graph lists are damaged from its (verified) records, and
// refuses, changing nothing, to copy a record whose primary data is
// damaged.
func TestCompactRebuildsDerived(t *testing.T) {
	leaveDamaged(t)
	for _, derived := range []bool{true, false} {
		dir, recs, table := rebuildStore(t)
		path := filepath.Join(dir, "seg", segName(1))
		off := int(table[secKeyword].off + table[secKeyword].len/2)
		if !derived {
			off = vectorOffset(t, path, recs[40]) + 9
		}
		flipByte(t, path, off)
		db := openT(t, dir, testOpts())
		c, _ := db.Collection("a")
		if derived {
			if _, err := c.SearchText(ctx, "r00007", 1, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("SearchText over damaged postings = %v", err)
			}
		}
		// A second segment, so that Compact merges.
		if err := c.Upsert(ctx, mkRecords(rand.New(rand.NewPCG(9, 9)), rebuildDim(), 1000, 5)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		err := db.Compact()
		if !derived {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Compact copied a damaged vector: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("a refused compaction removed its input: %v", err)
			}
			db.Close()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("Check after Compact: %v", err)
		}
		if th, err := c.SearchText(ctx, "r00007", 1, nil); err != nil || len(th) != 1 || th[0].ID != "r00007" {
			t.Fatalf("SearchText after Compact = %v, %v", th, err)
		}
		if n, _ := c.Count(nil); n != rebuildN()+5 {
			t.Fatalf("%d records after Compact, want %d", n, rebuildN()+5)
		}
		db.Close()
	}
}

// tableEntryAt returns the file offset of kind's entry in the section
// table of the segment file at path (read from its intact trailer).
func tableEntryAt(t *testing.T, path string, kind sectionKind) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tableOff := int(binary.LittleEndian.Uint64(b[len(b)-segTrailer:]))
	for i := range int(binary.LittleEndian.Uint32(b[tableOff:])) {
		at := tableOff + 4 + i*segEntrySize
		if sectionKind(binary.LittleEndian.Uint32(b[at:])) == kind {
			return at
		}
	}
	t.Fatalf("no %s entry in the section table of %s", kind, path)
	return 0
}

// TestSalvageDamagedTable: one damaged byte in a segment's section table
// (the low byte of the times section's offset, one less, as issue 23
// found it) or in its trailer (the first byte of the table's checksum)
// leaves every section intact: Repair locates them by their own
// checksums and keeps every record. (Before, Repair gave up on the table
// and dropped the file's records unnamed.)
func TestSalvageDamagedTable(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"times offset", func(t *testing.T, path string) {
			at := tableEntryAt(t, path, secTimes) + 8 // offset u64, low byte first
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[at]--
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"table checksum", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			flipByte(t, path, int(st.Size())-segTrailer+12) // table_crc u32, first byte
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, recs, _ := rebuildStore(t)
			path := filepath.Join(dir, "seg", segName(1))
			tc.damage(t, path)
			db := openT(t, dir, testOpts())
			if err := db.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want ErrCorrupt", err)
			}
			db.Close()
			rep, err := Repair(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.DroppedRecords != 0 || len(rep.LostRecords) != 0 || !slices.Equal(rep.RebuiltSegments, []string{path}) ||
				len(rep.QuarantineFiles) != 0 || len(rep.QuarantinedSegments) != 0 {
				t.Fatalf("Repair = %+v, want the file rebuilt with nothing lost", rep)
			}
			checkRecords(t, dir, recs)
			if rep, err := Repair(dir, Options{}); err != nil || len(rep.RebuiltSegments) != 0 {
				t.Fatalf("second Repair = %+v, %v; want nothing to do", rep, err)
			}
		})
	}
}
