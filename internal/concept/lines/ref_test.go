package lines

import (
	"errors"
	"regexp"
	"testing"
)

// TestRefRoundTrips: a Ref and a RefRange print as they parse, and the
// parser and the pattern given to schemas accept exactly the same values.
func TestRefRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1#00", "12#a3", "9223372036854775807#ff"} {
		r, err := ParseRef(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRef(%q) = %v, %v; String %q", s, r, err, r.String())
		}
	}
	if r := (Ref{Line: 40, Hash: Anchor("x")}); !r.Names("x") || r.Names("y") {
		t.Errorf("%v names x and only x", r)
	}
	for _, s := range []string{"12#a3", "12#a3..14#0f", "14#0f..12#a3"} {
		r, err := ParseRefRange(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRefRange(%q) = %v, %v; String %q", s, r, err, r.String())
		}
	}
	if r, _ := ParseRefRange("12#a3"); !r.One() || r.To.Line != 12 {
		t.Errorf("one line: %+v", r)
	}
	one := regexp.MustCompile(`^` + RefPattern + `$`)
	rng := regexp.MustCompile(`^` + RefRangePattern + `$`)
	for _, c := range []struct {
		s    string
		want error
	}{
		{"12#a3", nil}, {"007#00", nil},
		{"0#a3", ErrNoLine}, {"000#a3", ErrNoLine},
		{"12#A3", ErrNotRef}, {"12", ErrNotRef}, {"#a3", ErrNotRef}, {" 12#a3", ErrNotRef}, {"12#a3 ", ErrNotRef},
		{"12#a3x", ErrNotRef}, {"-1#a3", ErrNotRef}, {"12#a3: text", ErrNotRef}, {"", ErrNotRef}, {"a#bc", ErrNotRef},
	} {
		_, err := ParseRef(c.s)
		if !errors.Is(err, c.want) && err != c.want {
			t.Errorf("ParseRef(%q): %v, want %v", c.s, err, c.want)
		}
		if one.MatchString(c.s) != (err == nil) {
			t.Errorf("%q: RefPattern says %v, ParseRef %v", c.s, one.MatchString(c.s), err)
		}
	}
	for _, s := range []string{"12#a3..", "12#a3...14#0f", "12#a3..0#00", "..12#a3", "12#a3..14#0f..15#00"} {
		_, err := ParseRefRange(s)
		if err == nil || rng.MatchString(s) {
			t.Errorf("%q: ParseRefRange %v, RefRangePattern %v; both refuse it", s, err, rng.MatchString(s))
		}
	}
}
