package replay

import "testing"

func TestCountsReasons(t *testing.T) {
	var c Counts
	if got := c.Reasons(); got != "" {
		t.Errorf("no reasons: got %q", got)
	}
	for _, why := range []string{"b", "a", "c", "a", "c", "a"} {
		c.undetermined(why)
	}
	if got, want := c.Reasons(), "3 a, 2 c, 1 b"; got != want {
		t.Errorf("Reasons() = %q, want %q", got, want)
	}
	if c.Checked != 6 || c.Undetermined != 6 {
		t.Errorf("checked %d, undetermined %d, want 6 and 6", c.Checked, c.Undetermined)
	}
}
