package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// RuntimeVersion is the ONNX Runtime release scripts/setup.sh installs and
// the cache path is named after.
const RuntimeVersion = "1.30.0"

// EnvRuntimeLib names the environment variable holding the path of
// libonnxruntime when no option gives one.
const EnvRuntimeLib = "ENGRAM_ONNXRUNTIME_LIB"

// EnvCache names the environment variable that overrides the project cache
// directory (default: os.UserCacheDir()/engram).
const EnvCache = "ENGRAM_CACHE"

// ErrRuntimeNotFound is returned (wrapped) when no ONNX Runtime library can
// be found; its message says how to get one.
var ErrRuntimeNotFound = errors.New("onnx: ONNX Runtime library not found")

// CacheDir returns the project cache directory: $ENGRAM_CACHE, else
// os.UserCacheDir()/engram. scripts/setup.sh uses the same rule.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("onnx: no cache directory: %w", err)
	}
	return filepath.Join(d, "engram"), nil
}

// RuntimeLibraryPath resolves the ONNX Runtime shared library: explicit (an
// option) if not empty, else $ENGRAM_ONNXRUNTIME_LIB, else the copy
// scripts/setup.sh puts in the cache directory. The file must exist.
func RuntimeLibraryPath(explicit string) (string, error) {
	var tried []string
	try := func(src, p string) (string, bool) {
		if p == "" {
			return "", false
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
		tried = append(tried, src+" "+p)
		return "", false
	}
	if p, ok := try("option", explicit); ok {
		return p, nil
	}
	if p, ok := try("$"+EnvRuntimeLib, os.Getenv(EnvRuntimeLib)); ok {
		return p, nil
	}
	if d, err := CacheDir(); err == nil {
		if p, ok := try("cache", filepath.Join(d, "onnxruntime", RuntimeVersion, "libonnxruntime.so")); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (tried: %s); run scripts/setup.sh to download libonnxruntime.so %s "+
		"from the onnxruntime-node npm package into the cache, or set %s or Options.LibraryPath "+
		"to an existing libonnxruntime.so", ErrRuntimeNotFound, strings.Join(tried, ", "),
		RuntimeVersion, EnvRuntimeLib)
}

// The ONNX Runtime environment is process-global in onnxruntime_go (one
// library, one OrtEnv). It is created by the first Open and kept until the
// process exits: destroying it dlcloses the library, and creating an
// environment again after that is not something ORT promises to support.
var runtimeState struct {
	sync.Mutex
	path string // library the environment was created from; "" if not by us
}

// initRuntime makes sure the environment exists, created from lib.
func initRuntime(lib string) error {
	runtimeState.Lock()
	defer runtimeState.Unlock()
	if ort.IsInitialized() {
		if runtimeState.path != "" && runtimeState.path != lib {
			return fmt.Errorf("onnx: ONNX Runtime already loaded from %s in this process; "+
				"cannot also load %s (one library per process)", runtimeState.path, lib)
		}
		// Initialized by us with the same library, or by another user of
		// onnxruntime_go in this process: share it.
		return nil
	}
	ort.SetSharedLibraryPath(lib)
	// ORT's own log only repeats on stderr the errors callers get returned.
	if err := ort.InitializeEnvironment(ort.WithLogLevelFatal()); err != nil {
		return fmt.Errorf("onnx: loading ONNX Runtime from %s: %w", lib, err)
	}
	runtimeState.path = lib
	return nil
}
