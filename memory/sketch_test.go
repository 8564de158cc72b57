package memory

import (
	"slices"
	"testing"
)

func TestCueOf(t *testing.T) {
	cases := []struct {
		text       string
		cue        cueStrength
		correction bool
	}{
		{"I no longer drink coffee.", cueStrong, false},
		{"Switched to the monthly pass.", cueStrong, false},
		{"Correction: it is spelled Rhys.", cueStrong, true},
		{"Turns out the wedding is in Porto.", cueStrong, true},
		{"The gym raised the fee to €45.", cueStrong, false},
		{"My sessions are now on Wednesdays.", cueWeak, false},
		{"From July 1 I lead the payments team.", cueWeak, false},
		{"Since moving, I take the bus.", cueWeak, false},
		{"I like tea.", cueNone, false},
		{"I switched off notifications after 6 pm.", cueNone, false},
		{"我不再喝奶茶了。", cueStrong, false},
		{"羽毛球改成周日了。", cueStrong, false},
		{"我记错了，生日其实是5月21日。", cueStrong, true},
		{"搬家以后上班要坐地铁。", cueWeak, false},
		{"我现在住在朝阳区。", cueWeak, false},
		{"我喜欢喝茶。", cueNone, false},
	}
	for _, c := range cases {
		sk := sketchOf(c.text)
		if sk.cue != c.cue || sk.correction != c.correction {
			t.Errorf("%q: cue %d correction %v, want %d %v", c.text, sk.cue, sk.correction, c.cue, c.correction)
		}
	}
}

func TestValuesOf(t *testing.T) {
	cases := []struct {
		text string
		kind valueKind
		want []string
	}{
		{"Rent is €1,140 warm per month.", valueMoney, []string{"€1,140"}},
		{"The flight leaves at 9:40 am.", valueTime, []string{"9:40am"}},
		{"I take 50 mcg every morning.", valueQuantity, []string{"50mcg"}},
		{"Her birthday is on May 12.", valueDate, []string{"may12"}},
		{"Physio is every Monday.", valueWeekday, []string{"monday"}},
		{"My number is 07700 900123.", valuePhone, []string{"07700900123"}},
		{"生日是5月12日。", valueDate, []string{"5月12日"}},
		{"周三晚上七点上课。", valueWeekday, []string{"周三"}},
		{"周三晚上七点上课。", valueTime, []string{"七点"}},
		{"月租4500块。", valueMoney, []string{"4500块"}},
	}
	for _, c := range cases {
		if got := sketchOf(c.text).values[c.kind]; !slices.Equal(got, c.want) {
			t.Errorf("%q: kind %d = %q, want %q", c.text, c.kind, got, c.want)
		}
	}
}

func TestSubjectOf(t *testing.T) {
	for text, want := range map[string]string{
		"I like tea.":                       "I",
		"My address is 142 Curzon Street.":  "I",
		"My sister likes coffee.":           "sister",
		"Mum (Gillian) lives in Stockport.": "mum",
		"Tom's birthday is in May.":         "tom",
		"Rent is €1,140 a month.":           "",
		"我喜欢喝茶。":                            "I",
		"我妹妹喜欢喝咖啡。":                         "妹妹",
		"雨桐的生日是5月12日。":                      "雨桐",
		"周三晚上上课。":                           "",
	} {
		if got := sketchOf(text).subject; got != want {
			t.Errorf("%q: subject %q, want %q", text, got, want)
		}
	}
}

func TestShared(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"每周六下午打羽毛球。", "羽毛球改成周日了。", 1},
		{"下周二去上海出差。", "上海出差取消了。", 2},
		{"I do all my reading on a Kindle.", "The old e-reader went to my niece.", 1},
		{"I like tea.", "My sister likes coffee.", 0},
	}
	for _, c := range cases {
		if got := shared(sketchOf(c.a).terms, sketchOf(c.b).terms); got != c.want {
			t.Errorf("shared(%q, %q) = %d, want %d (%q / %q)", c.a, c.b, got, c.want, sketchOf(c.a).terms, sketchOf(c.b).terms)
		}
	}
}

func TestFactLike(t *testing.T) {
	for text, want := range map[string]bool{
		"Marta moved my physio to Wednesdays.":            true,
		"Correction: it is spelled Rhys.":                 true,
		"Letter from Krüger: the rent goes up to €1,215.": true,
		"Melanie: I moved to a new place!":                false,
		"assistant: noted, Wednesdays it is.":             false,
		"Did you move the meeting?":                       false,
		"Thanks, Gina! I switched jobs.":                  false,
		"Wow!! We moved!":                                 false,
		"Can you remind me tomorrow":                      false,
		"上海出差取消了。":                                        true,
		"你搬家了吗":                                           false,
	} {
		if got := factLike(text); got != want {
			t.Errorf("factLike(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestQueryRewrites(t *testing.T) {
	for q, want := range map[string]string{
		"How much is my rent now?":            "How much is my rent  ?",
		"我现在住在哪里？":                            "我 住在哪里？",
		"now":                                 "now",
		"What book is Jon currently reading?": "What book is Jon currently reading?",
	} {
		if got := withoutCurrentWords(q); got != want {
			t.Errorf("withoutCurrentWords(%q) = %q, want %q", q, got, want)
		}
	}
	for q, want := range map[string]bool{
		"Where do I work now?":                                     true,
		"我现在在哪家公司上班？":                                              true,
		"Does Yutong live with me?":                                true,
		"Where does Caroline work?":                                false,
		"Alcohol consumption increases the risk of liver disease.": false,
		"coffee": false,
	} {
		if got := aboutTheUser(q); got != want {
			t.Errorf("aboutTheUser(%q) = %v, want %v", q, got, want)
		}
	}
}

// FuzzSketch: sketching, judging and the query rewrites never panic, whatever the text.
func FuzzSketch(f *testing.F) {
	for _, s := range []string{"I no longer drink coffee.", "我记错了，生日其实是5月21日。", "Melanie: hi!", "", "\xff\xfe", "的的的", "€€ 12:30 9 am 5月"} {
		f.Add(s, "Physio is every Monday at 8:00 am.")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, y := sketchOf(a), sketchOf(b)
		judgeSupersede(x, y, true)
		judgeSupersede(y, x, false)
		factLike(a)
		withoutCurrentWords(a)
		aboutTheUser(a)
		inherits(1, a, b)
	})
}
