package diff

import (
	"math/rand"
	"strings"
	"testing"
)

// lcs is the textbook dynamic programme: the minimal script has
// len(a)+len(b)-2*lcs changes.
func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

// check verifies that ops is a script from a to b that walks both in
// order, pairs only equal lines, and has the minimal number of changes.
func check(t *testing.T, a, b []string, ops []Op) {
	t.Helper()
	i, j, changes := 0, 0, 0
	for _, o := range ops {
		if o.Old != i || o.New != j {
			t.Fatalf("%q -> %q: op %+v out of step at (%d,%d): %+v", a, b, o, i, j, ops)
		}
		switch o.Kind {
		case Equal:
			if a[i] != b[j] {
				t.Fatalf("%q -> %q: equal op pairs %q with %q", a, b, a[i], b[j])
			}
			i, j = i+1, j+1
		case Delete:
			i, changes = i+1, changes+1
		case Insert:
			j, changes = j+1, changes+1
		}
	}
	if i != len(a) || j != len(b) {
		t.Fatalf("%q -> %q: script ends at (%d,%d)", a, b, i, j)
	}
	if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
		t.Fatalf("%q -> %q: %d changes, minimal is %d", a, b, changes, want)
	}
}

func randomLines(r *rand.Rand) []string {
	out := make([]string, r.Intn(12))
	for i := range out {
		out[i] = string(rune('a' + r.Intn(4)))
	}
	return out
}

func TestScriptsAreMinimalAndExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 3000; n++ {
		a, b := randomLines(r), randomLines(r)
		ops, ok := Lines(a, b, 1000)
		if !ok {
			t.Fatalf("%q -> %q: gave up", a, b)
		}
		check(t, a, b, ops)
	}
}

func TestGivesUpBeyondTheBound(t *testing.T) {
	t.Parallel()
	a := strings.Split("a b c d e f g h", " ")
	b := strings.Split("1 2 3 4 5 6 7 8", " ")
	if _, ok := Lines(a, b, 15); ok {
		t.Fatal("16 changes fitted a bound of 15")
	}
	if ops, ok := Lines(a, b, 16); !ok {
		t.Fatal("16 changes did not fit a bound of 16")
	} else {
		check(t, a, b, ops)
	}
}

// The expected texts are what GNU diff -u prints for the same inputs.
func TestUnifiedText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		a, b    string
		context int
		want    string
	}{
		{"one change", "1 2 3 4 5 6 7 8 9", "1 2 3 4 X 6 7 8 9", 3,
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"},
		{"two hunks", "1 2 3 4 5 6 7 8 9 10 11 12", "X 2 3 4 5 6 7 8 9 10 11 Y", 2,
			"@@ -1,3 +1,3 @@\n-1\n+X\n 2\n 3\n@@ -10,3 +10,3 @@\n 10\n 11\n-12\n+Y\n"},
		{"merged when the gap is 2*context", "1 2 3 4 5 6", "X 2 3 4 5 Y", 2,
			"@@ -1,6 +1,6 @@\n-1\n+X\n 2\n 3\n 4\n 5\n-6\n+Y\n"},
		{"insert at the top", "1 2 3", "0 1 2 3", 0, "@@ -0,0 +1 @@\n+0\n"},
		{"delete the last", "1 2 3", "1 2", 1, "@@ -2,2 +2 @@\n 2\n-3\n"},
		{"into an empty file", "", "a b", 3, "@@ -0,0 +1,2 @@\n+a\n+b\n"},
	}
	fields := func(s string) []string { return strings.Fields(s) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := fields(tt.a), fields(tt.b)
			ops, _ := Lines(a, b, 100)
			var w strings.Builder
			Write(&w, Hunks(ops, tt.context), a, b)
			if w.String() != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", w.String(), tt.want)
			}
		})
	}
}

func TestEqualInputsHaveNoHunks(t *testing.T) {
	t.Parallel()
	a := []string{"x", "y"}
	ops, _ := Lines(a, a, 0)
	if h := Hunks(ops, 3); len(h) != 0 {
		t.Fatalf("hunks for equal inputs: %+v", h)
	}
}
