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

// TestFoldAsFileSystemsFold: every name Linux's utf8 casefolding (ext4,
// f2fs, tmpfs directories with FS_CASEFOLD_FL) takes for a denied name
// folds to the same name, so a deny rule cannot be reached by a spelling
// the file system resolves to the entry it names.
func TestFoldAsFileSystemsFold(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		".\u017fsh":                      ".ssh",        // long s
		".\u017f\u017fh":                 ".ssh",        // two long s
		"\u212a":                         "k",           // Kelvin sign
		"\u212aubeconfig":                "kubeconfig",  // Kelvin sign
		"stra\u00dfe.txt":                "strasse.txt", // ß is ss
		"STRASSE.txt":                    "strasse.txt",
		"\u1e9e":                         "ss", // capital sharp s
		".\u00dfh":                       ".ssh",
		"\u03c3\u03bf\u03c6\u03bf\u03c2": "\u03c3\u03bf\u03c6\u03bf\u03c3", // final sigma is sigma
		"\u03a3\u039f\u03a6\u039f\u03a3": "\u03c3\u03bf\u03c6\u03bf\u03c3",
		"\ufb01le":                       "file",        // the fi ligature
		"\u0130d_rsa":                    "id_rsa",      // dotted capital I, as lower-casing has it
		"i\u0307d_rsa":                   "id_rsa",      // what the kernel folds it to
		"\u0131d_rsa":                    "\u0131d_rsa", // dotless i: another name, for the kernel too
		"\u00c5ngstr\u00f6m":             "\u00e5ngstr\u00f6m",
		"\u212bngstr\u00f6m":             "\u00e5ngstr\u00f6m", // the Angstrom sign
		"A\u030angstro\u0308m":           "\u00e5ngstr\u00f6m", // decomposed
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

// TestFoldPlainAllocatesNothing: the common name costs no allocation.
func TestFoldPlainAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Fold("main.go") }); n != 0 {
		t.Errorf("Fold of a plain name allocates %v times", n)
	}
}

// TestDenyFoldsAsFileSystemsFold: the default deny globs hold against the
// spellings a case-folding directory resolves to the names they deny.
func TestDenyFoldsAsFileSystemsFold(t *testing.T) {
	t.Parallel()
	globs := []Glob{mustGlob(t, "**/.ssh/**"), mustGlob(t, "**/id_rsa*"), mustGlob(t, "**/.kube/config")}
	for _, name := range []string{".\u017fsh/id", "a/.\u00dfh/config", "\u0130D_RSA", ".\u212aube/config", ".kube/con\ufb01\u00adg"} {
		if MatchGlobs(globs, name, "/r/"+name, true) < 0 {
			t.Errorf("%q is not denied with fold", name)
		}
	}
}
