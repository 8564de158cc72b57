package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrTLSRequired is returned by ListenAndServe for a non-loopback address
// without TLS, unless Options.InsecureHTTP says plain HTTP is intended: the
// bearer keys would cross the network in clear.
var ErrTLSRequired = errors.New("server: binding a non-loopback address without TLS sends keys in clear: give --tls-cert/--tls-key or --tls-self-signed, or --insecure-http to accept that")

// newTLSConfig returns the service's TLS settings for cert: TLS 1.2 or
// later, Go's default (AEAD, forward-secret) cipher suites.
func newTLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// LoadTLS reads a PEM certificate (chain) and its private key.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	if st, err := os.Stat(keyFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("server: TLS key %s has mode %v; other users must not read it (chmod 600 %s)", keyFile, st.Mode().Perm(), keyFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server: loading TLS certificate: %w", err)
	}
	return newTLSConfig(cert), nil
}

// Fingerprint is the SHA-256 of a certificate's DER encoding in the usual
// colon-separated hex form, what a client pins or compares by eye.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// SelfSignedTLS loads the self-signed certificate kept in dir (cert.pem,
// key.pem), making one on first use (ECDSA P-256, valid for ten years, for
// the loopback names and hosts). It returns the TLS settings, the
// certificate's Fingerprint for clients to check, and whether it was made
// now. The key file is written 0600 in a 0700 directory.
func SelfSignedTLS(dir string, hosts []string) (cfg *tls.Config, fingerprint string, created bool, err error) {
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := os.Stat(certFile); err == nil {
		cfg, err := LoadTLS(certFile, keyFile)
		if err != nil {
			return nil, "", false, err
		}
		return cfg, Fingerprint(cfg.Certificates[0].Certificate[0]), false, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", false, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, "", false, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"engram"}, CommonName: "engram memory service"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		h = canonicalHost(h)
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && h != "localhost" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", false, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", false, err
	}
	if err := writeFileSync(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return nil, "", false, err
	}
	if err := writeFileSync(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return nil, "", false, err
	}
	cfg, err = LoadTLS(certFile, keyFile)
	if err != nil {
		return nil, "", false, err
	}
	return cfg, Fingerprint(der), true, nil
}

// writeFileSync writes data to a new 0600 file at path through a synced
// temporary file, a rename and a sync of the directory, so a crash leaves
// the old file or the new one, never a torn one.
func writeFileSync(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
