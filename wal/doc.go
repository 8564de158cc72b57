// Package wal is engram's write-ahead log: every write is appended here,
// made durable, and only then applied and acknowledged; recovery replays
// the log from the last checkpoint. The byte format is specified in
// docs/format/wal.md.
//
// # API
//
//	l, err := wal.Open(dir, wal.Options{})        // creates dir (0700) if needed
//	lsn, err := l.Append(payload)                 // durable on return (Always mode)
//	err = l.Replay(from, func(lsn wal.LSN, rec []byte) error { ... })
//	err = l.TruncateBefore(checkpointLSN)         // delete whole old segments
//	err = l.Close()
//
// Also: Sync (make everything durable in any mode), LastLSN, Stats (appends,
// writes, syncs and time spent syncing), Holes (where Repair gave records
// up), Recovery (what Open cut or set aside), Repair (give up only the
// damaged bytes), ListSegments (which files are segments), and NewReader,
// which reads one segment's bytes (tools, Check, fuzzing; Resync looks past
// damage). Options.ReadOnly opens a log without writing to it.
//
// An LSN is (segment number << 32 | byte offset of the record in the
// segment): it grows with every record, zero is before all records, and
// Replay(lsn+1, ...) replays everything after the record at lsn. A checkpoint
// stores the LSN of the last record it covers. LSNs are never reused: the
// first append after Open starts a new segment when the newest one holds
// records (or lost a torn tail), and Repair fixes segments in place and
// adds a new one, so a record appended later always has a larger LSN than
// any checkpoint taken before. Replay from past the end of
// the log is ErrPastEnd: the checkpoint is ahead of the log.
//
// # Files
//
// dir holds only segments, named with 8-digit zero-padded numbers
// (00000001, 00000002, ...) so they sort in log order. Open ignores (and
// never removes) files with other names, refuses a directory holding such
// files but no segment (ErrNotWAL, unless Options.OwnDir), and reports a
// gap in the numbers as a *CorruptionError. A file under a segment's name
// that is not a segment (ListSegments: neither the magic nor its own
// number in its header, nor zeros or an intact fragment after it; or
// shorter than a header after a gap) is not the log's: Open and Repair
// rename it to NNNNNNNN.foreign and log it, never reading or removing it.
// Repair keeps the bytes it gives up in NNNNNNNN.OFFSET.lost
// (Loss.Saved). Options.IgnoreBefore names the
// first segment the caller still needs: older ones are neither verified
// nor checked for gaps, so damage there (records a checkpoint already
// covers) blocks nothing. Roll starts a new segment durably, so a
// checkpoint can name the segment that must follow it: one missing is
// then loss, not a clean end. A segment starts with a 16-byte header
// (magic, format version, its size, its own number, checksum) and is cut
// into 32 KiB pages. It is preallocated (format version 2): created as a
// temporary at its full size (SegmentSize rounded up to pages), zero-filled,
// synced and renamed into place, then written in place. So a torn append
// leaves zeros within the file, a file shorter than its header says (or
// than a header: a segment is never created shorter, so an emptied one was
// cut) was truncated (ErrTruncated: corruption, not a clean end), and bytes after it
// were appended by something else (ErrTrailingBytes: ignored by Open,
// reported by Reader, cut by Repair). Version 1 segments (not
// preallocated) are still read; the log never appends to one. A record is
// a sequence of fragments (full, or first/middle.../last) that never
// crosses a page boundary; each fragment carries a type byte, a
// length and a CRC32C over type, length and stored bytes. A record never
// spans segments. Payloads of 32 bytes or more are compressed with zstd
// (klauspost/compress, fastest level) and stored raw, with the flag bit
// clear, when that does not make them smaller.
//
// # Durability
//
// Appends are framed under a mutex into an in-memory buffer. Whichever
// appender finds no flush in progress becomes the leader: it takes the
// buffer, writes it with one write call and, in Always mode, one fdatasync,
// then wakes everyone whose record it covered. Appenders arriving meanwhile
// queue into the next buffer, so N concurrent writers share one fdatasync
// (group commit) while a lone writer pays exactly one per append. Interval(d)
// hands records to the OS at once and syncs every d; UnsafeNoSync syncs only
// in Sync, Close and when a segment fills up. In every mode a new segment is
// created only after the previous one is synced, and the directory is
// synced after creating or deleting segments, so only the newest segment
// can have a torn tail.
//
// A failed write or sync (a full disk, an I/O error) fails every record of
// its group and of the queue behind it, and is undone before the appenders
// hear of it: segments the group started are removed and the one it wrote
// into is cut back (zero-filled) to where the last good flush ended, then synced; the
// next record starts a new segment. The sync is never simply retried: the
// kernel may already have dropped the dirty pages and marked them clean
// ("fsyncgate"), so a retry could falsely succeed; cutting the bytes off
// and syncing the cut does not depend on them. So a failed append is never
// in the log, not even as a whole record whose sync failed, and the log
// takes the next append as soon as the cause has cleared, without a
// reopen. Only if the undo fails too (ErrPoisoned) may a crash before it
// succeeds leave the failed records to replay at the next Open; every call
// retries the undo until then. LSNs of undone records are handed out again.
//
// # Recovery
//
// Open reads every segment and checks every checksum (without
// decompressing). Damage in the newest segment with no intact record after
// it (looked for right after the damaged fragment, at every byte of the
// rest of its page and at every later page start) that shows what an
// append that stopped short leaves (a fragment header missing or out of
// sequence, a 512-byte sector of the record all zeros) is a torn tail: an
// append that was never acknowledged. Open zero-fills it, syncs, logs a
// warning to Options.Logger and says so in Recovery. A last record whose
// framing is whole but whose checksum fails was written completely and
// damaged since: ErrDamagedRecord, never cut. That and any other damage (a
// bad checksum followed by intact data, a damaged older segment, a
// truncated or missing segment) is returned as a
// *CorruptionError{Segment, Offset, Err}; nothing is skipped silently. Repair(dir, opts, err) gives up only the damaged bytes: it
// overwrites each damaged stretch with hole fragments, so every intact
// record after it survives at its LSN, zero-fills a torn or truncated end,
// cuts trailing bytes, rewrites a damaged header, creates a missing
// segment, and returns the stretches lost ([]Loss). Log.Holes tells a
// caller that records may be missing between the ones it replays.
//
// All I/O goes through Options.FS (internal/vfs), so tests inject short
// writes, ENOSPC, fsync failures and power loss (vfs.MemFS.Crash).
//
// # Caveats
//
//   - A payload is at most MaxRecordSize (16 MiB) and must fit, compressed
//     and framed, in one segment: a 64 KiB segment holds at most about 63 KiB.
//   - An Append that returns an error other than ErrRecordTooLarge or
//     ErrClosed may still have reached the disk: after reopening, its record
//     may or may not be replayed.
//   - The slice Replay passes to its callback is reused; copy it to keep it.
//   - TruncateBefore must not run concurrently with a Replay that reads the
//     segments it deletes.
//   - Open reads the whole log; keep it short by truncating after
//     checkpoints. Each session that appends starts a segment, so
//     TruncateBefore also sweeps the small segments of short sessions.
//   - Open writes only to cut a torn tail and to set aside files that are
//     not segments; a full disk fails the first Append instead (and
//     poisons the log). With Options.ReadOnly it writes nothing.
//   - One Log per directory: nothing here locks it (the engine's LOCK file
//     does).
//   - Resync (Repair's look past damage) trusts any fragment whose CRC32C
//     holds: a payload that embeds a framed fragment could be taken for a
//     record when damage lies just before it. Open never resyncs.
//   - Segments take their full size on creation (sparse where the file
//     system allows); the engine's are 8 MiB.
//   - A power loss may persist the sectors of an unsynced write out of order.
//     If a later sector of a never-acknowledged write survives while an
//     earlier one is lost, the damage looks like corruption rather than a
//     torn tail: Open returns a *CorruptionError, and Repair is the remedy
//     (it drops only what follows the damage).
package wal
