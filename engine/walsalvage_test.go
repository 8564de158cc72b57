package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestWALSalvageAcrossLostCreate: when the WAL record Repair gives up is a
// collection's creation, the later records on that collection cannot be
// applied and are skipped at replay, while every other later record is
// kept: the store opens with a clean Check and loses only what depended
// on the destroyed bytes.
func TestWALSalvageAcrossLostCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	m, err := db.CreateCollection(CollectionConfig{Name: "m", Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil { // the checkpoint is before what follows
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	before := mkRecords(r, 4, 0, 3)
	if err := m.Upsert(ctx, before); err != nil {
		t.Fatal(err)
	}
	x, err := db.CreateCollection(CollectionConfig{Name: "x", Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	create := db.lastLSN
	if err := x.Upsert(ctx, mkRecords(r, 4, 100, 2)); err != nil {
		t.Fatal(err)
	}
	after := mkRecords(r, 4, 200, 3)
	if err := m.Upsert(ctx, after); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(dir, "wal", fmt.Sprintf("%08d", create.Segment())), int(create.Offset())+fragHeaderLen+2)
	if _, err := Open(dir, testOpts()); err == nil {
		t.Fatal("Open accepted a damaged WAL record followed by intact ones")
	}
	rep, err := Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.WALLost) != 1 || rep.WALLost[0].LSN != create {
		t.Fatalf("WALLost = %+v, want the create at %v", rep.WALLost, create)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("x"); err == nil {
		t.Fatal("collection x exists though its creation was destroyed")
	}
	if db.replaySkipped != 1 {
		t.Fatalf("%d ops skipped at replay, want the one upsert into x", db.replaySkipped)
	}
	m, _ = db.Collection("m")
	for _, rec := range append(before, after...) {
		if got, err := m.Get(rec.ID); err != nil || got.Text != rec.Text {
			t.Fatalf("%s lost: %v", rec.ID, err)
		}
	}
}

// fragHeaderLen is the WAL's fragment header (type, length, CRC32C).
const fragHeaderLen = 7
