// Package crypt holds the keys of an encrypted store and seals and opens
// what the engine encrypts (docs/format/encryption.md): the key-encryption
// key (KEK) derived from a passphrase with argon2id or taken from a key
// file, the KEYS file that holds the data keys sealed under it, and the
// XChaCha20-Poly1305 envelope with its nonce and additional data.
//
// It does no I/O: the engine reads and writes the bytes. Decoders never
// panic on any input (FuzzDecode, FuzzOpen).
package crypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// KeySize is the size of every key: KEK, store, id and session keys.
const KeySize = 32

// IDSize is the size of a key id: zeros for the store key, a session's
// HMAC id otherwise.
const IDSize = 16

// Overhead is what Seal adds to a plaintext: nonce and tag.
const Overhead = chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead

var (
	// ErrCorrupt: the KEYS file is damaged (checksum, length, fields).
	ErrCorrupt = errors.New("crypt: key store damaged")
	// ErrWrongKey: the KEYS file is intact but the passphrase or key
	// file does not open it.
	ErrWrongKey = errors.New("crypt: wrong passphrase or key")
	// ErrAuth: a sealed unit failed authentication (damaged, moved or
	// forged): corruption to the caller, never data.
	ErrAuth = errors.New("crypt: authentication failed")
	// ErrNoKey: the unit's key is not in the store (a purged session).
	ErrNoKey = errors.New("crypt: key destroyed")
	// ErrInvalid: a bad secret or parameter from the caller.
	ErrInvalid = errors.New("crypt: invalid")
)

// Secret unlocks a store: exactly one of Passphrase and Key.
type Secret struct {
	// Passphrase derives the KEK with argon2id.
	Passphrase []byte
	// Key is a key file's 32 bytes (ParseKeyFile).
	Key []byte
}

// ParseKeyFile reads a key file's contents: 32 raw bytes, or 64 hex
// digits with an optional trailing newline.
func ParseKeyFile(b []byte) ([]byte, error) {
	if len(b) == KeySize {
		return slices.Clone(b), nil
	}
	t := bytes.TrimRight(b, "\r\n")
	if len(t) == 2*KeySize {
		k := make([]byte, KeySize)
		if _, err := hex.Decode(k, t); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: a key file holds 32 bytes or 64 hex digits, this one %d bytes", ErrInvalid, len(b))
}

// NewKeyFile returns a new random key in key file form (hex, newline).
func NewKeyFile() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return append([]byte(hex.EncodeToString(k)), '\n')
}

func (s Secret) validate() error {
	switch {
	case len(s.Passphrase) > 0 && len(s.Key) > 0:
		return fmt.Errorf("%w: a passphrase or a key file, not both", ErrInvalid)
	case len(s.Key) > 0 && len(s.Key) != KeySize:
		return fmt.Errorf("%w: key of %d bytes, want %d", ErrInvalid, len(s.Key), KeySize)
	case len(s.Passphrase) == 0 && len(s.Key) == 0:
		return fmt.Errorf("%w: empty passphrase", ErrInvalid)
	}
	return nil
}

const (
	kdfArgon2id = 1
	kdfRaw      = 2
)

// KDF is the argon2id cost. The zero value means the defaults (time 3,
// 64 MiB, 4 threads); tests lower them to the minimum.
type KDF struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// Limits a KEYS file is held to before anything is derived.
const (
	minMemoryKiB = 8 << 10
	maxMemoryKiB = 4 << 20
	maxTime      = 64
	maxThreads   = 64
)

// MinKDF is the cheapest KDF a KEYS file may name (for tests).
var MinKDF = KDF{Time: 1, MemoryKiB: minMemoryKiB, Threads: 1}

func (p KDF) withDefaults() KDF {
	if p.Time == 0 {
		p.Time = 3
	}
	if p.MemoryKiB == 0 {
		p.MemoryKiB = 64 << 10
	}
	if p.Threads == 0 {
		p.Threads = 4
	}
	return p
}

func (p KDF) check() error {
	if p.Time < 1 || p.Time > maxTime || p.MemoryKiB < minMemoryKiB || p.MemoryKiB > maxMemoryKiB || p.Threads < 1 || p.Threads > maxThreads {
		return fmt.Errorf("argon2id parameters t=%d m=%dKiB p=%d out of range", p.Time, p.MemoryKiB, p.Threads)
	}
	return nil
}

// Keys are a store's data keys, unsealed. Safe for concurrent use.
type Keys struct {
	mu       sync.RWMutex
	gen      uint32
	store    []byte
	idKey    []byte
	sessions map[[IDSize]byte][IDSize]byte // session id -> current key id
	keys     map[[IDSize]byte]sessionKey   // key id -> key (current and retired)
	aeads    map[[IDSize]byte]cipher.AEAD
	// retired are the store keys of earlier generations (Rotate), kept
	// so files sealed before a rotation still open, until DropRetired.
	retired map[uint32][]byte
	flags   uint64
}

// sessionKey is one session's key. Its key id is random, not the
// session's id: a session purged and written again gets a new key under
// a new key id, so what the old key sealed stays unreadable (ErrNoKey)
// instead of failing as damage under the new one.
type sessionKey struct {
	session [IDSize]byte
	gen     uint32
	key     []byte
}

// New returns fresh random keys (generation 1, no sessions).
func New() *Keys {
	k := &Keys{gen: 1, store: make([]byte, KeySize), idKey: make([]byte, KeySize),
		sessions: map[[IDSize]byte][IDSize]byte{}, keys: map[[IDSize]byte]sessionKey{}, aeads: map[[IDSize]byte]cipher.AEAD{},
		retired: map[uint32][]byte{}}
	rand.Read(k.store)
	rand.Read(k.idKey)
	return k
}

// StoreID is the key id of the store key.
var StoreID [IDSize]byte

// SessionID is the id a session's key is kept under: the HMAC of its
// name, so KEYS never names a session.
func (k *Keys) SessionID(session string) [IDSize]byte {
	m := hmac.New(sha256.New, k.idKey)
	m.Write([]byte(session))
	var id [IDSize]byte
	copy(id[:], m.Sum(nil))
	return id
}

// Ensure makes sure the session has a key and returns the key's id;
// created says a key was made (the caller must persist KEYS before
// sealing with it).
func (k *Keys) Ensure(session string) (keyID [IDSize]byte, created bool) {
	sid := k.SessionID(session)
	k.mu.Lock()
	defer k.mu.Unlock()
	if kid, ok := k.sessions[sid]; ok {
		return kid, false
	}
	keyID = k.newSessionKeyLocked(sid)
	return keyID, true
}

// newSessionKeyLocked makes the session's current key a new random one
// under a new key id (k.mu held).
func (k *Keys) newSessionKeyLocked(sid [IDSize]byte) [IDSize]byte {
	var kid [IDSize]byte
	for kid == StoreID || k.keys[kid].key != nil {
		rand.Read(kid[:])
	}
	key := make([]byte, KeySize)
	rand.Read(key)
	k.sessions[sid] = kid
	k.keys[kid] = sessionKey{session: sid, gen: k.gen, key: key}
	return kid
}

// Lookup returns the id of the session's key, if it has one.
func (k *Keys) Lookup(session string) ([IDSize]byte, bool) {
	sid := k.SessionID(session)
	k.mu.RLock()
	defer k.mu.RUnlock()
	kid, ok := k.sessions[sid]
	return kid, ok
}

// Has reports whether the key id is present.
func (k *Keys) Has(id [IDSize]byte) bool {
	if id == StoreID {
		return true
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.keys[id]
	return ok
}

// Destroy removes a session's key: what it sealed can no longer be
// opened with these keys. It reports whether the key was present.
func (k *Keys) Destroy(session string) bool {
	sid := k.SessionID(session)
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.sessions[sid]
	delete(k.sessions, sid)
	for kid, s := range k.keys { // retired generations too
		if s.session == sid {
			delete(k.keys, kid)
			delete(k.aeads, kid)
		}
	}
	return ok
}

// AllKeyIDs returns the ids of every key of the session, current and
// retired (sorted).
func (k *Keys) AllKeyIDs(session string) [][IDSize]byte {
	sid := k.SessionID(session)
	k.mu.RLock()
	defer k.mu.RUnlock()
	var ids [][IDSize]byte
	for kid, s := range k.keys {
		if s.session == sid {
			ids = append(ids, kid)
		}
	}
	slices.SortFunc(ids, func(x, y [IDSize]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// Generation is the current key generation (1 for a new store; each
// Rotate adds one).
func (k *Keys) Generation() uint32 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.gen
}

// Rotate starts a new key generation: a new store key and a new key (under
// a new key id) for every session. The previous store key and session keys
// are kept, retired: what they sealed still opens, and nothing new is
// sealed with them. Destroy removes a session's retired keys too.
func (k *Keys) Rotate() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.retired[k.gen] = k.store
	k.gen++
	k.store = make([]byte, KeySize)
	rand.Read(k.store)
	delete(k.aeads, StoreID)
	for sid := range k.sessions {
		k.newSessionKeyLocked(sid)
	}
}

// HasGeneration reports whether the store key of generation gen is held
// (the current one or a retired one).
func (k *Keys) HasGeneration(gen uint32) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return gen == k.gen || k.retired[gen] != nil
}

// Retired reports whether keys of earlier generations are kept.
func (k *Keys) Retired() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.retired) > 0 {
		return true
	}
	for kid, s := range k.keys {
		if k.sessions[s.session] != kid {
			return true
		}
	}
	return false
}

// DropRetired destroys the keys of earlier generations: what only they
// sealed (files written before the last rotation, in backups too) can no
// longer be opened with these keys.
func (k *Keys) DropRetired() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.retired = map[uint32][]byte{}
	for kid, s := range k.keys {
		if k.sessions[s.session] != kid {
			delete(k.keys, kid)
			delete(k.aeads, kid)
		}
	}
}

// Sessions is the number of session keys held.
func (k *Keys) Sessions() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.sessions)
}

// Clone returns an independent copy (to stage a change before it is
// durable).
func (k *Keys) Clone() *Keys {
	k.mu.RLock()
	defer k.mu.RUnlock()
	c := &Keys{gen: k.gen, store: slices.Clone(k.store), idKey: slices.Clone(k.idKey),
		sessions: maps.Clone(k.sessions), keys: make(map[[IDSize]byte]sessionKey, len(k.keys)), aeads: map[[IDSize]byte]cipher.AEAD{}}
	for id, s := range k.keys {
		s.key = slices.Clone(s.key)
		c.keys[id] = s
	}
	c.flags = k.flags
	c.retired = make(map[uint32][]byte, len(k.retired))
	for g, key := range k.retired {
		c.retired[g] = slices.Clone(key)
	}
	return c
}

func (k *Keys) aead(id [IDSize]byte) (cipher.AEAD, error) {
	k.mu.RLock()
	a, ok := k.aeads[id]
	k.mu.RUnlock()
	if ok {
		return a, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, ok := k.aeads[id]; ok {
		return a, nil
	}
	key := k.store
	if id != StoreID {
		s, ok := k.keys[id]
		if !ok {
			return nil, ErrNoKey
		}
		key = s.key
	}
	a, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, err
	}
	k.aeads[id] = a
	return a, nil
}

// Seal appends nonce || ciphertext of plaintext under key id to dst.
func (k *Keys) Seal(dst []byte, id [IDSize]byte, aad, plaintext []byte) ([]byte, error) {
	a, err := k.aead(id)
	if err != nil {
		return nil, err
	}
	return sealWith(a, dst, aad, plaintext), nil
}

func sealWith(a cipher.AEAD, dst, aad, plaintext []byte) []byte {
	var nonce [chacha20poly1305.NonceSizeX]byte
	rand.Read(nonce[:])
	dst = append(dst, nonce[:]...)
	return a.Seal(dst, nonce[:], plaintext, aad)
}

// Open appends the plaintext of sealed (nonce || ciphertext) under key id
// to dst. ErrNoKey: the key is gone; ErrAuth: the unit is not what was
// sealed for this aad.
func (k *Keys) Open(dst []byte, id [IDSize]byte, aad, sealed []byte) ([]byte, error) {
	a, err := k.aead(id)
	if err != nil {
		return nil, err
	}
	out, err := openWith(a, dst, aad, sealed)
	if err != nil && id == StoreID {
		// Sealed before a rotation: a retired store key, newest first.
		k.mu.RLock()
		gens := slices.Sorted(maps.Keys(k.retired))
		k.mu.RUnlock()
		for i := len(gens) - 1; i >= 0; i-- {
			k.mu.RLock()
			key := k.retired[gens[i]]
			k.mu.RUnlock()
			if ra, aerr := chacha20poly1305.NewX(key); aerr == nil {
				if out, err = openWith(ra, dst, aad, sealed); err == nil {
					return out, nil
				}
			}
		}
	}
	return out, err
}

func openWith(a cipher.AEAD, dst, aad, sealed []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return nil, ErrAuth
	}
	n := chacha20poly1305.NonceSizeX
	out, err := a.Open(dst, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrAuth
	}
	return out, nil
}

// AAD builds the additional data that binds a sealed unit to its place
// (encryption.md, Envelope).
func AAD(fileKind uint8, file uint64, section uint32, pos uint64, id [IDSize]byte) []byte {
	b := make([]byte, 0, 7+1+8+4+8+IDSize)
	b = append(b, "engram\x00"...)
	b = append(b, fileKind)
	b = binary.LittleEndian.AppendUint64(b, file)
	b = binary.LittleEndian.AppendUint32(b, section)
	b = binary.LittleEndian.AppendUint64(b, pos)
	return append(b, id[:]...)
}

// File kinds in the AAD.
const (
	FileWAL     = 1
	FileSegment = 2
	FileExport  = 3
	// FileManifest: the sealed KV entries and overrides of a manifest.
	FileManifest = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	magic      = "ENGRMKEY"
	version    = 1
	saltSize   = 16
	maxKeyList = 1 << 26 // 64 MiB: about 1.2M sessions
)

func deriveKEK(s Secret, kdf uint8, p KDF, salt []byte) []byte {
	if kdf == kdfRaw {
		return s.Key
	}
	return argon2.IDKey(s.Passphrase, salt, p.Time, p.MemoryKiB, p.Threads, KeySize)
}

// Encode seals k under the KEK of s (a fresh salt and nonce each time)
// and returns the KEYS file's bytes. p is the argon2id cost (ignored for
// a key file).
func Encode(k *Keys, s Secret, p KDF) ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	b := append([]byte(magic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[8:], version)
	var salt []byte
	if len(s.Key) > 0 {
		b = append(b, kdfRaw, 0, 0, 0)
	} else {
		b = append(b, kdfArgon2id, 0, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, p.Time)
		b = binary.LittleEndian.AppendUint32(b, p.MemoryKiB)
		salt = make([]byte, saltSize)
		rand.Read(salt)
		b = append(b, p.Threads, saltSize)
		b = append(b, salt...)
	}
	kdf := b[12]
	a, err := chacha20poly1305.NewX(deriveKEK(s, kdf, p, salt))
	if err != nil {
		return nil, err
	}
	aad := slices.Clone(b)
	sealed := sealWith(a, nil, aad, k.encodeList())
	// sealed is nonce || ciphertext; the length counts the ciphertext.
	n := chacha20poly1305.NonceSizeX
	b = append(b, sealed[:n]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sealed)-n))
	b = append(b, sealed[n:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

func (k *Keys) encodeList() []byte {
	k.mu.RLock()
	defer k.mu.RUnlock()
	b := binary.LittleEndian.AppendUint32(nil, k.gen)
	b = append(b, k.store...)
	b = append(b, k.idKey...)
	ids := make([][IDSize]byte, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [IDSize]byte) int { return bytes.Compare(x[:], y[:]) })
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		s := k.keys[id]
		b = append(b, id[:]...)
		b = append(b, s.session[:]...)
		b = binary.LittleEndian.AppendUint32(b, s.gen)
		b = append(b, s.key...)
	}
	// Optional tagged fields follow (absent in the first format).
	if len(k.retired) > 0 {
		gens := slices.Sorted(maps.Keys(k.retired))
		b = append(b, tagRetired)
		b = binary.AppendUvarint(b, uint64(len(gens)))
		for _, g := range gens {
			b = binary.LittleEndian.AppendUint32(b, g)
			b = append(b, k.retired[g]...)
		}
	}
	if k.flags != 0 {
		b = append(b, tagFlags)
		b = binary.AppendUvarint(b, k.flags)
	}
	return b
}

// Tags of the key list's optional fields.
const (
	tagRetired = 1 // uvarint r, r × {u32 generation, key}: retired store keys
	tagFlags   = 2 // uvarint: FlagSealedManifests
)

// FlagSealedManifests: the store writes sealed manifests, so a plaintext
// one in it is a forgery or damage, never an older build's.
const FlagSealedManifests = 1

// Flags returns the key list's flags.
func (k *Keys) Flags() uint64 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.flags
}

// SetFlags sets flags (in a clone the caller will persist).
func (k *Keys) SetFlags(f uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.flags |= f
}

func decodeList(b []byte) (*Keys, error) {
	bad := errors.New("key list malformed")
	if len(b) < 4+2*KeySize {
		return nil, bad
	}
	k := &Keys{gen: binary.LittleEndian.Uint32(b), store: slices.Clone(b[4 : 4+KeySize]),
		idKey: slices.Clone(b[4+KeySize : 4+2*KeySize]), aeads: map[[IDSize]byte]cipher.AEAD{}, retired: map[uint32][]byte{}}
	b = b[4+2*KeySize:]
	n, l := binary.Uvarint(b)
	const entry = 2*IDSize + 4 + KeySize
	if l <= 0 || n > uint64(len(b)-l)/entry {
		return nil, bad
	}
	b = b[l:]
	k.sessions = make(map[[IDSize]byte][IDSize]byte, n)
	k.keys = make(map[[IDSize]byte]sessionKey, n)
	var prev [IDSize]byte
	for i := range int(n) {
		var id, sid [IDSize]byte
		copy(id[:], b)
		copy(sid[:], b[IDSize:])
		if i > 0 && bytes.Compare(id[:], prev[:]) <= 0 || id == StoreID {
			return nil, bad
		}
		prev = id
		s := sessionKey{session: sid, gen: binary.LittleEndian.Uint32(b[2*IDSize:]), key: slices.Clone(b[2*IDSize+4 : entry])}
		if s.gen == 0 || s.gen > k.gen {
			return nil, bad
		}
		// A session's current key is its newest; one per generation.
		if cur, dup := k.sessions[sid]; dup {
			if k.keys[cur].gen == s.gen {
				return nil, bad
			}
			if k.keys[cur].gen < s.gen {
				k.sessions[sid] = id
			}
		} else {
			k.sessions[sid] = id
		}
		k.keys[id] = s
		b = b[entry:]
	}
	last := byte(0)
	for len(b) > 0 {
		tag := b[0]
		if tag <= last { // each at most once, in order
			return nil, bad
		}
		last, b = tag, b[1:]
		switch tag {
		case tagRetired:
			r, l := binary.Uvarint(b)
			if l <= 0 || r == 0 || r > uint64(len(b)-l)/(4+KeySize) {
				return nil, bad
			}
			b = b[l:]
			for range r {
				g := binary.LittleEndian.Uint32(b)
				if g >= k.gen || k.retired[g] != nil {
					return nil, bad
				}
				k.retired[g] = slices.Clone(b[4 : 4+KeySize])
				b = b[4+KeySize:]
			}
		case tagFlags:
			f, l := binary.Uvarint(b)
			if l <= 0 || f == 0 || f&^FlagSealedManifests != 0 {
				return nil, bad
			}
			k.flags, b = f, b[l:]
		default:
			return nil, bad
		}
	}
	return k, nil
}

// Header is what a KEYS file says about itself without the secret.
type Header struct {
	Passphrase bool // false: a key file
	KDF        KDF
}

// header parses the plaintext part of a KEYS file whose CRC holds, and
// returns it, the salt and the offset of the nonce.
func header(b []byte) (Header, []byte, int, error) {
	corrupt := func(format string, a ...any) (Header, []byte, int, error) {
		return Header{}, nil, 0, fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, a...))
	}
	if len(b) < 16+4 {
		return corrupt("file of %d bytes", len(b))
	}
	if string(b[:8]) != magic {
		return corrupt("bad magic")
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return corrupt("checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != version {
		return corrupt("version %d, this build reads %d", v, version)
	}
	if b[13] != 0 || b[14] != 0 || b[15] != 0 {
		return corrupt("reserved bytes set")
	}
	switch b[12] {
	case kdfRaw:
		return Header{}, nil, 16, nil
	case kdfArgon2id:
		if len(b) < 16+10+saltSize {
			return corrupt("file of %d bytes", len(b))
		}
		p := KDF{Time: binary.LittleEndian.Uint32(b[16:]), MemoryKiB: binary.LittleEndian.Uint32(b[20:]), Threads: b[24]}
		if err := p.check(); err != nil {
			return corrupt("%v", err)
		}
		if b[25] != saltSize {
			return corrupt("salt of %d bytes", b[25])
		}
		return Header{Passphrase: true, KDF: p}, b[26 : 26+saltSize], 26 + saltSize, nil
	default:
		return corrupt("unknown key derivation %d", b[12])
	}
}

// ReadHeader returns what a KEYS file says about itself (ErrCorrupt if
// it is damaged).
func ReadHeader(b []byte) (Header, error) {
	h, _, _, err := header(b)
	return h, err
}

// Decode opens a KEYS file with s. ErrCorrupt: the file is damaged;
// ErrWrongKey: it is intact and s does not open it.
func Decode(b []byte, s Secret) (*Keys, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	h, salt, off, err := header(b)
	if err != nil {
		return nil, err
	}
	if h.Passphrase != (len(s.Passphrase) > 0) {
		if h.Passphrase {
			return nil, fmt.Errorf("%w: this store is unlocked by a passphrase, not a key file", ErrWrongKey)
		}
		return nil, fmt.Errorf("%w: this store is unlocked by a key file, not a passphrase", ErrWrongKey)
	}
	n := chacha20poly1305.NonceSizeX
	rest := b[off : len(b)-4]
	if len(rest) < n+4 {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	clen := binary.LittleEndian.Uint32(rest[n:])
	if uint64(clen) != uint64(len(rest)-n-4) || clen > maxKeyList || clen < chacha20poly1305.Overhead {
		return nil, fmt.Errorf("%w: sealed key list length %d", ErrCorrupt, clen)
	}
	kdf := uint8(kdfRaw)
	if h.Passphrase {
		kdf = kdfArgon2id
	}
	a, err := chacha20poly1305.NewX(deriveKEK(s, kdf, h.KDF, salt))
	if err != nil {
		return nil, err
	}
	list, err := a.Open(nil, rest[:n], rest[n+4:], b[:off])
	if err != nil {
		return nil, ErrWrongKey
	}
	k, err := decodeList(list)
	if err != nil {
		// Sealed by the right key yet malformed: a bug, or a forger
		// who holds the key. Damage either way.
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return k, nil
}

// KeyIDs returns the sorted, distinct ids of the keys the given sessions
// hold now; a session without a key (never written, or purged) is left
// out.
func (k *Keys) KeyIDs(sessions []string) [][IDSize]byte {
	seen := map[[IDSize]byte]bool{}
	var ids [][IDSize]byte
	for _, s := range sessions {
		if id, ok := k.Lookup(s); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y [IDSize]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// A Sealer seals and opens the chunks of one file under one key.
type Sealer struct{ a cipher.AEAD }

// Seal appends nonce || ciphertext of plaintext to dst.
func (s *Sealer) Seal(dst, aad, plaintext []byte) []byte { return sealWith(s.a, dst, aad, plaintext) }

// Open appends the plaintext of sealed (nonce || ciphertext) to dst;
// ErrAuth if it is not what was sealed for aad.
func (s *Sealer) Open(dst, aad, sealed []byte) ([]byte, error) {
	return openWith(s.a, dst, aad, sealed)
}

// SegmentSealer returns the sealer of segment file number file, whose
// records belong to the sessions whose keys are ids (sorted, distinct; see
// KeyIDs). Its key is derived from the store key of generation gen, the file number and
// every one of those session keys (HMAC-SHA256), so it is never stored,
// and destroying any one of the session keys makes the whole file
// unreadable: a purge reaches the copies of the file in older backups.
// ErrNoKey: one of the ids is not in the store (a destroyed key).
func (k *Keys) SegmentSealer(gen uint32, file uint64, ids [][IDSize]byte) (*Sealer, error) {
	k.mu.RLock()
	store := k.store
	if gen != k.gen {
		store = k.retired[gen]
	}
	if store == nil {
		k.mu.RUnlock()
		return nil, ErrNoKey
	}
	m := hmac.New(sha256.New, store)
	m.Write([]byte("engram segment key\x00"))
	m.Write(binary.LittleEndian.AppendUint64(nil, file))
	for _, id := range ids {
		s, ok := k.keys[id]
		if !ok {
			k.mu.RUnlock()
			return nil, ErrNoKey
		}
		m.Write(id[:])
		m.Write(s.key)
	}
	k.mu.RUnlock()
	a, err := chacha20poly1305.NewX(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return &Sealer{a: a}, nil
}
