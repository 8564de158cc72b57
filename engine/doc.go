// Package engine is engram's storage engine: one crash-safe directory
// holding collections of records (string ID, vector, text, typed metadata,
// timestamps, access statistics), searched by vector (HNSW over int8 codes,
// rescored with float32 vectors) and by keyword (BM25), with one filter
// language.
//
//	db, err := engine.Open(dir, engine.Options{})
//	coll, err := db.CreateCollection(engine.CollectionConfig{Name: "notes", Dim: 384, Metric: quant.Cosine, Fingerprint: fp})
//	err = coll.Upsert(ctx, []engine.Record{{ID: "a", Vector: v, Text: "...", Meta: engine.Metadata{"session": engine.String("s1")}}})
//	hits, err := coll.Search(ctx, engine.SearchRequest{Vector: q, K: 5, Filter: engine.Eq("session", engine.String("s1"))})
//	err = db.Close()
//
// # Directory
//
//	LOCK        flock'ed by the open handle; holds its pid and a note (SetLockNote, ReadLock)
//	MANIFEST-NNNNNN  live segments, per-record state, KV namespace, WAL
//	            checkpoint; the newest and the previous one are kept
//	CURRENT     names the newest manifest (docs/format/manifest.md)
//	wal/        the write-ahead log (package wal)
//	seg/NNNNNNNN.seg   immutable segment files (docs/format/segment.md)
//	KEYS        an encrypted store's data keys, sealed under its passphrase or
//	            key file (Options.Key; docs/format/encryption.md)
//
// Files are created 0600 and directories 0700.
//
// # Write path
//
// Every mutation (Upsert batch, Delete, Touch, KV Put/Delete, collection
// create/drop) is validated completely, encoded as one WAL record, appended
// (fsynced unless Options.UnsafeNoSync), then applied to the in-memory
// state, and only then acknowledged. Invalid input returns an error and
// writes nothing. Writers are serialized by one mutex; readers never take it.
//
// # Mutable index and segments
//
// Each collection has a mutable part (an hnsw.Index, a keyword.Index and the
// records, indexed by dense node id) and a list of immutable segments. Flush
// writes every non-empty mutable part as a segment file (tmp, fsync,
// rename, fsync dir), then the next numbered manifest the same way and
// CURRENT, then removes what only older manifests needed: the manifests
// before the previous one, segment files neither of the two names, and the
// WAL behind the previous manifest's checkpoint. A segment holds the hnsw layout searched in place
// from the mmap (codes, vectors, graph), the id map (by node and sorted for
// binary search), metadata columns (per field and kind: a presence bitmap
// or node list and the values, read in place; a filter is compiled per
// segment against the columns of the fields it names, so it reads nothing
// else), zstd-compressed texts, the BM25 index,
// the timestamps and the postings of the namespace field. Segments never
// change. State that changes after a flush lives outside them, in the
// manifest (and the WAL until the next flush): the set of deleted or
// overwritten nodes per segment, and access statistics newer than the
// segment's copy ("overrides", keyed by record ID).
//
// The manifest is only written with every mutable part empty, so it always
// describes exactly the state at its WAL checkpoint; replay of the WAL tail
// then reproduces every acknowledged write. Touch is logged with the
// resulting absolute counts so that replay is deterministic.
//
// Open = lock + manifest + mmap of each segment (trailer, section table
// and each section's header, parsed once into typed values) + WAL tail
// replay. Nothing is rebuilt and segment bodies are not
// read, so open time does not grow with the data beyond the mapping. Close
// flushes, so a cleanly closed store replays nothing.
//
// # Search
//
// Search fans out over the mutable index and every segment, each searched
// with the filter applied during traversal (deleted nodes and filtered-out
// records never enter the result heap), takes the k best of each rescored
// with float32 vectors, and merges them by distance (ties by ID). An
// equality on Options.NamespaceField (default "session") is served by the
// segment's postings: the candidate set becomes a bitset, which lets hnsw
// scan it exactly when it is small. The segment caches the bitsets (and
// their node lists, for BM25) of the sessions searched last, within 1 MiB
// a segment, each valid for the segment's deletion count: the vector and
// text sides of a hybrid recall, and a conversation's next recalls, share
// one instead of each rebuilding it. Exact: true scans every live record
// with float32 distances (the oracle the tests compare against).
// SearchText runs BM25 over the mutable keyword index and every segment's
// with collection-wide statistics, with the same per-part filters. Hits
// carry a copy of the record; NoText skips decompressing texts (zstd
// blocks of about 2 KiB; a segment caches the last 64 it decoded) and
// IDsOnly skips the record altogether.
//
// # Compaction
//
// Compact (and the background loop, when a collection has many segments or
// many deleted records) merges segments: it reads the live records of the
// chosen segments, builds a new graph and segment file without holding the
// write lock, then, under the write lock, flushes the mutable parts,
// carries over deletes that happened meanwhile, swaps the segment list and
// writes the manifest. Old files are removed only after a manifest that no
// longer names them is durable. Background compaction writes through a
// rate limiter (Options.CompactBytesPerSec).
//
// The new graph starts as a copy of the largest input's, when that input
// has no deleted records and at least 1,024 nodes (hnsw.FromView, after
// verifying it whole): only the other inputs' vectors are inserted, which
// is most of a merge's work (30,000 + 3 x 1,000 records of 64-d: 2 s
// instead of 12). An input with deletions is rebuilt, so the merged graph
// never keeps a deleted node. Compact, RotateKeys and the like insert from
// as many goroutines as GOMAXPROCS (hnsw.InsertBatch); the background
// policy and the rewrites a purge asks for insert from one, leaving the
// other cores to searches.
//
// A merge holds the new graph in memory, float vectors included (4 KiB a
// 1024-d record), so its memory is about the merged records' size; it
// keeps that from doubling by making little garbage for the collector to
// let pile up: the graph is sized for its records up front instead of
// grown, vectors are read into arrays reused from batch to batch, and
// record checksums are computed in pooled buffers (BenchmarkMergeMemory).
//
// Before it is written, a merged segment's nodes are ordered by their
// Options.NamespaceField value, and within a session (or a store without
// sessions) in the graph's locality order, a breadth-first walk of its
// level 0 (hnsw.Index.LocalityOrder: a node's neighbours get nearby ids,
// so an expansion's codes share cache lines and pages; 15-20% more
// queries per CPU second on 1M x 100-d) (hnsw.Index.Permute renumbers the graph,
// keyword.Index.Renumber the postings). A session's records are then a run
// of node ids: its exact vector scan reads codes in sequence, and BM25
// reads only the blocks of each posting list that hold that run. At 1M
// memories in 10,000 sessions (bench/results/scale-1m.md) this is what
// keeps sessions holding 1-10% of the store near a small session's
// latency. Flushed segments keep insertion order; node order carries no
// meaning beyond locality (ties between equal scores break by it).
//
// # Repair
//
// Repair (on a closed store) replaces damaged manifests with one written
// from the newest readable manifest, or rebuilds one from seg/ and wal/
// when none is readable (each segment describes itself; the newest copy
// of a record wins; the whole WAL is replayed over it), drops a previous
// manifest that can no longer serve as a fallback, gives up only the
// damaged stretches of the WAL (each becomes a hole, so the intact records
// after it keep their LSNs; a damaged or cut end is zero-filled; the bytes
// given up are kept in wal/NNNNNNNN.OFFSET.lost), sets aside files in wal/
// that only look like segments, rebuilds segment files that fail their
// checks and removes missing segment files from the manifest, reporting
// what was lost. Derived data
// (graph, int8 codes, keyword and namespace postings, sorted ids, column
// ranks, record checksums) is rebuilt, never a reason to drop a record: a
// damaged file's records whose primary data (ID, vector, text, metadata,
// times) is proven intact, by their record checksums (format version 3) or
// by the checksums of the primary sections (older files), are rewritten
// into a new file. The others are named in RepairReport.LostRecords and
// exported, as far as readable, to seg/NAME.lost (docs/format/quarantine.md);
// a file that lost records is kept as seg/NAME.corrupt. A file whose
// section table or trailer is damaged loses nothing to it: each section
// is located by its own checksum where the writer's layout puts it (an
// entry whose checksum field is what was hit, by the trailer's checksum
// of the table rebuilt around it). Compact rebuilds
// derived data too (it reads records only, each verified the same way)
// and refuses to copy a record whose primary data is damaged.
//
// # Recovery guarantees
//
// Damage -> detected by -> repaired how -> lost (docs/format/recovery.md
// has the full table; TestCorruptionMatrix exercises every row):
//
//	derived segment data (graph, codes, postings, sorted ids, sums, info)
//	    -> section checksum at first use, Check -> Repair/Compact rebuild it
//	    from the records -> nothing
//	primary segment data (vector, ID, text block, time, metadata value)
//	    -> same, plus record checksums -> Repair keeps every record whose
//	    checksum matches -> exactly the destroyed records, named and
//	    exported to seg/NAME.lost
//	segment section table or trailer damaged -> Open (collection
//	    unavailable), Check -> Repair locates every section by its own
//	    checksum where the writer's layout puts it (an entry whose checksum
//	    was hit: by the trailer's checksum of the table) and rewrites the
//	    file -> nothing
//	segment file deleted or truncated -> Open (collection unavailable),
//	    Check -> Repair drops it from the manifest (appended garbage: cut
//	    off) -> its records
//	newest manifest or CURRENT damaged or deleted -> Check (Open uses the
//	    previous manifest and the WAL since its checkpoint) -> Repair
//	    writes a fresh manifest -> nothing
//	every manifest lost -> Open refuses (ErrCorrupt) -> Repair rebuilds
//	    one from seg/ and wal/ -> deletes, access counts and KV entries
//	    older than the WAL's first record
//	WAL record after the checkpoint damaged (flipped, zeroed) -> Open (an
//	    intact record follows it) -> Repair overwrites it with a hole, the
//	    later records keep their LSNs, its bytes kept aside
//	    (RepairReport.WALLost) -> that record
//	the last WAL record damaged, its framing whole (no fragment header
//	    missing, no all-zero sector) -> Open (wal.ErrDamagedRecord: not a
//	    torn append) -> Repair zero-fills it, its bytes kept aside -> that
//	    record
//	the last WAL record torn (a header missing, a sector all zeros) ->
//	    never acknowledged: Open cuts it, logs it (Options.Logger) and
//	    lists it (OpenActions) -> nothing acknowledged
//	WAL segment after the checkpoint truncated, emptied or cut inside its
//	    header -> Open (segments are created whole and preallocated:
//	    shorter than its header says is not a torn tail; an empty segment
//	    is its header and zeros) -> Repair restores its header and size ->
//	    the records past the cut
//	WAL segment after the checkpoint deleted -> Open (the manifest names
//	    it) -> Repair continues the log after it -> what it held
//	garbage appended to a WAL segment -> Check (Open ignores bytes past a
//	    segment's size) -> Repair cuts them -> nothing
//	WAL segment wholly before the checkpoint damaged -> Check -> Repair
//	    deletes it -> nothing
//	the previous manifest's WAL or files deleted -> Check (the fallback
//	    can no longer be replayed) -> Repair drops the fallback -> nothing
//	LOCK, unknown files -> nothing to repair (UnknownFiles reports foreign
//	    files) -> nothing
//	a foreign file named like a WAL segment or a segment file -> Check
//	    (UnknownFiles); never read as the store's nor removed -> Open and
//	    Repair set a WAL-named one aside as wal/NNNNNNNN.foreign -> nothing
//	disk full (ENOSPC) or an I/O error on a WAL write or sync -> the write
//	    returns it, nothing applied -> the WAL undoes the failed write
//	    before returning (cut back to the last good record, synced); the
//	    next write goes through once the cause clears, no reopen -> the
//	    failed write only (its caller was told)
//	disk full or an I/O error in a flush, compaction or manifest write ->
//	    the call returns it (background: Stats.BackgroundError) -> its
//	    files are removed; the store serves on from memory and the WAL,
//	    and the next flush succeeds -> nothing
//
// Check never writes: CheckDir (memctl check) opens the store with
// Options.ReadOnly and reports what a writable open would do
// (CheckReport.Actions) instead of doing it.
//
// A write that failed is never applied and never replays later: the WAL
// cuts off what the failed append left in the file, even a whole record
// whose sync failed, before the error reaches the caller. Only when that
// undo fails too (the error wraps wal.ErrPoisoned; every later write
// retries it and fails until it succeeds) can a crash before it succeeds
// bring the failed write back at the next Open, like a write whose
// acknowledgment was lost.
//
// # What survives what
//
// A flush rolls the WAL to a new segment, durably, before its manifest
// names it (with the LSN durable then): a WAL that ends before that
// segment lost the writes after the checkpoint, and Open refuses it as
// corruption (Repair says so and continues the log above every LSN it
// handed out) instead of starting over as if it were clean. WAL segments
// wholly before the checkpoint are not read at Open, so damage there
// blocks nothing; Check reports it and Repair deletes them (their records
// are in segment files).
//
// Any single damaged or missing manifest or CURRENT costs nothing: Open
// uses the previous manifest and replays the WAL from its checkpoint,
// which holds every delete, overwrite, access count and KV write since
// (Check reports the damage; Repair writes a fresh manifest). Losing every
// manifest loses only what both of the last two held alone: deletes and
// access counts of segment records, and KV entries, older than the WAL's
// first record (Repair rebuilds the rest). docs/format/manifest.md has the
// table.
//
// # Locks
//
// Four mutexes, always taken in this order (a holder of a later one never
// waits for an earlier one):
//
//	compactMu -> writeMu -> DB.mu -> Collection.mu
//
// What each guards:
//
//   - DB.compactMu: one compaction at a time; Close and DropCollection take
//     it first, so a compaction's input segments stay mapped while it runs.
//   - DB.writeMu: serializes every mutation (WAL append + apply), Flush,
//     Check and the install step of compaction. Readers never take it.
//   - DB.mu (RWMutex): the collection map and the KV namespace, for
//     readers; writers change them holding writeMu too.
//   - Collection.mu (RWMutex): a collection's mutable part and segment
//     list; readers take it shared, the apply and install steps exclusive.
//
// A segment's own caches (its sync.Once-built keyword index and namespace
// postings, and cacheMu over decoded text blocks) are leaves: nothing else
// is taken while holding them.
//
// # Crash safety
//
// A crash at any point leaves the newest manifest (the new one or the one
// before) and the files it names; segment files no readable manifest names
// (NNNNNNNN.seg and its .tmp: half-written or superseded segments) are
// deleted at the next Open, unless a manifest is damaged (then only
// temporaries); an NNNNNNNN.seg without the segment magic at either end
// was not written by the engine (it renames a segment into place only once
// whole) and stays. Open never deletes anything else: other files and
// directories in seg/ and wal/ are ignored, and a file named like a WAL
// segment that is not one is renamed to NNNNNNNN.foreign (wal.md). A directory without a
// readable manifest while seg/ or wal/ hold data is not a new store: Open
// refuses it with a *CorruptionError and writes nothing. Acknowledged
// writes are in the WAL behind the checkpoint or in a named segment.
//
// A power loss (which keeps only what was fsynced) is held to the same:
// every file is synced before its rename and its directory after, and a
// directory the engine makes (the store's, seg/, wal/, a backup's) is
// synced into its parent when made. All store I/O goes through
// Options.FS (the LOCK file excepted: see FS), so TestPowerLoss runs the
// crash loop on a vfs.MemFS that drops everything not synced, cutting the
// power before random (and, in TestPowerLossEveryPoint, each) file system
// operations; TestPowerLossCatchesMissingSync shows it fails when one of
// those directory syncs is dropped.
//
// # Caveats
//
//   - One process, one handle: a second Open of the same directory fails
//     with ErrLocked naming the holder's pid (flock; Unix only).
//   - Writes are serialized; Flush and the install step of compaction block
//     writers (not readers) while segment files are written.
//   - Open verifies each segment's trailer, section table and chunk table;
//     nothing is answered from bytes not verified since open: a small
//     section's checksum is verified at its first use (once per section
//     and open: a record read verifies the id, metadata, text and time
//     sections; BM25 and namespace lookups their own), the graph section
//     (codes, vectors, lists) chunk by chunk (4 KiB) as searches and
//     vector reads touch it, and a mismatch is returned as a
//     *CorruptionError (ErrCorrupt) every time, never a result. Check (a
//     full read) and Options.VerifyOnOpen verify all at once. The first
//     search of a store verifies the chunks it touches, a small part of the
//     file (Open-to-first-answer figures at 1M x 1024-d are in
//     bench/results/engine.md); files of format 3 and older have no chunk
//     table and verify their graph section whole until Compact rewrites them. A segment
//     that fails to open makes its collection unavailable (calls return
//     the *CorruptionError naming the file) without affecting other
//     collections; Flush and Compact are refused until that collection is
//     dropped or the file restored.
//   - Deleted records' space is reclaimed by compaction only; the manifest
//     grows with deletes and Touch'ed segment records until then.
//   - Open reads the WAL that is not yet flushed: WAL segments are 8 MiB
//     and every segment fully covered by a checkpoint is deleted, so that
//     is the unflushed tail (at most about Options.FlushBytes, and nothing
//     after Close, which flushes) plus at most one segment.
//   - A batch (one WAL record) is at most MaxBatchBytes encoded.
//   - Options.ReadOnly (CheckDir, memctl check) reads a store without
//     writing to it: the WAL tail is replayed into memory only, and every
//     write returns ErrReadOnly. It still takes the lock (a store another
//     handle holds is ErrLocked), and creates an empty LOCK file where
//     none is.
//   - Check verifies checksums, the graph's structure (hnsw View.Verify)
//     and, by a full breadth-first walk of each segment's graph from its
//     entry point (level-0 and upper lists, read in place), that every
//     live record is reached and is not a graph tombstone. Unreached live
//     records give an *UnreachableError (reported only when nothing else
//     is wrong), which is not corruption: Repair keeps the file, and Get,
//     Scan, SearchText and Exact search still return those records.
//     hnsw links every live node before it writes a graph (its
//     Reachability section), so only files written by older builds (which
//     cut off up to half of a crowd of identical vectors, and many nodes
//     under Dot) or a bug give it; compaction rewrites the graph.
//   - Segment format version 3 (written now) is self-describing: its info
//     section names the collection, dimension, metric, fingerprint, the
//     file's own number, the WAL position it covers, the nodes dead when
//     written and the files it supersedes (readSegHeader), and a sums
//     section holds a checksum per record. Versions 2 (metadata columns)
//     and 1 (metadata rows, read as rows) still open, until compaction
//     rewrites them. Costs per record grow with the number of distinct
//     metadata fields in a segment.
//   - Records returned by Get, Scan and Search are copies; vectors of a
//     Cosine collection come back L2-normalized.
//   - Limits: MaxIDLen, MaxTextLen, MaxMetaKeys, MaxMetaKeyLen,
//     MaxMetaBytes, MaxDim, MaxBatchRecords.
//
// # Files
//
// A file per phase of a store's life or per format, as Pebble splits them:
//
//	open.go            Options, Open: lock, manifests, WAL replay, leftovers
//	db.go              the DB, its collection catalogue, the write log, Close, the background loop
//	flush.go           Flush: memtables into segments, manifest writing, WAL truncation
//	compact.go         Compact and the background policy
//	check.go           Check, CheckDir (read-only)   repair.go, salvage.go, rebuild.go  Repair
//	backup.go, stats.go, knownfiles.go (files the store does not own)
//	manifestcodec.go   one manifest's encoding      manifestfiles.go  the manifest files, CURRENT
//	segwrite.go        building a segment's sections   segment.go  an open segment's reads
//	segcontainer.go    the file container: section table, trailer, chunk checksums
//	seginfo.go, segsections.go  the info section, the typed sections parsed at open
//	walrec.go          WAL record encoding           collection.go, search.go  the collection API
//	encrypt.go         Options.Key, KEYS, sealed WAL records, ChangeKey, DestroySessionKey, ReleaseSessionKey
//	sealedseg.go       sealed segment files of an encrypted store: the file key, the chunked seal, decryption at open
//	sealedstream.go    sealed streams (export --encrypt): NewSealedWriter, NewSealedReader
package engine
