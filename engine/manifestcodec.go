package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/engramdb/engram/internal/crypt"
	"math"
	"slices"
	"sort"

	"github.com/engramdb/engram/quant"
)

// The manifest names every live segment and carries the per-record state
// that segments never hold (deletes, access statistics), the key-value
// namespace and the WAL checkpoint. Each flush and compaction writes a new
// one, MANIFEST-NNNNNN (numbers only grow), atomically, then CURRENT naming
// it; the previous manifest stays, with every segment file it names and
// the WAL from its checkpoint on, so losing the newest costs nothing.
// Format: docs/format/manifest.md.

const (
	manifestMagic   = "ENGMANIF"
	manifestVersion = 2
	maxManifestSize = 1 << 30

	manifestRebuilt = 1 // flags bit: see manifest.rebuilt
	// manifestSealed (flags bit): the KV entries and the access
	// overrides are not in place (their counts are 0) but sealed in one
	// blob after the collections (an encrypted store: encryption.md).
	manifestSealed = 2
)

type manifest struct {
	nextFile   uint64 // number of the next segment file
	checkpoint uint64 // WAL records with LSN <= checkpoint are reflected here
	// walSeg is the WAL segment that follows the checkpoint, created
	// durably before this manifest: every WAL segment from the
	// checkpoint's to walSeg exists (version 2; 0 in version 1).
	walSeg uint32
	// durable is the last LSN known durable when the manifest was
	// written (version 2; 0 in version 1).
	durable uint64
	// rebuilt marks a manifest Repair rebuilt from seg/ alone: its
	// segments are not placed against the WAL, so the whole log is
	// replayed over them, leniently (version 2).
	rebuilt bool
	// sealed is the sealed blob of KV entries and overrides read from
	// a manifest with manifestSealed, until openSealed fills them in.
	sealed []byte
	// sealedPrefix is the body before the blob (bound into its AAD).
	sealedPrefix []byte
	kv           map[string][]byte
	colls        []manifestColl
}

type manifestColl struct {
	cfg       CollectionConfig
	segs      []manifestSeg
	overrides map[string]access // access stats newer than the segment copy
}

type manifestSeg struct {
	file    uint64
	count   uint32   // records (nodes) in the file
	size    uint64   // file size in bytes
	deleted []uint32 // sorted nodes that are deleted or overwritten
}

type access struct {
	count uint64
	last  int64 // Unix ns
}

func encodeManifest(m *manifest) []byte { return encodeManifestVersion(m, manifestVersion) }

// manifestAAD binds a sealed manifest blob to its manifest number and to
// every byte of the manifest's body before it (its SHA-256), so the
// plaintext structure (segment lists, deleted nodes, checkpoint) cannot be
// changed either without the blob failing authentication.
func manifestAAD(num uint64, prefix []byte) []byte {
	sum := sha256.Sum256(prefix)
	return append(crypt.AAD(crypt.FileManifest, num, 0, 0, crypt.StoreID), sum[:]...)
}

// encodeSealedManifest is encodeManifest for an encrypted store: the KV
// entries (keys and values) and the overrides (record IDs) are sealed
// with the store key, bound to manifest number num.
func encodeSealedManifest(m *manifest, keys *crypt.Keys, num uint64) ([]byte, error) {
	var p enc
	encodeKV(&p, m.kv)
	for _, c := range m.colls {
		encodeOverrides(&p, c.overrides)
	}
	bare := *m
	bare.kv, bare.sealed = nil, []byte{} // the flag set, the blob not yet
	bare.colls = make([]manifestColl, len(m.colls))
	for i, c := range m.colls {
		c.overrides = nil
		bare.colls[i] = c
	}
	prefix := encodeManifestBody(&bare, manifestVersion)
	blob := binary.LittleEndian.AppendUint32(nil, keys.Generation())
	blob, err := keys.Seal(blob, crypt.StoreID, append(manifestAAD(num, prefix), blob...), p.b)
	if err != nil {
		return nil, err
	}
	e := enc{b: prefix}
	e.bytes(blob)
	return manifestWithHeader(e.b, manifestVersion), nil
}

// openSealed fills in the KV entries and overrides of a manifest read
// with manifestSealed (number num) from its sealed blob.
func (m *manifest) openSealed(keys *crypt.Keys, num uint64) error {
	if len(m.sealed) < 4 {
		return errors.New("sealed KV and overrides: too short")
	}
	gen := binary.LittleEndian.Uint32(m.sealed)
	switch {
	case gen == 0 || gen > keys.Generation():
		return fmt.Errorf("sealed with key generation %d, the store is at %d", gen, keys.Generation())
	case !keys.HasGeneration(gen):
		return fmt.Errorf("%w: the manifest is sealed with key generation %d, which KEYS no longer holds (dropped after a rotation)", ErrKeyDestroyed, gen)
	}
	plain, err := keys.Open(nil, crypt.StoreID, append(manifestAAD(num, m.sealedPrefix), m.sealed[:4]...), m.sealed[4:])
	if err != nil {
		return fmt.Errorf("sealed KV and overrides: %w", err)
	}
	d := dec{b: plain}
	decodeKV(&d, m.kv)
	for i := range m.colls {
		decodeOverrides(&d, m.colls[i].overrides)
	}
	if d.err != nil || len(d.b) != 0 {
		return errors.New("sealed KV and overrides malformed")
	}
	m.sealed, m.sealedPrefix = nil, nil
	return nil
}

func encodeKV(e *enc, kv map[string][]byte) {
	keys := sortedKeys(kv)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.bytes(kv[k])
	}
}

func decodeKV(d *dec, kv map[string][]byte) {
	n := d.count(math.MaxInt32, 2)
	for range n {
		k := d.str()
		kv[k] = d.bytes()
	}
}

func encodeOverrides(e *enc, ov map[string]access) {
	ids := sortedKeys(ov)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		a := ov[id]
		e.str(id)
		e.uvarint(a.count)
		e.varint(a.last)
	}
}

func decodeOverrides(d *dec, ov map[string]access) {
	n := d.count(math.MaxInt32, 3)
	for range n {
		id := d.str()
		ov[id] = access{count: d.uvarint(), last: d.varint()}
	}
}

// encodeManifestVersion writes version 2, or for tests of the upgrade path
// the first release's version 1 (no WAL position).
func encodeManifestVersion(m *manifest, version uint32) []byte {
	body := encodeManifestBody(m, version)
	if m.sealed != nil {
		e := enc{b: body}
		e.bytes(m.sealed)
		body = e.b
	}
	return manifestWithHeader(body, version)
}

// encodeManifestBody is a manifest's body up to (not including) the sealed
// blob of a sealed one.
func encodeManifestBody(m *manifest, version uint32) []byte {
	var e enc
	e.uvarint(m.nextFile)
	e.u64(m.checkpoint)
	if version >= 2 {
		e.uvarint(uint64(m.walSeg))
		e.u64(m.durable)
		flags := uint64(0)
		if m.rebuilt {
			flags |= manifestRebuilt
		}
		if m.sealed != nil {
			flags |= manifestSealed
		}
		e.uvarint(flags)
	}
	encodeKV(&e, m.kv)
	e.uvarint(uint64(len(m.colls)))
	for _, c := range m.colls {
		e.str(c.cfg.Name)
		e.uvarint(uint64(c.cfg.Dim))
		e.u8(byte(c.cfg.Metric))
		e.str(c.cfg.Fingerprint)
		e.uvarint(uint64(len(c.segs)))
		for _, s := range c.segs {
			e.uvarint(s.file)
			e.uvarint(uint64(s.count))
			e.uvarint(s.size)
			e.uvarint(uint64(len(s.deleted)))
			prev := uint32(0)
			for i, n := range s.deleted {
				if i == 0 {
					e.uvarint(uint64(n))
				} else {
					e.uvarint(uint64(n - prev))
				}
				prev = n
			}
		}
		encodeOverrides(&e, c.overrides)
	}
	return e.b
}

// manifestWithHeader puts the header (magic, version, length, CRC) before
// body.
func manifestWithHeader(body []byte, version uint32) []byte {
	var h enc
	h.b = append(h.b, manifestMagic...)
	h.u32(version)
	h.u32(uint32(len(body)))
	h.u32(crc(body))
	return append(h.b, body...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeManifest parses and validates a manifest. Errors wrap ErrVersion
// for a newer format and errShort or a description for damaged bytes.
func decodeManifest(b []byte) (*manifest, error) {
	if len(b) < 20 || string(b[:8]) != manifestMagic {
		return nil, errors.New("bad magic")
	}
	h := dec{b: b[8:20]}
	ver, size, sum := h.u32(), h.u32(), h.u32()
	if ver > manifestVersion || ver == 0 {
		return nil, fmt.Errorf("%w: manifest version %d, this build reads %d", ErrVersion, ver, manifestVersion)
	}
	if uint64(size) != uint64(len(b)-20) {
		return nil, fmt.Errorf("length %d, header says %d", len(b)-20, size)
	}
	body := b[20:]
	if crc(body) != sum {
		return nil, errors.New("checksum mismatch")
	}
	d := dec{b: body}
	m := &manifest{nextFile: d.uvarint(), checkpoint: d.u64(), kv: map[string][]byte{}}
	sealed := false
	if ver >= 2 {
		ws := d.uvarint()
		if ws > math.MaxUint32 {
			d.fail()
		}
		m.walSeg, m.durable = uint32(ws), d.u64()
		flags := d.uvarint()
		if flags&^(manifestRebuilt|manifestSealed) != 0 {
			d.fail()
		}
		m.rebuilt = flags&manifestRebuilt != 0
		sealed = flags&manifestSealed != 0
	}
	decodeKV(&d, m.kv)
	ncoll := d.count(1<<20, 4)
	names := map[string]bool{}
	files := map[uint64]bool{}
	for range ncoll {
		var c manifestColl
		c.cfg.Name = d.str()
		c.cfg.Dim = int(d.count(MaxDim, 0))
		c.cfg.Metric = quant.Metric(d.u8())
		c.cfg.Fingerprint = d.str()
		nseg := d.count(1<<20, 4)
		for range nseg {
			s := manifestSeg{file: d.uvarint(), count: uint32(d.count(math.MaxUint32, 0)), size: d.uvarint()}
			ndel := d.count(int(s.count), 1)
			s.deleted = make([]uint32, ndel)
			var prev uint64
			for i := range s.deleted {
				delta := d.uvarint()
				if i > 0 && delta == 0 {
					d.fail()
				}
				prev += delta
				if prev >= uint64(s.count) {
					d.fail()
				}
				s.deleted[i] = uint32(prev)
			}
			if d.err != nil {
				return nil, d.err
			}
			if files[s.file] || s.file >= m.nextFile {
				return nil, fmt.Errorf("segment file %d listed twice or beyond next file %d", s.file, m.nextFile)
			}
			files[s.file] = true
			c.segs = append(c.segs, s)
		}
		c.overrides = map[string]access{}
		decodeOverrides(&d, c.overrides)
		if d.err != nil {
			return nil, d.err
		}
		if err := c.cfg.validate(); err != nil {
			return nil, fmt.Errorf("collection config: %v", err)
		}
		if names[c.cfg.Name] {
			return nil, fmt.Errorf("collection %q listed twice", c.cfg.Name)
		}
		names[c.cfg.Name] = true
		m.colls = append(m.colls, c)
	}
	if sealed {
		if len(m.kv) > 0 || slices.ContainsFunc(m.colls, func(c manifestColl) bool { return len(c.overrides) > 0 }) {
			return nil, errors.New("sealed manifest with KV entries or overrides in place")
		}
		m.sealedPrefix = body[:len(body)-len(d.b)]
		m.sealed = d.bytes()
		if m.sealed == nil {
			m.sealed = []byte{}
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return m, nil
}
