package server

import (
	"fmt"
	"math"
	"time"
)

// Sane ranges for the numbers requests carry. The memory layer checks what
// it must (k, importance, non-negative weights); these bounds also refuse
// values that are valid floats but no sensible request (a weight of 1e308,
// a score floor above the [0, 1] scale, a time in the year 9999), with 400
// before anything runs.
const (
	MaxFusionWeight = 1000
	MaxPromptTokens = 1 << 20
	// MaxFutureSkew is how far in the future a remembered time may lie
	// (clock skew between machines).
	MaxFutureSkew = 24 * time.Hour
)

// minTime is the earliest time a memory may carry.
var minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func checkWeight(what string, w float64) error {
	if math.IsNaN(w) || w < 0 || w > MaxFusionWeight {
		return fmt.Errorf("%w: %s %g outside [0, %d]", errBadRequest, what, w, MaxFusionWeight)
	}
	return nil
}

// checkRanges refuses numbers outside sane ranges (400).
func (req *RecallRequest) checkRanges() error {
	if err := checkWeight("vector_weight", req.VectorWeight); err != nil {
		return err
	}
	if err := checkWeight("keyword_weight", req.KeywordWeight); err != nil {
		return err
	}
	for src, w := range req.SourceWeights {
		if err := checkWeight(fmt.Sprintf("source_weights[%q]", src), w); err != nil {
			return err
		}
	}
	if math.IsNaN(req.MinScore) || req.MinScore < 0 || req.MinScore > 1 {
		return fmt.Errorf("%w: min_score %g outside [0, 1] (scores are on a [0, 1] scale)", errBadRequest, req.MinScore)
	}
	if req.PromptTokens < 0 || req.PromptTokens > MaxPromptTokens {
		return fmt.Errorf("%w: prompt_tokens %d outside [0, %d]", errBadRequest, req.PromptTokens, MaxPromptTokens)
	}
	return nil
}

// checkTime refuses a time before 1970 or more than MaxFutureSkew ahead.
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(time.Now().Add(MaxFutureSkew)) {
		return fmt.Errorf("%w: %s %s outside [1970-01-01, now + %v]", errBadRequest, what, t.Format(time.RFC3339), MaxFutureSkew)
	}
	return nil
}

// checkRanges refuses numbers outside sane ranges (400).
func (req *RememberRequest) checkRanges() error {
	if math.IsNaN(req.Importance) || req.Importance < 0 || req.Importance > 1 {
		return fmt.Errorf("%w: importance %g outside [0, 1]", errBadRequest, req.Importance)
	}
	return checkTime("time", req.Time)
}
