package keyword

import "testing"

func TestPorterStem(t *testing.T) {
	// Pairs from Porter's paper and his published sample vocabulary.
	cases := map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress",
		"cats": "cat", "feed": "feed", "agreed": "agre", "plastered": "plaster",
		"bled": "bled", "motoring": "motor", "sing": "sing", "conflated": "conflat",
		"troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan",
		"falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat",
		"conditional": "condit", "rational": "ration", "digitizer": "digit",
		"operator": "oper", "feudalism": "feudal", "decisiveness": "decis",
		"hopefulness": "hope", "callousness": "callous", "triplicate": "triplic",
		"formative": "form", "formalize": "formal", "electrical": "electr",
		"hopeful": "hope", "goodness": "good", "revival": "reviv",
		"allowance": "allow", "inference": "infer", "airliner": "airlin",
		"gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
		"irritant": "irrit", "replacement": "replac", "adjustment": "adjust",
		"dependent": "depend", "adoption": "adopt", "communism": "commun",
		"activate": "activ", "effective": "effect", "bowdlerize": "bowdler",
		"probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control",
		"roll": "roll", "generalizations": "gener", "oscillators": "oscil",
		"running": "run", "memories": "memori", "a": "a", "is": "is", "ies": "i",
	}
	for in, want := range cases {
		if got := string(porterStem([]byte(in))); got != want {
			t.Errorf("porterStem(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPorterStem(f *testing.F) {
	for _, s := range []string{"caresses", "y", "yyy", "ies", "eed", "sses", "ational", "bbbbbing"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !isLowerASCII(b) {
			return
		}
		got := porterStem(b)
		if len(got) > len(s)+1 {
			t.Fatalf("stem %q of %q grew by more than one byte", got, s)
		}
	})
}
