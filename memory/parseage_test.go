package memory

import (
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"180d": 180 * 24 * time.Hour, "1.5d": 36 * time.Hour, "72h": 72 * time.Hour, "1ns": 1} {
		if got, err := ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "d", "-1d", "0d", "0s", "-5h", "NaNd", "1e9d", "abc"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
}
