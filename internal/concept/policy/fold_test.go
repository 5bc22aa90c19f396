package policy

import "testing"

func TestFold(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		".env":              ".env",
		".ENV":              ".env",
		".env ":             ".env",
		".env.":             ".env",
		".e\u200bnv":        ".env", // zero-width space
		"\u202e.env":        ".env", // right-to-left override
		"Secrets.TXT":       "secrets.txt",
		"se\u0301crets.txt": "sécrets.txt", // NFD to NFC
		".":                 ".",
		"..":                "..",
		"main.go":           "main.go",
		"ÉCOLE":             "école",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDenyFolds: deny, write-deny and allow globs match folded names by
// default, and exactly with [deny] fold = false.
func TestDenyFolds(t *testing.T) {
	t.Parallel()
	globs := []Glob{mustGlob(t, "**/.env"), mustGlob(t, "**/sécrets.txt"), mustGlob(t, "**/secrets.txt")}
	for _, name := range []string{".ENV", ".env ", "a/.Env.", "se\u0301crets.txt", "x/Secrets.TXT", ".e\u200bnv"} {
		if MatchGlobs(globs, name, "/r/"+name, true) < 0 {
			t.Errorf("%q is not denied with fold", name)
		}
		if MatchGlobs(globs, name, "/r/"+name, false) >= 0 {
			t.Errorf("%q is denied without fold", name)
		}
	}
	if MatchGlobs(globs, "envelope.txt", "/r/envelope.txt", true) >= 0 {
		t.Error("envelope.txt denied")
	}
}

func mustGlob(t *testing.T, s string) Glob {
	t.Helper()
	g, err := CompileGlob(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
