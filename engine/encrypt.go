package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/engramdb/engram/internal/crypt"
	"github.com/engramdb/engram/wal"
)

// Encryption at rest (docs/format/encryption.md): a store created with
// Options.Key holds its data keys in KEYS, sealed under a key-encryption
// key derived from the passphrase (argon2id) or taken from a key file, and
// seals every WAL record with them.

var (
	// ErrWrongKey: the store's KEYS file is intact and the passphrase or
	// key file given does not open it. Nothing was written.
	ErrWrongKey = errors.New("engine: wrong passphrase or key")
	// ErrKeyRequired: the store is encrypted and no key was given.
	ErrKeyRequired = errors.New("engine: the store is encrypted: give its passphrase or key file")
)

// keysName is the key store file in the store directory.
const keysName = "KEYS"

// Key unlocks an encrypted store, or makes a new store encrypted: exactly
// one of Passphrase and KeyFile. Take them from a prompt, a file or the
// environment, never from a command line.
type Key struct {
	// Passphrase derives the key-encryption key with argon2id.
	Passphrase []byte
	// KeyFile is a key file's contents: 32 bytes, or 64 hex digits and
	// an optional newline.
	KeyFile []byte
	// ArgonTime, ArgonMemoryKiB and ArgonThreads set the argon2id cost
	// of a store being created or a passphrase being changed (0: 3
	// passes, 64 MiB, 4 threads). Lower them only in tests; a store
	// records its own and readers use those.
	ArgonTime, ArgonMemoryKiB uint32
	ArgonThreads              uint8
}

func (k *Key) secret() (crypt.Secret, error) {
	if len(k.KeyFile) > 0 && len(k.Passphrase) > 0 {
		return crypt.Secret{}, fmt.Errorf("%w: a passphrase or a key file, not both", ErrInvalid)
	}
	if len(k.KeyFile) > 0 {
		raw, err := crypt.ParseKeyFile(k.KeyFile)
		if err != nil {
			return crypt.Secret{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return crypt.Secret{Key: raw}, nil
	}
	if len(k.Passphrase) == 0 {
		return crypt.Secret{}, fmt.Errorf("%w: empty passphrase", ErrInvalid)
	}
	return crypt.Secret{Passphrase: k.Passphrase}, nil
}

func (k *Key) kdf() crypt.KDF {
	return crypt.KDF{Time: k.ArgonTime, MemoryKiB: k.ArgonMemoryKiB, Threads: k.ArgonThreads}
}

// NewKeyFile returns a new random key in key file form (64 hex digits
// and a newline), for Key.KeyFile; store it 0600, apart from the store.
func NewKeyFile() []byte { return crypt.NewKeyFile() }

// IsEncrypted reports whether the store in dir is encrypted (has KEYS).
func IsEncrypted(fsys FS, dir string) (bool, error) {
	if fsys == nil {
		fsys = Options{}.withDefaults().FS
	}
	_, err := fsys.Stat(filepath.Join(dir, keysName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func readKeysFile(fsys FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > 1<<27 {
		return nil, &CorruptionError{File: path, Err: fmt.Errorf("key store of %d bytes", st.Size())}
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// loadKeys opens dir's KEYS with key. It returns nil keys for a store
// without KEYS that key does not ask to encrypt; it never writes.
func loadKeys(fsys FS, dir string, key *Key, fresh bool) (*crypt.Keys, error) {
	path := filepath.Join(dir, keysName)
	b, err := readKeysFile(fsys, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if key != nil && !fresh {
			if hasSealedSegments(fsys, dir) {
				return nil, fmt.Errorf("%w: %s has sealed segment files but no KEYS: it is a backup of an encrypted store taken without its keys; copy the store's KEYS file into it", ErrKeyRequired, dir)
			}
			return nil, fmt.Errorf("%w: %s is not encrypted (encryption is chosen when a store is created)", ErrInvalid, dir)
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("engine: read %s: %w", path, err)
	case key == nil:
		return nil, fmt.Errorf("%w (%s)", ErrKeyRequired, dir)
	}
	s, err := key.secret()
	if err != nil {
		return nil, err
	}
	k, err := crypt.Decode(b, s)
	switch {
	case errors.Is(err, crypt.ErrWrongKey):
		return nil, fmt.Errorf("%w: %v", ErrWrongKey, err)
	case errors.Is(err, crypt.ErrCorrupt):
		return nil, &CorruptionError{File: path, Err: err}
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return k, nil
}

// hasSealedSegments reports whether dir/seg holds a sealed segment file.
func hasSealedSegments(fsys FS, dir string) bool {
	names, err := fsys.ReadDir(filepath.Join(dir, "seg"))
	if err != nil {
		return false
	}
	for _, n := range names {
		if _, ok := segFileNumber(n); !ok {
			continue
		}
		if f, err := fsys.OpenFile(filepath.Join(dir, "seg", n), os.O_RDONLY, 0); err == nil {
			sealed := isSealedSegment(f)
			f.Close()
			if sealed {
				return true
			}
		}
	}
	return false
}

// writeKeys seals k under key and replaces dir's KEYS durably.
func writeKeys(fsys FS, dir string, k *crypt.Keys, key *Key) error {
	s, err := key.secret()
	if err != nil {
		return err
	}
	b, err := crypt.Encode(k, s, key.kdf())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return writeFileAtomic(fsys, dir, keysName, b)
}

// ChangeKey re-seals the data keys of the closed encrypted store in dir
// under a new passphrase or key file (a passphrase store can move to a
// key file and back). No data is rewritten: KEYS is replaced atomically,
// so a crash leaves either the old or the new one. A wrong old key is
// ErrWrongKey and writes nothing.
func ChangeKey(dir string, opts Options, old, new *Key) error {
	opts = opts.withDefaults()
	if old == nil || new == nil {
		return fmt.Errorf("%w: ChangeKey needs the old and the new key", ErrInvalid)
	}
	if _, err := new.secret(); err != nil {
		return err
	}
	// A wrong old key is refused before the lock file is written.
	if _, err := loadKeys(opts.FS, dir, old, false); err != nil {
		return err
	}
	lock, err := lockDir(opts.FS, filepath.Join(dir, "LOCK"), false)
	if err != nil {
		return err
	}
	defer lock.unlock()
	k, err := loadKeys(opts.FS, dir, old, false)
	if err != nil {
		return err
	}
	return writeKeys(opts.FS, dir, k, new)
}

// DestroySessionKey destroys the data key of the given session (a value
// of Options.NamespaceField) in an encrypted store: whatever it sealed, in
// this store's WAL and in copies and backups of it, can no longer be read
// with the store's keys. Call it once the session's records are deleted;
// a later write to the session gets a new key. It reports whether the
// session had a key; on an unencrypted store it does nothing.
func (d *DB) DestroySessionKey(session string) (bool, error) {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	return d.destroySessionKeyLocked(session)
}

// ReleaseSessionKey destroys the session's data key, as DestroySessionKey
// does, but only when no live record of any collection holds the session
// (a purge that left its history or an archived copy behind keeps the
// key, so nothing still stored becomes unreadable). It reports whether a
// key was destroyed. See ReleaseSessionKeys.
func (d *DB) ReleaseSessionKey(session string) (bool, error) {
	n, err := d.ReleaseSessionKeys(session)
	return n > 0, err
}

// ReleaseSessionKeys destroys the data key of every given session that no
// live record of any collection holds, and returns how many it destroyed.
// First the segment files sealed with such a key (they held the session's
// records, now deleted) are rewritten without them: a flush, then a
// compaction of just those files. Then, with writes held off, each
// session is checked again (no live record, nothing of it in memory, no
// live file sealed with its key) and its key destroyed, in one KEYS write:
// every copy of those files, in backups taken before, becomes unreadable
// with the store's keys, and so does the session's part of the WAL. A
// session written again meanwhile keeps its key.
func (d *DB) ReleaseSessionKeys(sessions ...string) (int, error) {
	if d.keys == nil || d.opts.NamespaceField == "" || len(sessions) == 0 {
		return 0, nil
	}
	gone, err := d.releasable(sessions)
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	if err := d.Flush(); err != nil {
		return 0, err
	}
	// The files that held a session may be sealed with its current key
	// or with one of its keys from before a rotation.
	ids := map[[crypt.IDSize]byte]bool{}
	for session := range gone {
		for _, kid := range d.keys.AllKeyIDs(session) {
			ids[kid] = true
		}
	}
	sealedWith := func(c *Collection) []*segment {
		var out []*segment
		for _, s := range c.segs {
			if slices.ContainsFunc(s.sf.keyIDs, func(id [crypt.IDSize]byte) bool { return ids[id] }) {
				out = append(out, s)
			}
		}
		return out
	}
	// A purge: the other cores stay with the callers.
	if err := d.compactPicked(sealedWith, nil, 1); err != nil && !errors.Is(err, errCompactionStale) {
		return 0, err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if d.closed {
		return 0, ErrClosed
	}
	if d.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	names, err := d.releasable(sessions)
	if err != nil {
		return 0, err
	}
	next := d.keys.Clone()
	n := 0
	for session := range names {
		if d.holdsLocked(session, d.keys.AllKeyIDs(session)) {
			continue
		}
		if next.Destroy(session) {
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := writeKeys(d.opts.FS, d.dir, next, d.opts.Key); err != nil {
		return 0, fmt.Errorf("engine: destroy session keys: %w", err)
	}
	d.setKeys(next)
	// One more manifest, so the files the rewrite superseded (kept for the
	// fallback manifest, unreadable now) leave the disk.
	if err := d.flushLocked(nil); err != nil {
		return n, err
	}
	return n, nil
}

// releasable returns the given sessions that have a key and no live
// record in any collection.
func (d *DB) releasable(sessions []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, session := range sessions {
		if _, ok := d.keys.Lookup(session); !ok {
			continue
		}
		live := false
		for _, cfg := range d.Collections() {
			c, err := d.Collection(cfg.Name)
			if err != nil {
				return nil, err
			}
			n, err := c.Count(Eq(d.opts.NamespaceField, String(session)))
			if err != nil {
				return nil, err
			}
			if n > 0 {
				live = true
				break
			}
		}
		if !live {
			out[session] = true
		}
	}
	return out, nil
}

// holdsLocked reports whether a memtable still holds a record of the
// session (dead ones too: a flush would write their IDs and vectors) or a
// live segment file is sealed with one of its keys (writeMu held).
func (d *DB) holdsLocked(session string, kids [][crypt.IDSize]byte) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, c := range d.colls {
		for i := range c.mem.recs {
			if v, ok := c.mem.recs[i].rec.Meta[d.opts.NamespaceField]; ok && v.kind == KindString && v.s == session {
				return true
			}
		}
		c.mu.RLock()
		sealed := slices.ContainsFunc(c.segs, func(s *segment) bool { return slices.ContainsFunc(kids, s.sf.listsKey) })
		c.mu.RUnlock()
		if sealed {
			return true
		}
	}
	return false
}

func (d *DB) destroySessionKeyLocked(session string) (bool, error) {
	if d.closed {
		return false, ErrClosed
	}
	if d.keys == nil {
		return false, nil
	}
	if d.opts.ReadOnly {
		return false, ErrReadOnly
	}
	next := d.keys.Clone()
	if !next.Destroy(session) {
		return false, nil
	}
	if err := writeKeys(d.opts.FS, d.dir, next, d.opts.Key); err != nil {
		return false, fmt.Errorf("engine: destroy session key: %w", err)
	}
	d.setKeys(next)
	return true, nil
}

// setKeys installs the store's keys (writeMu held, or during Open).
func (d *DB) setKeys(k *crypt.Keys) {
	d.keys = k
	d.keyRef.Store(k)
}

// Encrypted reports whether the store is encrypted.
func (d *DB) Encrypted() bool { return d.keys != nil }

// A sealed WAL payload (encryption.md, WAL records): walSealed, u64 seq,
// uvarint parts, parts × {key id, uvarint len, nonce || ciphertext}; each
// part's plaintext is one op.
const walSealed byte = 0x80

// sealOp encodes o as a sealed WAL payload, an upsert split by session
// so each session's records are sealed with its own key. New session keys
// are made durable in KEYS before the payload is returned. The caller
// holds writeMu.
func (d *DB) sealOp(o *walOp) ([]byte, error) {
	type part struct {
		id [crypt.IDSize]byte
		op *walOp
	}
	var parts []part
	if o.op == walUpsert {
		session := func(r *Record) (string, bool) {
			v, ok := r.Meta[d.opts.NamespaceField]
			if !ok {
				return "", false
			}
			return v.Str()
		}
		// New session keys are made on a copy and made durable in KEYS
		// before anything is sealed with them.
		var next *crypt.Keys
		for i := range o.records {
			if s, ok := session(&o.records[i]); ok {
				if _, has := d.keys.Lookup(s); !has {
					if next == nil {
						next = d.keys.Clone()
					}
					next.Ensure(s)
				}
			}
		}
		if next != nil {
			if err := writeKeys(d.opts.FS, d.dir, next, d.opts.Key); err != nil {
				return nil, fmt.Errorf("engine: new session key: %w", err)
			}
			d.setKeys(next)
		}
		byID := map[[crypt.IDSize]byte]int{}
		for _, r := range o.records {
			id := crypt.StoreID
			if s, ok := session(&r); ok {
				id, _ = d.keys.Lookup(s)
			}
			i, ok := byID[id]
			if !ok {
				i = len(parts)
				byID[id] = i
				parts = append(parts, part{id: id, op: &walOp{op: walUpsert, coll: o.coll}})
			}
			parts[i].op.records = append(parts[i].op.records, r)
		}
	} else {
		parts = []part{{id: crypt.StoreID, op: o}}
	}
	seq := d.walSeq + 1
	b := []byte{walSealed}
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.AppendUvarint(b, uint64(len(parts)))
	var all []byte
	for _, p := range parts {
		all = append(all, p.id[:]...)
	}
	for i, p := range parts {
		sealed, err := d.keys.Seal(nil, p.id, walAAD(len(parts), i, seq, p.id, all), encodeOp(p.op))
		if err != nil {
			return nil, fmt.Errorf("engine: seal WAL record: %w", err)
		}
		b = append(b, p.id[:]...)
		b = binary.AppendUvarint(b, uint64(len(sealed)))
		b = append(b, sealed...)
	}
	d.walSeq = seq
	return b, nil
}

// openOps opens a sealed WAL payload into its ops. Parts sealed with a
// destroyed session key are skipped and counted in skipped. Anything that
// fails authentication, or a plaintext op in an encrypted store, is an
// error (corruption to the caller).
func (d *DB) openOps(lsn wal.LSN, b []byte) (ops []*walOp, skipped int, err error) {
	if len(b) < 10 || b[0] != walSealed {
		return nil, 0, errors.New("not a sealed record in an encrypted store")
	}
	seq := binary.LittleEndian.Uint64(b[1:])
	if seq <= d.walSeq {
		return nil, 0, fmt.Errorf("record sequence %d does not follow %d (records reordered or repeated)", seq, d.walSeq)
	}
	b = b[9:]
	n, l := binary.Uvarint(b)
	if l <= 0 || n == 0 || n > MaxBatchRecords+1 {
		return nil, 0, errors.New("bad part count")
	}
	b = b[l:]
	type part struct {
		id     [crypt.IDSize]byte
		sealed []byte
	}
	parts := make([]part, 0, min(n, 64))
	var all []byte
	for i := range n {
		if len(b) < crypt.IDSize {
			return nil, 0, fmt.Errorf("part %d cut", i)
		}
		var p part
		copy(p.id[:], b)
		b = b[crypt.IDSize:]
		ln, l := binary.Uvarint(b)
		if l <= 0 || ln > uint64(len(b)-l) {
			return nil, 0, fmt.Errorf("part %d cut", i)
		}
		p.sealed = b[l : l+int(ln)]
		b = b[l+int(ln):]
		parts = append(parts, p)
		all = append(all, p.id[:]...)
	}
	if len(b) != 0 {
		return nil, 0, errors.New("trailing bytes")
	}
	for i, p := range parts {
		id := p.id
		pt, err := d.keys.Open(nil, id, walAAD(len(parts), i, seq, id, all), p.sealed)
		if errors.Is(err, crypt.ErrNoKey) {
			skipped++
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("part %d: %w", i, err)
		}
		o, err := decodeOp(pt)
		if err != nil {
			return nil, 0, fmt.Errorf("part %d: %w", i, err)
		}
		if n > 1 && o.op != walUpsert {
			return nil, 0, fmt.Errorf("part %d: op %d in a split record", i, o.op)
		}
		ops = append(ops, o)
	}
	d.walSeq = seq
	return ops, skipped, nil
}

// walAAD binds part i of a sealed WAL record to the record's sequence,
// its part count and every part's key id (so no part's key id can be
// changed, nor a part dropped, without the others failing).
func walAAD(parts, i int, seq uint64, id [crypt.IDSize]byte, all []byte) []byte {
	return append(crypt.AAD(crypt.FileWAL, uint64(parts), uint32(i), seq, id), all...)
}

// startSeq sets the WAL sequence for new records: above every record
// replayed and above the clock, so it grows across opens.
func (d *DB) startSeq() {
	d.walSeq = max(d.walSeq, uint64(time.Now().UnixNano()))
}
