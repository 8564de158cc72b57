package memory

import "testing"

func TestConflictGoldens(t *testing.T) {
	cases := []struct {
		old, new string
		want     conflictKind
	}{
		{"Erin is not allergic to peanuts.", "Erin is allergic to peanuts.", conflictValue},
		{"Erin isn't allergic to peanuts.", "Erin is allergic to peanuts.", conflictValue},
		{"Erin never eats peanuts.", "Erin eats peanuts.", conflictValue},
		{"There is no meeting on Friday.", "There is a meeting on Friday.", conflictValue},
		{"Erin is not allergic to peanuts.", "Erin is not allergic to peanuts!", conflictNone},
		{"Tom has 2 cats.", "Tom has 3 cats.", conflictValue},
		{"Tom has two cats.", "Tom has three cats.", conflictValue},
		{"The rent is 1,200 euros.", "The rent is 1200 euros.", conflictNone},
		{"The rent is 1200 euros.", "The rent is 1250 euros.", conflictValue},
		{"Call on the third of March.", "Call on the fourth of March.", conflictValue},
		{"The party is in May.", "The party is in June.", conflictValue},
		{"The party is on Monday.", "The party is on Monday, as planned.", conflictNone},
		{"The flight leaves at 9:40.", "The flight leaves at 11:15.", conflictValue},
		{"My manager is Bob Smith.", "My manager is Carol Smith.", conflictName},
		{"We met Anna in Paris.", "We met Anna in Rome.", conflictName},
		{"Meeting moved to Friday.", "Meeting with Anna moved to Friday.", conflictNone},
		{"I like tea.", "I really like tea.", conflictNone},
		{"小明不喜欢喝咖啡。", "小明喜欢喝咖啡。", conflictValue},
		{"我没有去过北京。", "我去过北京。", conflictValue},
		{"别告诉他。", "告诉他。", conflictValue},
		{"这家店的咖啡不错。", "这家店的咖啡很好。", conflictNone},
		{"我特别喜欢猫。", "我喜欢猫。", conflictNone},
		{"别人的意见很重要。", "大家的意见很重要。", conflictNone},
		{"我有两只猫。", "我有三只猫。", conflictValue},
		{"会议在周一。", "会议在周五。", conflictValue},
		{"会议在星期一。", "会议在星期天。", conflictValue},
		{"我们明天见。", "我们后天见。", conflictValue},
		{"项目经理是张伟。", "项目经理是李娜。", conflictName},
		{"我和王经理开会。", "我要和王经理开会。", conflictNone},
		{"３月１５日", "3月15日", conflictNone},
	}
	for _, c := range cases {
		if got := conflict(c.old, c.new); got != c.want {
			t.Errorf("conflict(%q, %q) = %d, want %d (%+v / %+v)", c.old, c.new, got, c.want, factsOf(c.old), factsOf(c.new))
		}
	}
}
