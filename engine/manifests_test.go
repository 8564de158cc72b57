package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// stateStore writes a store whose state lives partly in the manifests
// only: segment 1 (records 0-19), then deletes of 3 of its records, a Touch
// of 2, an overwrite and a KV put, a flush (segment 2: records 20-39 and
// the overwrite), and 10 records in the WAL after the checkpoint. Closed
// without a final flush. The returned function checks that a store holds
// exactly that state.
func stateStore(t *testing.T) (string, func(t *testing.T, db *DB)) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	r := rand.New(rand.NewPCG(5, 6))
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Upsert(ctx, mkRecords(r, 4, 0, 20)))
	must(db.Flush())
	if n, err := c.Delete("r00001", "r00002", "r00003"); err != nil || n != 3 {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	at := time.Unix(5000, 0).UTC()
	must(c.Touch([]string{"r00004", "r00005"}, at))
	must(c.Touch([]string{"r00005"}, at))
	over := mkRecords(r, 4, 6, 1)
	over[0].Text = "overwritten"
	must(c.Upsert(ctx, over))
	must(db.KV().Put("k", []byte("v")))
	must(c.Upsert(ctx, mkRecords(r, 4, 20, 20)))
	must(db.Flush())
	for i := range 10 {
		must(c.Upsert(ctx, mkRecords(r, 4, 40+i, 1)))
	}
	db.noCloseFlush = true
	must(db.Close())
	verify := func(t *testing.T, db *DB) {
		t.Helper()
		c, err := db.Collection("c")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Count(nil); n != 47 {
			t.Errorf("Count = %d, want 47", n)
		}
		for _, id := range []string{"r00001", "r00002", "r00003"} {
			if _, err := c.Get(id); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted %s: Get = %v", id, err)
			}
		}
		for id, want := range map[string]uint64{"r00004": 1, "r00005": 2} {
			rec, err := c.Get(id)
			if err != nil || rec.AccessCount != want || !rec.LastAccess.Equal(at) {
				t.Errorf("%s: count %d last %v (%v), want %d at %v", id, rec.AccessCount, rec.LastAccess, err, want, at)
			}
		}
		if rec, err := c.Get("r00006"); err != nil || rec.Text != "overwritten" {
			t.Errorf("overwritten r00006: %q, %v", rec.Text, err)
		}
		if v, err := db.KV().Get("k"); err != nil || string(v) != "v" {
			t.Errorf("KV k = %q, %v", v, err)
		}
		for i := range 50 {
			id := fmt.Sprintf("r%05d", i)
			if i >= 1 && i <= 3 {
				continue
			}
			if _, err := c.Get(id); err != nil {
				t.Errorf("Get(%s) = %v", id, err)
			}
		}
	}
	return dir, verify
}

// manifestFiles lists the numbered manifests of dir, oldest first.
func manifestFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, ok := parseManifestName(e.Name()); ok {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// damage is one way a file can be damaged or lost.
var damages = []struct {
	name string
	do   func(t *testing.T, path string)
}{
	{"flip", func(t *testing.T, p string) {
		st, _ := os.Stat(p)
		flipByte(t, p, int(st.Size()/2))
	}},
	{"truncate", func(t *testing.T, p string) {
		st, _ := os.Stat(p)
		if err := os.Truncate(p, st.Size()/2); err != nil {
			t.Fatal(err)
		}
	}},
	{"zero", func(t *testing.T, p string) {
		st, _ := os.Stat(p)
		if err := os.WriteFile(p, make([]byte, st.Size()), 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	{"empty", func(t *testing.T, p string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}},
	{"delete", func(t *testing.T, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}},
	{"garbage", func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("garbage"))
		f.Close()
	}},
}

// TestManifestDamageCostsNothing: the newest manifest flipped, truncated,
// zeroed, emptied, deleted or grown: Open falls back to the previous one
// and replays the WAL from its checkpoint (deletes, touches, the overwrite
// and the KV put included), Check reports the damage, Repair makes Check
// clean, and nothing is lost.
func TestManifestDamageCostsNothing(t *testing.T) {
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir, verify := stateStore(t)
			files := manifestFiles(t, dir)
			if len(files) != 2 {
				t.Fatalf("manifests on disk: %q, want the current and the previous", files)
			}
			dmg.do(t, files[len(files)-1])
			db, err := Open(dir, testOpts())
			if err != nil {
				t.Fatalf("Open with the newest manifest damaged: %v", err)
			}
			verify(t, db)
			if err := db.Check(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check = %v, want ErrCorrupt", err)
			}
			db.noCloseFlush = true
			db.Close()
			if _, err := Repair(dir, Options{}); err != nil {
				t.Fatalf("Repair: %v", err)
			}
			db = openT(t, dir, testOpts())
			verify(t, db)
			if err := db.Check(); err != nil {
				t.Errorf("Check after Repair: %v", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, testOpts())
			defer db.Close()
			verify(t, db)
		})
	}
}

// TestCurrentDamage: CURRENT flipped, emptied or deleted costs nothing and
// Check reports it.
func TestCurrentDamage(t *testing.T) {
	for _, dmg := range damages {
		if dmg.name == "zero" || dmg.name == "truncate" {
			continue // same as flip and empty for a one-line file
		}
		t.Run(dmg.name, func(t *testing.T) {
			dir, verify := stateStore(t)
			dmg.do(t, filepath.Join(dir, currentName))
			db, err := Open(dir, testOpts())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			verify(t, db)
			if err := db.Check(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Check = %v, want ErrCorrupt", err)
			}
			db.noCloseFlush = true
			db.Close()
			if _, err := Repair(dir, Options{}); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, testOpts())
			defer db.Close()
			verify(t, db)
			if err := db.Check(); err != nil {
				t.Errorf("Check after Repair: %v", err)
			}
		})
	}
}

// TestRebuildManifest: every manifest and CURRENT lost. Open refuses
// (writing nothing); Repair rebuilds the manifest from seg/ and wal/ alone,
// and because the WAL still holds everything since the previous
// manifest's checkpoint, nothing is lost.
func TestRebuildManifest(t *testing.T) {
	for _, dmg := range damages {
		if dmg.name == "garbage" {
			continue
		}
		t.Run(dmg.name, func(t *testing.T) {
			dir, verify := stateStore(t)
			for _, f := range append(manifestFiles(t, dir), filepath.Join(dir, currentName)) {
				dmg.do(t, f)
			}
			before := snapshotDir(t, dir)
			if _, err := Open(dir, testOpts()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open without a readable manifest = %v, want ErrCorrupt", err)
			}
			if after := snapshotDir(t, dir); !sameSnapshot(before, after) {
				t.Fatal("Open changed a store without a readable manifest")
			}
			rep, err := Repair(dir, Options{})
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			if !rep.RebuiltManifest {
				t.Errorf("Repair = %+v, want RebuiltManifest", rep)
			}
			db := openT(t, dir, testOpts())
			verify(t, db)
			if err := db.Check(); err != nil {
				t.Errorf("Check after Repair: %v", err)
			}
			db.Close()
			db = openT(t, dir, testOpts())
			defer db.Close()
			verify(t, db)
		})
	}
}

// TestRebuildNewestWins: rebuilt from seg/ alone (the WAL gone too), a
// record overwritten in a later segment is served from that one.
func TestRebuildNewestWins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	r := rand.New(rand.NewPCG(1, 2))
	c, _ := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.Cosine, Fingerprint: "m1"})
	for v := range 3 {
		recs := mkRecords(r, 4, 0, 10)
		for i := range recs {
			recs[i].Text = fmt.Sprintf("version %d", v)
		}
		if err := c.Upsert(ctx, recs[:10-3*v]); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, f := range append(manifestFiles(t, dir), filepath.Join(dir, currentName)) {
		os.Remove(f)
	}
	os.RemoveAll(filepath.Join(dir, "wal"))
	if _, err := Repair(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, err := db.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Config(); cfg.Metric != quant.Cosine || cfg.Fingerprint != "m1" || cfg.Dim != 4 {
		t.Fatalf("rebuilt config %+v", cfg)
	}
	for i := range 10 {
		want := 0
		switch {
		case i < 4:
			want = 2
		case i < 7:
			want = 1
		}
		rec, err := c.Get(fmt.Sprintf("r%05d", i))
		if err != nil || rec.Text != fmt.Sprintf("version %d", want) {
			t.Errorf("r%05d: %q, %v; want version %d", i, rec.Text, err, want)
		}
	}
	if n, _ := c.Count(nil); n != 10 {
		t.Errorf("Count = %d, want 10", n)
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}

// TestLegacyManifestUpgrade: a store with the first release's single
// MANIFEST (version 1, no CURRENT) opens; the next manifests are numbered,
// and the old file goes once two numbered ones hold the state.
func TestLegacyManifestUpgrade(t *testing.T) {
	dir, verify := stateStore(t)
	files := manifestFiles(t, dir)
	b, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, filepath.Join(dir, currentName)) {
		os.Remove(f)
	}
	if err := os.WriteFile(filepath.Join(dir, legacyManifestName), encodeManifestVersion(m, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openT(t, dir, testOpts())
	verify(t, db)
	if err := db.Check(); err != nil {
		t.Fatalf("Check of an upgraded store: %v", err)
	}
	for i := range 2 {
		c, _ := db.Collection("c")
		c.Upsert(ctx, mkRecords(rand.New(rand.NewPCG(9, 9)), 4, 100+i, 1))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if _, err := os.Stat(filepath.Join(dir, legacyManifestName)); err == nil {
		t.Error("the legacy MANIFEST survived two numbered manifests")
	}
	if got := manifestFiles(t, dir); len(got) != 2 {
		t.Errorf("manifests %q, want 2", got)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, currentName))
	if !strings.HasPrefix(string(cur), manifestPrefix) {
		t.Errorf("CURRENT = %q", cur)
	}
}

// TestRebuildAfterCompaction: the inputs of a compaction stay on disk while
// the previous manifest names them; a manifest rebuilt from seg/ alone
// (the WAL gone too) leaves them out because the output says it replaces
// them, so a record deleted before the compaction stays deleted.
func TestRebuildAfterCompaction(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	r := rand.New(rand.NewPCG(3, 3))
	c, _ := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2})
	for i := range 3 {
		if err := c.Upsert(ctx, mkRecords(r, 4, 10*i, 10)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Delete("r00003", "r00015"); n != 2 || err != nil {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg")); len(segs) != 4 {
		t.Fatalf("seg/ holds %q, want the output and its 3 inputs", segs)
	}
	for _, f := range append(manifestFiles(t, dir), filepath.Join(dir, currentName)) {
		os.Remove(f)
	}
	os.RemoveAll(filepath.Join(dir, "wal"))
	if _, err := Repair(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, _ = db.Collection("c")
	if n, _ := c.Count(nil); n != 28 {
		t.Errorf("Count = %d, want 28", n)
	}
	for _, id := range []string{"r00003", "r00015"} {
		if _, err := c.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s deleted before compaction: Get = %v", id, err)
		}
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}

// TestWALSegmentMissing: the WAL segment after the checkpoint deleted
// (it held the 10 unflushed records). Before, Open made a fresh segment 1
// and Check said ok; now Open refuses it as corruption, Repair reports it
// and continues the log above every LSN it handed out, so writes made
// after the repair survive a reopen.
func TestWALSegmentMissing(t *testing.T) {
	dir := recoveryStore(t)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	last := segs[len(segs)-1]
	if err := os.Remove(last); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	if _, err := Open(dir, testOpts()); !errors.As(err, &ce) || ce.File != last {
		t.Fatalf("Open with the WAL segment after the checkpoint gone = %v, want a CorruptionError naming %s", err, last)
	}
	rep, err := Repair(dir, Options{})
	if err != nil || len(rep.MissingWAL) != 1 || rep.MissingWAL[0] != last {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	db := openT(t, dir, testOpts())
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("c")
	if n, _ := c.Count(nil); n != 40 {
		t.Fatalf("Count = %d, want the 40 flushed records", n)
	}
	if err := c.Upsert(ctx, mkRecords(rand.New(rand.NewPCG(1, 1)), 4, 500, 3)); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	db.Close()
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, _ = db.Collection("c")
	if n, _ := c.Count(nil); n != 43 {
		t.Fatalf("Count after writing past the repair = %d, want 43", n)
	}
}

// TestOldWALDamage: a byte flipped in a WAL segment whose records are all
// in segment files. Before, Open refused the store and Repair cut the log
// there, dropping the next segment's records; now Open works, Check
// reports it, Repair removes the old segment and nothing is lost.
func TestOldWALDamage(t *testing.T) {
	dir, verify := stateStore(t)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	if len(segs) < 2 {
		t.Fatalf("WAL segments %q, want an old one and the tail", segs)
	}
	st, _ := os.Stat(segs[0])
	flipByte(t, segs[0], int(st.Size()/2))
	db, err := Open(dir, testOpts())
	if err != nil {
		t.Fatalf("Open with a damaged obsolete WAL segment: %v", err)
	}
	verify(t, db)
	if err := db.Check(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check = %v, want ErrCorrupt", err)
	}
	db.noCloseFlush = true
	db.Close()
	rep, err := Repair(dir, Options{})
	if err != nil || len(rep.ObsoleteWALRemoved) != 1 || len(rep.WALLost) != 0 {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	verify(t, db)
	if err := db.Check(); err != nil {
		t.Errorf("Check after Repair: %v", err)
	}
}
