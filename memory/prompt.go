package memory

import (
	"fmt"
	"strings"
	"unicode"
)

// Delimiters of the memory block BuildPrompt writes. Occurrences inside memory texts are
// defused (the angle brackets replaced) so a memory cannot close the block early.
const (
	PromptOpen  = "<memories>"
	PromptClose = "</memories>"
)

// DefaultPromptTokens is the default token budget of a memory block.
const DefaultPromptTokens = 1000

// PromptOptions configure BuildPrompt.
type PromptOptions struct {
	// TokenBudget bounds the whole block, delimiters included (DefaultPromptTokens), as counted
	// by EstimateTokens.
	TokenBudget int
	// Header is the line after the opening delimiter; "" means a default naming the query.
	Header string
	// NoScores leaves the score out of each entry.
	NoScores bool
}

// Prompt is a memory block ready to paste into a model prompt.
type Prompt struct {
	Text string
	// Included is how many memories fit; Skipped lists the IDs left out for the budget.
	Included int
	Skipped  []string
	// Tokens is EstimateTokens(Text).
	Tokens int
}

// BuildPrompt renders results (best first, as Recall returns them) between PromptOpen and
// PromptClose, one numbered entry per memory with its final score, date and source, keeping
// as many as fit in the token budget in rank order: a memory too long for the remaining budget
// is skipped and the next one tried. An entry says which memories are newer than which: a stale
// one (Result.Stale) "outdated: see [n]" when the memory that changes it is entry n, else
// "outdated"; the one that changes it "newer than [m]". With no results or none that fit, Text
// is empty.
func BuildPrompt(query string, results []Result, opts PromptOptions) (Prompt, error) {
	if opts.TokenBudget == 0 {
		opts.TokenBudget = DefaultPromptTokens
	}
	if opts.TokenBudget < 0 {
		return Prompt{}, errorf(ErrInvalidInput, "negative token budget %d", opts.TokenBudget)
	}
	header := opts.Header
	if header == "" {
		header = fmt.Sprintf("Memories relevant to %q, most relevant first:", defuse(oneLine(query)))
	}
	frame := PromptOpen + "\n" + header + "\n" + PromptClose + "\n"
	// First which entries fit, their labels counted at their longest; then the labels, which
	// name entry numbers.
	var in []int
	used := EstimateTokens(frame)
	var skipped []string
	for i := range results {
		reserve := ""
		if results[i].Stale || len(results[i].Replaces) > 0 {
			reserve = labelReserve
		}
		t := EstimateTokens(entry(&results[i], len(in)+1, opts, reserve))
		if used+t > opts.TokenBudget {
			skipped = append(skipped, results[i].ID)
			continue
		}
		used += t
		in = append(in, i)
	}
	if len(in) == 0 {
		return Prompt{Skipped: skipped}, nil
	}
	num := make(map[string]int, len(in))
	for k, i := range in {
		num[results[i].ID] = k + 1
	}
	var b strings.Builder
	for k, i := range in {
		r := &results[i]
		var label string
		if r.Stale {
			label = " outdated"
			if n, ok := num[r.Newer]; ok {
				label = fmt.Sprintf(" outdated: see [%d]", n)
			}
		}
		var older []string
		for _, id := range r.Replaces {
			if n, ok := num[id]; ok {
				older = append(older, fmt.Sprintf("[%d]", n))
			}
		}
		if len(older) > 0 {
			label += " newer than " + strings.Join(older, ", ")
		}
		b.WriteString(entry(r, k+1, opts, label))
	}
	p := Prompt{Included: len(in), Skipped: skipped}
	p.Text = PromptOpen + "\n" + header + "\n" + b.String() + PromptClose + "\n"
	p.Tokens = EstimateTokens(p.Text)
	return p, nil
}

// labelReserve stands for an entry's labels while BuildPrompt decides what fits.
const labelReserve = " outdated: see [100] newer than [100], [100]"

// entry renders one numbered memory of a prompt block.
func entry(r *Result, n int, opts PromptOptions, label string) string {
	var e strings.Builder
	fmt.Fprintf(&e, "[%d]", n)
	if !opts.NoScores {
		fmt.Fprintf(&e, " score=%.3f", r.Score.Final)
	}
	if !r.Updated.IsZero() {
		fmt.Fprintf(&e, " date=%s", r.Updated.UTC().Format("2006-01-02"))
	}
	if r.Source != "" {
		fmt.Fprintf(&e, " source=%s", defuse(oneLine(r.Source)))
	}
	e.WriteString(label)
	fmt.Fprintf(&e, "\n%s\n", defuse(r.Text))
	return e.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var defuser = strings.NewReplacer(PromptOpen, "‹memories›", PromptClose, "‹/memories›")

func defuse(s string) string { return defuser.Replace(s) }

// EstimateTokens estimates how many tokens a subword tokenizer makes of s without running one:
// each Han, Hiragana, Katakana or Hangul character counts one token, every other run of up to
// four other characters one more (English BPE averages about four characters a token). It is a
// budget heuristic, not a count: expect it off by 10-30% for a given model, low for code and
// rare scripts.
func EstimateTokens(s string) int {
	cjk, other := 0, 0
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			cjk++
		} else {
			other++
		}
	}
	return cjk + (other+3)/4
}
