package policy

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold returns a name as deny rules compare it when [deny] fold is on (the
// default): the way a person reads it, not the bytes. ".ENV", ".env " (a
// trailing space), ".env." and an NFD spelling of "sécrets.txt" all name
// what ".env" and "sécrets.txt" name, and an invisible format character
// (a zero-width space, a bidi mark, a soft hyphen) does not make a new
// name. Names are NFC-normalised, lower-cased, stripped of format
// characters (Unicode category Cf) and of trailing spaces and dots.
func Fold(s string) string {
	if plainName(s) {
		return s // the common case costs one pass and no allocation
	}
	var b strings.Builder
	for _, r := range norm.NFC.String(s) {
		if unicode.Is(unicode.Cf, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	out := strings.TrimRight(b.String(), " .")
	if out == "" {
		return s // "." and ".." stay what they are
	}
	return out
}

// plainName: ASCII with no upper-case letter and no trailing space or dot.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s == "" || (s[len(s)-1] != ' ' && s[len(s)-1] != '.') || s == "." || s == ".."
}
