package lines

import (
	"strings"
	"testing"
)

func TestBlock(t *testing.T) {
	t.Parallel()
	goSrc := strings.Split(`package x

// Add adds.
func Add(a, b int) int {
	if a > 0 {
		return a + b
	}

	return b
}

func Other() {}`, "\n")
	py := strings.Split(`class A:
    @property
    def f(self):
        x = 1

        return x

    def g(self):
        pass
print(1)`, "\n")
	for _, c := range []struct {
		name       string
		lines      []string
		n          int
		start, end int
	}{
		{"a statement in an if", goSrc, 6, 5, 7},
		{"the if itself opens its block", goSrc, 5, 5, 7},
		{"a line of the function body", goSrc, 9, 3, 10},
		{"the func line, with its doc comment", goSrc, 4, 3, 10},
		{"a blank line inside belongs to what follows", goSrc, 8, 3, 10},
		{"a one-line top-level function: the whole file", goSrc, 12, 1, 12},
		{"python, blank line inside the body", py, 6, 2, 6},
		{"python decorator joins the def", py, 4, 2, 6},
		{"python method header", py, 8, 8, 9},
		{"python class", py, 1, 1, 9},
		{"out of range", goSrc, 99, 0, 0},
	} {
		if s, e := Block(c.lines, c.n); s != c.start || e != c.end {
			t.Errorf("%s: line %d: got %d-%d, want %d-%d", c.name, c.n, s, e, c.start, c.end)
		}
	}
}
