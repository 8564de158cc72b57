// Package vfs is the small file system interface the storage packages (wal,
// engine) do all their file I/O through, so tests can inject failures and
// simulate crashes.
//
// FS has the operations a crash-safe store needs and no more: OpenFile,
// Remove, Rename, ReadDir, MkdirAll, Stat and SyncDir (fsync of a directory,
// which makes creations, removals and renames durable). File adds Sync, which is a
// data sync (fdatasync on Linux: it persists the data and the size, not the
// mtime), ReadAt, Write, Truncate and Stat.
//
// Map gives a file's whole contents read-only: an mmap for OS files (they
// implement Mapper), a snapshot copy for MemFS files, a ReadAt copy for any
// other File. Locker is the optional interface of a file system that
// excludes concurrent users itself (MemFS); on the OS, callers flock.
//
// OS is the real file system. Its files also have Fd() uintptr.
//
// MemFS is an in-memory FS for tests. It keeps two views: what the running
// process sees (the page cache) and what a power loss would leave (data
// made durable by File.Sync, directory entries made durable by SyncDir).
// Crash returns the second as a fresh MemFS. InjectError makes the n-th
// matching operation fail once with a chosen error (ENOSPC, EIO, ...); a
// failed write first writes half its bytes, as a short write would.
//
// FullFS wraps any FS as a disk that fills up and frees again (SetFull):
// while full, every file write fails with ENOSPC after half its bytes.
//
// # Caveats
//
// MemFS directories are durable as soon as MkdirAll returns unless
// RequireDirSync asks for SyncDir of the parent as for files; a crash keeps a
// durable file's synced data whole (no torn sectors; tests that want those
// damage bytes themselves with SetBytes), and it copies a file's contents on
// every Sync, so it is meant for small test data.
package vfs
