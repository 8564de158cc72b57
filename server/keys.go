package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// KeyPrefix starts every key memctl generates, so a leaked one is easy to
// recognise (and to scan for).
const KeyPrefix = "engram_"

// NewKeySecret returns a new random key: KeyPrefix and 256 random bits in
// unpadded base64url.
func NewKeySecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashKey returns the stored form of a key secret. Keys are long random
// strings, so a plain SHA-256 (not a slow password hash) is enough: the
// hash cannot be inverted and brute force over 2^128 or more is out of
// reach.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SecretBits estimates the strength of a secret a person chose, in bits:
// its length times log2 of the alphabet its character classes span (lower
// case, upper case, digits, other; 16 for a string of hex digits). It
// over-estimates words, so it is a floor check, not a guarantee.
func SecretBits(secret string) float64 {
	var lower, upper, digit, other bool
	for _, r := range secret {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case unicode.IsSpace(r):
			other = true
		default:
			other = true
		}
	}
	if isHex(secret) {
		// Hex digits are the usual form of random tokens (openssl rand -hex).
		return float64(distinctRuns(secret)) * 4
	}
	alphabet := 0
	for _, c := range []struct {
		on bool
		n  int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if c.on {
			alphabet += c.n
		}
	}
	if alphabet < 2 {
		return 0
	}
	return float64(distinctRuns(secret)) * math.Log2(float64(alphabet))
}

// distinctRuns counts the runs of equal characters in s: a run of one
// character adds almost nothing to a secret.
func distinctRuns(s string) int {
	n, prev := 0, rune(-1)
	for _, r := range s {
		if r != prev {
			n++
		}
		prev = r
	}
	return n
}

func isHex(s string) bool {
	lower, upper := true, true
	for _, r := range s {
		lower = lower && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
		upper = upper && (r >= '0' && r <= '9' || r >= 'A' && r <= 'F')
	}
	return s != "" && (lower || upper)
}

// MinRemoteSecretBits is the least strength SecretBits must find in a
// token that guards a non-loopback bind.
const MinRemoteSecretBits = 128

// Key is one entry of a key file: its name, the hash of its secret, the
// sessions it may use and its rights. The secret itself is never stored.
type Key struct {
	Name     string    `json:"name"`
	Hash     string    `json:"hash"`
	Sessions Scope     `json:"sessions"`
	Rights   Right     `json:"rights"`
	Created  time.Time `json:"created"`
}

// validate checks a key's fields.
func (k *Key) validate() error {
	if k.Name == "" || len(k.Name) > 64 || strings.IndexFunc(k.Name, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '@' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) >= 0 {
		return fmt.Errorf("key name %q: want 1-64 letters, digits, '-', '_', '.' or '@'", k.Name)
	}
	if hx, ok := strings.CutPrefix(k.Hash, "sha256:"); !ok || len(hx) != 64 {
		return fmt.Errorf("key %q: hash must be sha256: and 64 hex digits", k.Name)
	} else if _, err := hex.DecodeString(hx); err != nil {
		return fmt.Errorf("key %q: hash must be sha256: and 64 hex digits", k.Name)
	}
	if err := ValidateScope(k.Sessions); err != nil {
		return fmt.Errorf("key %q: %w", k.Name, err)
	}
	if k.Rights == 0 {
		return fmt.Errorf("key %q has no rights (want read, write and/or admin)", k.Name)
	}
	if k.Rights.Has(RightAdmin) && !k.Sessions.All() {
		return fmt.Errorf("key %q: the admin right reaches every session (stats, backup, export), so it needs the scope \"*\"", k.Name)
	}
	return nil
}

// KeyFileVersion is the format version of key files this package writes.
const KeyFileVersion = 1

// KeyFile is the JSON document of a key file (docs/format/keys.md).
type KeyFile struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// ErrKeyFile marks a key file that cannot be used: unreadable, malformed, or
// readable by other users.
var ErrKeyFile = errors.New("server: bad key file")

// ReadKeyFile reads and validates a key file. A missing file is an empty
// key file (and an error satisfying os.IsNotExist); a file that other users
// can read or write is refused, as ssh refuses such private keys.
func ReadKeyFile(path string) (*KeyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return &KeyFile{Version: KeyFileVersion}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v; other users must not read it (chmod 600 %s)", ErrKeyFile, path, st.Mode().Perm(), path)
	}
	var kf KeyFile
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKeyFile, path, err)
	}
	if kf.Version != KeyFileVersion {
		return nil, fmt.Errorf("%w: %s has version %d, this build reads version %d", ErrKeyFile, path, kf.Version, KeyFileVersion)
	}
	seen := map[string]bool{}
	for i := range kf.Keys {
		k := &kf.Keys[i]
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrKeyFile, path, err)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("%w: %s: two keys named %q", ErrKeyFile, path, k.Name)
		}
		seen[k.Name] = true
	}
	if kf.Keys == nil {
		kf.Keys = []Key{}
	}
	return &kf, nil
}

// WriteKeyFile writes kf to path atomically: a 0600 temporary file in the
// same directory (created 0700 if missing), synced, renamed over path, and
// the directory synced.
func WriteKeyFile(path string, kf *KeyFile) error {
	for i := range kf.Keys {
		if err := kf.Keys[i].validate(); err != nil {
			return err
		}
	}
	kf.Version = KeyFileVersion
	data, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFileSync(path, data)
}

// AddKey adds a key named name to the key file at path (creating it) and
// returns its secret, which is stored only as a hash: the caller must show
// it now or lose it.
func AddKey(path, name string, sessions Scope, rights Right) (string, error) {
	kf, err := ReadKeyFile(path)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	if slices.ContainsFunc(kf.Keys, func(k Key) bool { return k.Name == name }) {
		return "", fmt.Errorf("a key named %q exists already (revoke it first)", name)
	}
	secret, err := NewKeySecret()
	if err != nil {
		return "", err
	}
	k := Key{Name: name, Hash: HashKey(secret), Sessions: slices.Clone(sessions), Rights: rights, Created: time.Now().UTC().Truncate(time.Second)}
	if err := k.validate(); err != nil {
		return "", err
	}
	kf.Keys = append(kf.Keys, k)
	if err := WriteKeyFile(path, kf); err != nil {
		return "", err
	}
	return secret, nil
}

// RevokeKey removes the key named name from the key file at path. A running
// server stops accepting it within KeyReloadInterval.
func RevokeKey(path, name string) error {
	kf, err := ReadKeyFile(path)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(kf.Keys, func(k Key) bool { return k.Name == name })
	if i < 0 {
		return fmt.Errorf("no key named %q in %s", name, path)
	}
	kf.Keys = slices.Delete(kf.Keys, i, i+1)
	return WriteKeyFile(path, kf)
}

// KeyReloadInterval is how often a server looks at its key file for
// changes (keys added or revoked while it runs).
const KeyReloadInterval = time.Second

// keyring resolves bearer secrets to callers: the keys of a key file
// (reloaded when it changes) and the --token shorthand.
//
// With mayAppear the key file need not exist yet. Until it appears the
// keyring is what it would be without one (open, unless there is a token);
// refresh looks for it on every request, so the request after `memctl keys
// add` already needs a key, and from then on the file is enforced for good:
// a file that cannot be used accepts no key until it is fixed, and a
// deleted file revokes every key in it without making the service open
// again (only a restart does that). A key therefore never exists in the
// file unenforced, and the switch is logged.
type keyring struct {
	path      string
	token     *Caller // the --token admin key, nil if none
	tokenHash [32]byte
	logger    *slog.Logger

	mu        sync.Mutex
	enforcing bool      // the key file was found: its keys apply from then on
	checked   time.Time // when the file was last stat'ed
	modTime   time.Time
	size      int64
	keys      []loadedKey
	loadErr   error // the last reload's error; the previous keys stay in force
}

type loadedKey struct {
	hash   [32]byte
	caller *Caller
}

// newKeyring loads the key file at path (if path is not empty; with
// mayAppear it may not exist yet) and adds token as an admin key named
// "token". logger hears when an awaited key file appears.
func newKeyring(path, token string, mayAppear bool, logger *slog.Logger) (*keyring, error) {
	kr := &keyring{path: path, logger: logger}
	if token != "" {
		kr.token = &Caller{Name: "token", Rights: AllRights, Scope: Scope{"*"}}
		kr.tokenHash = sha256.Sum256([]byte(token))
	}
	if path != "" {
		switch err := kr.reload(); {
		case err == nil:
			kr.enforcing = true
		case mayAppear && errors.Is(err, fs.ErrNotExist):
			// Not yet: refresh looks for it.
		default:
			return nil, err
		}
	}
	return kr, nil
}

// empty reports whether the keyring authenticates nobody: no token, and no
// key file or one that has not appeared yet (the open loopback mode).
func (kr *keyring) empty() bool {
	open, _ := kr.refresh(time.Now())
	return open
}

func (kr *keyring) reload() error {
	st, err := os.Stat(kr.path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	kf, err := ReadKeyFile(kr.path)
	if err != nil {
		return err
	}
	keys := make([]loadedKey, 0, len(kf.Keys))
	for _, k := range kf.Keys {
		var lk loadedKey
		hx, _ := strings.CutPrefix(k.Hash, "sha256:")
		hex.Decode(lk.hash[:], []byte(hx))
		lk.caller = &Caller{Name: k.Name, Rights: k.Rights, Scope: slices.Clone(k.Sessions)}
		keys = append(keys, lk)
	}
	kr.keys, kr.modTime, kr.size = keys, st.ModTime(), st.Size()
	return nil
}

// refresh brings the keyring up to date with its key file and reports
// whether it is open (empty). A key file not enforced yet (mayAppear) is
// looked for on every call, a stat that costs about a microsecond while it
// is missing; one enforced is reloaded as maybeReload says. err is a key
// file that could not be (re)loaded.
func (kr *keyring) refresh(now time.Time) (open bool, err error) {
	if kr.path == "" {
		return kr.token == nil, nil
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if kr.enforcing {
		return false, kr.maybeReload(now)
	}
	if _, err := os.Stat(kr.path); errors.Is(err, fs.ErrNotExist) {
		return kr.token == nil, nil
	}
	// The key file appeared: it is enforced from this request on, even if
	// it cannot be used (then no key of it is accepted until it is fixed).
	kr.enforcing, kr.checked = true, now
	if err := kr.reload(); err != nil {
		kr.loadErr = err
		kr.logger.Error("key file appeared but cannot be used: its keys are enforced from now on, and none is accepted until it is fixed",
			"file", kr.path, "err", err)
		return false, nil
	}
	kr.logger.Warn("key file appeared: its keys are enforced from now on, and every request needs one", "file", kr.path, "keys", len(kr.keys))
	return false, nil
}

// maybeReload re-reads the key file when its size or time changed, at most
// once per KeyReloadInterval. A file that turns bad keeps the old keys in
// force and is reported through err until it is fixed; a deleted file
// revokes every key (and is reported the same way). The caller holds kr.mu.
func (kr *keyring) maybeReload(now time.Time) error {
	if kr.path == "" || now.Sub(kr.checked) < KeyReloadInterval {
		return kr.loadErr
	}
	kr.checked = now
	st, err := os.Stat(kr.path)
	if err == nil && st.ModTime().Equal(kr.modTime) && st.Size() == kr.size && kr.loadErr == nil {
		return nil
	}
	if err := kr.reload(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// A deleted key file revokes every key in it.
			kr.keys = nil
		}
		kr.loadErr = err
		return err
	}
	kr.loadErr = nil
	return nil
}

// lookup returns the caller whose secret is secret, or nil. Every key's
// hash is compared in constant time, so timing tells nothing about which
// (or whether a) key was close. refresh keeps the keys current.
func (kr *keyring) lookup(secret string) *Caller {
	sum := sha256.Sum256([]byte(secret))
	var found *Caller
	if kr.token != nil && subtle.ConstantTimeCompare(sum[:], kr.tokenHash[:]) == 1 {
		found = kr.token
	}
	kr.mu.Lock()
	keys := kr.keys
	kr.mu.Unlock()
	for _, k := range keys {
		if subtle.ConstantTimeCompare(sum[:], k.hash[:]) == 1 {
			found = k.caller
		}
	}
	return found
}
