package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// The parsing every door shares: recall modes and fusions, times and ages,
// the selection shorthand, and the sane ranges of the numbers requests carry.

// ParseMode reads a recall mode: hybrid (also ""), vector, keyword (also bm25).
func ParseMode(s string) (memory.Mode, error) {
	switch s {
	case "", "hybrid":
		return memory.ModeHybrid, nil
	case "vector":
		return memory.ModeVector, nil
	case "keyword", "bm25":
		return memory.ModeKeyword, nil
	}
	return 0, badRequest("unknown mode %q (want hybrid, vector or keyword)", s)
}

// ParseFusion reads a hybrid fusion: weighted (also "") or rrf.
func ParseFusion(s string) (memory.Fusion, error) {
	switch s {
	case "", "weighted":
		return memory.FusionWeighted, nil
	case "rrf":
		return memory.FusionRRF, nil
	}
	return 0, badRequest("unknown fusion %q (want weighted or rrf)", s)
}

// ParseSuperseded reads what a recall does with memories that newer ones change: demote (also
// ""), hide or keep.
func ParseSuperseded(s string) (memory.SupersededPolicy, error) {
	switch s {
	case "", "demote":
		return memory.SupersededDemote, nil
	case "hide":
		return memory.SupersededHide, nil
	case "keep":
		return memory.SupersededKeep, nil
	}
	return 0, badRequest("unknown superseded %q (want demote, hide or keep)", s)
}

// ParseWhen reads a time: RFC 3339, a date (its start, or its end for
// endOfDay, in UTC), or an age before now (7d, 36h, 90m).
func ParseWhen(s string, now time.Time, endOfDay bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if endOfDay {
			t = t.Add(24*time.Hour - time.Nanosecond)
		}
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.ParseFloat(n, 64); err == nil && days >= 0 && days < 1e5 {
			return now.Add(-time.Duration(days * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, YYYY-MM-DD, or an age such as 7d or 12h)", s)
}

// Filter returns where ANDed with the conditions of s, relative times
// resolved against now; nil when there are none. Errors match ErrBadRequest
// (or memory.ErrInvalidFilter for a bad where).
func (s *Selection) Filter(where *memory.Filter, now time.Time) (*memory.Filter, error) {
	var fs []*memory.Filter
	if where != nil {
		fs = append(fs, where)
	}
	for _, t := range s.Tags {
		fs = append(fs, memory.Eq(memory.FieldTag, t))
	}
	if s.Source != nil {
		fs = append(fs, memory.Eq(memory.FieldSource, *s.Source))
	}
	var since, until time.Time
	var err error
	if s.Since != "" {
		if since, err = ParseWhen(s.Since, now, false); err != nil {
			return nil, badRequest("since: %v", err)
		}
	}
	if s.Until != "" {
		if until, err = ParseWhen(s.Until, now, true); err != nil {
			return nil, badRequest("until: %v", err)
		}
	}
	if !since.IsZero() || !until.IsZero() {
		fs = append(fs, memory.TimeRange(memory.FieldCreated, since, until))
	}
	var f *memory.Filter
	switch len(fs) {
	case 0:
		return nil, nil
	case 1:
		f = fs[0]
	default:
		f = memory.And(fs...)
	}
	return f, f.Validate()
}

// Sane ranges for the numbers requests carry. The memory layer checks what
// it must (k, importance, non-negative weights); these bounds also refuse
// values that are valid floats but no sensible request (a weight of 1e308,
// a score floor above the [0, 1] scale, a time in the year 9999) before
// anything runs.
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
		return badRequest("%s %g outside [0, %d]", what, w, MaxFusionWeight)
	}
	return nil
}

// check refuses numbers outside sane ranges.
func (req *RecallRequest) check() error {
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
	if f := req.MinScore; f != nil && (math.IsNaN(*f) || *f < 0 || *f > 1) {
		return badRequest("min_score %g outside [0, 1] (scores are on a [0, 1] scale)", *f)
	}
	if f := req.MinRelative; f != nil && (math.IsNaN(*f) || *f < 0 || *f > 1) {
		return badRequest("min_relative %g outside [0, 1] (a fraction of the best result's score)", *f)
	}
	if req.PromptTokens < 0 || req.PromptTokens > MaxPromptTokens {
		return badRequest("prompt_tokens %d outside [0, %d]", req.PromptTokens, MaxPromptTokens)
	}
	return nil
}

// checkTime refuses a time before 1970 or more than MaxFutureSkew ahead.
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(time.Now().Add(MaxFutureSkew)) {
		return badRequest("%s %s outside [1970-01-01, now + %v]", what, t.Format(time.RFC3339), MaxFutureSkew)
	}
	return nil
}

// check refuses numbers outside sane ranges, and a request with both or neither of text and
// messages, or infer without messages.
func (req *RememberRequest) check() error {
	switch {
	case req.Messages != nil && req.Text != "":
		return badRequest("give text or messages, not both")
	case req.Messages == nil && req.Infer:
		return badRequest("infer distills messages: give messages")
	case math.IsNaN(req.Importance) || req.Importance < 0 || req.Importance > 1:
		return badRequest("importance %g outside [0, 1]", req.Importance)
	}
	for i, m := range req.Messages {
		if err := checkTime(fmt.Sprintf("message %d: time", i), m.Time); err != nil {
			return err
		}
	}
	return checkTime("time", req.Time)
}
