package engine

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// requiredSections lists, per segment format version, the sections a file
// must hold: a file lacking one, or holding one of these kinds that its
// version does not list, fails to open. Kinds this build does not know are
// ignored (and still checksummed by Check). The rule for changing it is in
// docs/format/segment.md ("Versions").
var requiredSections = map[uint32][]sectionKind{
	segVersionV1: {secInfo, secGraph, secIDs, secMeta, secText, secTimes, secKeyword, secNamespace},
	segVersionV2: {secInfo, secGraph, secIDs, secText, secTimes, secKeyword, secNamespace, secColumns},
	segVersionV3: {secInfo, secGraph, secIDs, secText, secTimes, secKeyword, secNamespace, secColumns, secSums},
	segVersion:   {secInfo, secGraph, secIDs, secText, secTimes, secKeyword, secNamespace, secColumns, secSums, secChunks},
}

// checkSectionSet refuses a file whose known sections differ from what its
// version requires.
func checkSectionSet(version uint32, secs map[sectionKind][]byte) error {
	req, ok := requiredSections[version]
	if !ok {
		return fmt.Errorf("%w: segment version %d", ErrVersion, version)
	}
	want := map[sectionKind]bool{}
	for _, k := range req {
		want[k] = true
		if _, ok := secs[k]; !ok {
			return fmt.Errorf("version %d segment lacks its %s section (kind %d)", version, k, k)
		}
	}
	for k := range secs {
		if k <= secLastKnown && !want[k] {
			return fmt.Errorf("version %d segment holds a %s section (kind %d)", version, k, k)
		}
	}
	return nil
}

// segHeader is what a segment file says about itself: the collection it
// belongs to and, from version 3 on, enough to rebuild a manifest entry
// for it from seg/ alone (its number, the WAL position it covers, the
// nodes already dead when it was written, the files it supersedes).
type segHeader struct {
	path    string
	version uint32
	cfg     CollectionConfig
	// file is the number the file was written under (version 3; older
	// files: the number in its name).
	file  uint64
	count uint32 // nodes in the file, dead ones included
	size  uint64 // bytes
	// lsn (version 3) is the WAL position of the last write the file
	// reflects: a flush writes its checkpoint, a compaction the highest
	// lsn of its inputs. Replaying the WAL after lsn onto the file (and
	// the files it does not supersede) gives the current state of its
	// records. Zero for older files: unknown.
	lsn wal.LSN
	// dead are the nodes that were already deleted or overwritten when the
	// file was written, sorted (the manifest lists them as deleted too).
	dead []uint32
	// replaces (version 3) are the files a compaction merged into this
	// one, increasing; a flush replaces none.
	replaces []uint64
}

// segWrite is what the writer of a segment file records in its info
// section beyond the collection config.
type segWrite struct {
	file     uint64
	lsn      wal.LSN
	replaces []uint64
}

// encodeInfo writes the info section (version 3 layout).
func encodeInfo(cfg CollectionConfig, n int, dead []uint32, w segWrite) []byte {
	var e enc
	e.str(cfg.Name)
	e.uvarint(uint64(cfg.Dim))
	e.u8(byte(cfg.Metric))
	e.uvarint(uint64(n))
	e.str(cfg.Fingerprint)
	e.uvarint(w.file)
	e.u64(uint64(w.lsn))
	e.uvarint(uint64(len(dead)))
	prev := uint32(0)
	for i, node := range dead {
		if i == 0 {
			e.uvarint(uint64(node))
		} else {
			e.uvarint(uint64(node - prev))
		}
		prev = node
	}
	e.uvarint(uint64(len(w.replaces)))
	prevFile := uint64(0)
	for i, f := range w.replaces {
		if i == 0 {
			e.uvarint(f)
		} else {
			e.uvarint(f - prevFile)
		}
		prevFile = f
	}
	return e.b
}

// parseInfo decodes an info section of the given version.
func parseInfo(b []byte, version uint32) (segHeader, error) {
	d := dec{b: b}
	var h segHeader
	h.version = version
	h.cfg.Name = d.str()
	h.cfg.Dim = int(d.count(MaxDim, 0))
	h.cfg.Metric = quant.Metric(d.u8())
	n := d.uvarint()
	h.cfg.Fingerprint = d.str()
	if d.err != nil {
		return h, fmt.Errorf("info section: %w", d.err)
	}
	if n > math.MaxUint32 {
		return h, fmt.Errorf("info section: %d nodes", n)
	}
	h.count = uint32(n)
	if version < segVersionV3 {
		return h, nil // older files end here (trailing bytes were never written)
	}
	h.file = d.uvarint()
	h.lsn = wal.LSN(d.u64())
	ndead := d.count(int(h.count), 1)
	h.dead = make([]uint32, ndead)
	var prev uint64
	for i := range h.dead {
		delta := d.uvarint()
		if i > 0 && delta == 0 {
			d.fail()
		}
		prev += delta
		if prev >= n {
			d.fail()
		}
		h.dead[i] = uint32(prev)
	}
	nrep := d.count(1<<20, 1)
	h.replaces = make([]uint64, nrep)
	var prevFile uint64
	for i := range h.replaces {
		delta := d.uvarint()
		if i > 0 && delta == 0 || prevFile+delta < prevFile {
			d.fail()
		}
		prevFile += delta
		h.replaces[i] = prevFile
	}
	if d.err != nil {
		return h, fmt.Errorf("info section: %w", d.err)
	}
	if len(d.b) != 0 {
		return h, fmt.Errorf("info section: %d trailing bytes", len(d.b))
	}
	if err := h.cfg.validate(); err != nil {
		return h, fmt.Errorf("info section: %v", err)
	}
	return h, nil
}

// segFileNumber parses the number of a segment file name (NNNNNNNN.seg).
func segFileNumber(name string) (uint64, bool) {
	if !isSegName(name) {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(name, ".seg"), 10, 64)
	return n, err == nil
}

// readSegHeaderFS reads what the segment file at path says about itself,
// verifying the trailer, the section table and the checksum of the info
// section (and of the id section for files older than version 3, whose
// dead nodes are those missing from its sorted id table). It reads a few
// hundred bytes plus those sections. Damage is a *CorruptionError naming
// the file; a file of a newer format matches ErrVersion.
func readSegHeaderFS(fsys FS, path string) (segHeader, error) {
	sf, err := mapSegFile(fsys, path)
	if err != nil {
		return segHeader{}, err
	}
	defer sf.close()
	fail := func(err error) (segHeader, error) {
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return segHeader{}, err
		}
		return segHeader{}, &CorruptionError{File: path, Err: err}
	}
	version := sf.version()
	if err := checkSectionSet(version, sf.sections); err != nil {
		return fail(err)
	}
	if err := sf.verifySection(secInfo); err != nil {
		return fail(err)
	}
	h, err := parseInfo(sf.sections[secInfo], version)
	if err != nil {
		return fail(err)
	}
	h.path, h.size = path, sf.size()
	num, named := segFileNumber(filepath.Base(path))
	if version < segVersionV3 {
		h.file = num
		if err := sf.verifySection(secIDs); err != nil {
			return fail(err)
		}
		ids, err := parseIDs(sf.sections[secIDs], int(h.count))
		if err != nil {
			return fail(err)
		}
		h.dead = ids.deadNodes()
		return h, nil
	}
	if named && num != h.file {
		return fail(fmt.Errorf("file was written as %s", segName(h.file)))
	}
	return h, nil
}

// recordSum is the checksum of one record as a segment stores it (the
// sums section, version 3): CRC32C over its ID, the stored float32 vector,
// text, encoded metadata and the four time fields. It tells, record by
// record, which primary data a damaged file still holds intact.
func recordSum(r *Record, vec []float32) uint32 {
	e := sumBufs.Get().(*enc)
	defer func() {
		if cap(e.b) <= maxSumBuf {
			sumBufs.Put(e)
		}
	}()
	e.b = e.b[:0]
	e.str(r.ID)
	e.uvarint(uint64(len(vec)))
	e.f32s(vec)
	e.str(r.Text)
	appendMeta(e, r.Meta)
	e.u64(uint64(unixNano(r.Created)))
	e.u64(uint64(unixNano(r.Updated)))
	e.u64(uint64(unixNano(r.LastAccess)))
	e.u64(r.AccessCount)
	return crc32.Checksum(e.b, castagnoli)
}

// sumBufs holds recordSum's encoding buffers: a merge or a flush sums every
// record, and a fresh buffer each time (a 1024-d record encodes to over 4
// KiB, grown by doubling) was most of a merge's garbage, which the
// collector lets pile up to as much again as the live memtable.
var sumBufs = sync.Pool{New: func() any { return new(enc) }}

// maxSumBuf is the largest buffer sumBufs keeps (a record with a long text
// is summed with a buffer of its own, then dropped).
const maxSumBuf = 64 << 10
