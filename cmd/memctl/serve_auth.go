package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/server"
)

// serveAuth holds serve's key, token and TLS flags and turns them into
// server options.
type serveAuth struct {
	token, tokenFile, keysFile string
	tlsCert, tlsKey, tlsDir    string
	selfSigned, insecureHTTP   bool
	// keysLater: keysFile is the default key file, which does not exist
	// yet; the server enforces it once `memctl keys add` creates it.
	keysLater bool
}

func defaultTLSDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "engram", "tls")
	}
	return ""
}

func (sa *serveAuth) addFlags(f *pflag.FlagSet) {
	f.StringVar(&sa.token, "token", "", "admin bearer token (visible in ps: prefer --token-file or ENGRAM_TOKEN)")
	f.StringVar(&sa.tokenFile, "token-file", "", "file holding the admin bearer token")
	f.StringVar(&sa.keysFile, "keys", defaultKeysPath(), "key file (see `memctl keys`)")
	f.StringVar(&sa.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with")
	f.StringVar(&sa.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&sa.selfSigned, "tls-self-signed", false, "serve HTTPS with a self-signed certificate kept in --tls-dir (made on first run; its fingerprint is printed)")
	f.StringVar(&sa.tlsDir, "tls-dir", defaultTLSDir(), "directory of the --tls-self-signed certificate")
	f.BoolVar(&sa.insecureHTTP, "insecure-http", false, "allow plain HTTP on a non-loopback address (keys travel in clear)")
}

// resolve reads the secrets, checks them against addr and fills the
// security fields of opts. It returns the URL scheme clients use.
func (sa *serveAuth) resolve(addr string, opts *server.Options, logger *slog.Logger) (string, error) {
	if sa.tokenFile != "" {
		if sa.token != "" {
			return "", usagef("give --token or --token-file, not both")
		}
		t, err := readSecretFile(sa.tokenFile)
		if err != nil {
			return "", err
		}
		sa.token = t
	}
	if sa.keysFile != "" && sa.keysFile == defaultKeysPath() {
		if _, err := os.Stat(sa.keysFile); os.IsNotExist(err) {
			// No keys yet; the server enforces the file from the moment
			// `memctl keys add` creates it.
			sa.keysLater = true
		}
	}
	remote := !server.IsLoopback(addr)
	if remote && sa.token == "" && (sa.keysFile == "" || sa.keysLater) {
		return "", usagef("refusing to serve on %s without keys: create some with `memctl keys add` (or set --token-file / ENGRAM_TOKEN), or bind 127.0.0.1", addr)
	}
	if remote && sa.token != "" && server.SecretBits(sa.token) < server.MinRemoteSecretBits {
		return "", usagef("the token is too weak for a non-loopback bind (about %.0f bits, need %d): use `memctl keys add`, or e.g. `openssl rand -hex 32`",
			server.SecretBits(sa.token), server.MinRemoteSecretBits)
	}
	switch {
	case sa.selfSigned && (sa.tlsCert != "" || sa.tlsKey != ""):
		return "", usagef("give --tls-cert/--tls-key or --tls-self-signed, not both")
	case (sa.tlsCert == "") != (sa.tlsKey == ""):
		return "", usagef("--tls-cert and --tls-key go together")
	case sa.tlsCert != "":
		cfg, err := server.LoadTLS(sa.tlsCert, sa.tlsKey)
		if err != nil {
			return "", err
		}
		opts.TLS = cfg
	case sa.selfSigned:
		hosts := append([]string{hostOf(addr)}, opts.AllowedHosts...)
		cfg, fp, created, err := server.SelfSignedTLS(sa.tlsDir, hosts)
		if err != nil {
			return "", err
		}
		opts.TLS = cfg
		verb := "using the"
		if created {
			verb = "made a new"
		}
		logger.Info(verb+" self-signed certificate; clients should check its fingerprint", "dir", sa.tlsDir, "sha256", fp)
	}
	if remote && opts.TLS == nil && !sa.insecureHTTP {
		return "", usagef("refusing plain HTTP on %s: keys would travel in clear. Give --tls-cert/--tls-key or --tls-self-signed, or --insecure-http to accept that", addr)
	}
	opts.Token, opts.KeysFile, opts.KeysFileMayAppear, opts.InsecureHTTP = sa.token, sa.keysFile, sa.keysLater, sa.insecureHTTP
	if opts.TLS != nil {
		return "https", nil
	}
	return "http", nil
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// authMode says how serve authenticates, for its start-up line (never the
// secrets themselves).
func (sa *serveAuth) mode() string {
	later := ""
	if sa.keysLater {
		later = "; keys from " + sa.keysFile + " once `memctl keys add` creates it"
	}
	switch {
	case sa.keysFile != "" && !sa.keysLater && sa.token != "":
		return "keys from " + sa.keysFile + " and an admin token"
	case sa.keysFile != "" && !sa.keysLater:
		return "keys from " + sa.keysFile
	case sa.token != "":
		return "admin token" + later
	}
	return "none (loopback only" + later + ")"
}

// readSecretFile reads a secret from a file: the first line, trimmed. A file
// other users can read is refused.
func readSecretFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %v; other users must not read a secret (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	secret := strings.TrimSpace(line)
	if secret == "" {
		return "", fmt.Errorf("%s holds no secret", path)
	}
	return secret, nil
}
