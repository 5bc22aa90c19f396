package policy

import (
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Fold returns a name as deny rules compare it when [deny] fold is on (the
// default): the way a person reads it, and at least every way a file
// system that folds case reads it. ".ENV", ".env " (a trailing space),
// ".env.", an NFD spelling of "sécrets.txt", ".ſsh" (long s) and "ＫEY"
// with a Kelvin sign all name what ".env", "sécrets.txt", ".ssh" and "key"
// name, and an invisible format character (a zero-width space, a bidi
// mark, a soft hyphen) does not make a new name.
//
// Names are stripped of format characters (Unicode category Cf),
// lower-cased, then fully case-folded on their canonical decomposition
// (Unicode's canonical caseless match, what Linux's utf8 casefolding on
// ext4, f2fs and tmpfs directories with FS_CASEFOLD_FL compares: "ß" is
// "ss", "ſ" is "s", "ς" is "σ"), NFC-normalised, and stripped of trailing
// spaces and dots. The invariant is one-sided: two names the kernel
// takes for the same directory entry fold alike; folding more than a
// file system does only makes a deny rule match more names. So the
// lower-casing step keeps "İ" (dotted capital I) as "i", as it has always
// been, and an "i" followed by a combining dot above (what the kernel
// folds "İ" to) is "i" too. The dotless "ı" stays itself, as Unicode's
// default folding and the kernel leave it: "ıd_rsa" is another file.
func Fold(s string) string {
	if plainName(s) {
		return s // the common case costs one pass and no allocation
	}
	if ascii(s) {
		// ASCII has no format character, is its own NFC, and folds by
		// lower-casing alone.
		if out := strings.TrimRight(strings.ToLower(s), " ."); out != "" {
			return out
		}
		return s
	}
	var b strings.Builder
	for _, r := range norm.NFC.String(s) {
		if unicode.Is(unicode.Cf, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	c := folders.Get().(*cases.Caser)
	folded := norm.NFC.String(c.String(norm.NFD.String(b.String())))
	folders.Put(c)
	folded = strings.ReplaceAll(folded, "i\u0307", "i")
	out := strings.TrimRight(folded, " .")
	if out == "" {
		return s // "." and ".." stay what they are
	}
	return out
}

// folders holds full case folders: a Caser keeps state between calls, so
// one is never shared by two at once.
var folders = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// plainName: ASCII with no upper-case letter and no trailing space or dot.
// Full case folding maps such a name to itself.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s == "" || (s[len(s)-1] != ' ' && s[len(s)-1] != '.') || s == "." || s == ".."
}
