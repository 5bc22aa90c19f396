package sniff

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// b64Masked says what is wrong with masks over base64 at off of text that
// encodes plain (secret in it): "" when every character the secret's bytes
// decide is masked and no mask reaches outside the encoded value (n
// characters).
func b64Masked(ms []Mask, off int, plain, secret string, n int) string {
	ss := strings.Index(plain, secret)
	lo, hi := off+(8*ss+5)/6, off+8*(ss+len(secret))/6
	for _, m := range ms {
		if m.Off < int64(off) || m.Off+int64(m.Len) > int64(off+n) {
			return fmt.Sprintf("a mask outside the value: %+v", m)
		}
	}
	for p := lo; p < hi; p++ {
		if !Masked(ms, int64(p), 1) {
			return fmt.Sprintf("character %d of the secret's encoding not masked (masks %+v)", p-off, ms)
		}
	}
	return ""
}

// TestBase64AnyAlignment: a credential inside base64 text — after one,
// two or three bytes of other text, so at each place in a group of three,
// and far into a long value — is masked over the characters that encode
// it, for every family whose sample is a bare token; and its neighbours'
// characters are not.
func TestBase64AnyAlignment(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	n := 0
	for seed := range int64(2) {
		for _, s := range SampleCredentials(seed) {
			for _, before := range []string{"TOKEN=", "TOK=", "TOKN=", strings.Repeat("# a comment line\\n", 60) + "K="} {
				for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
					plain := before + s.Value + "\nDEBUG=1\nLEVEL=info\n"
					v := enc.EncodeToString([]byte(plain))
					text := "data:\n  env: " + v + "\n"
					off := strings.Index(text, v)
					ms := d.Find([]byte(text))
					n++
					if why := b64Masked(ms, off, plain, s.Secret, len(v)); why != "" {
						t.Errorf("%s after %d bytes: %s", s.Family, len(before), why)
						continue
					}
					// "DEBUG=1" (its characters wholly after the
					// token's) stays shown.
					de := strings.Index(plain, "DEBUG")
					if p := off + (8*de+5)/6 + 1; Masked(ms, int64(p), int64(off+len(v)-p-4)) {
						t.Errorf("%s after %d bytes: the text after it masked too: %+v", s.Family, len(before), ms)
					}
				}
			}
		}
	}
	t.Logf("%d encodings", n)
}

// TestBase64AnchorsBounded: base64 made of anchors, one after another,
// costs a few windows per run, not one each: the scan of a megabyte of
// them ends (a hang guard, far above its time).
func TestBase64AnchorsBounded(t *testing.T) {
	t.Parallel()
	d := defaultDetector(t)
	unit := base64.StdEncoding.EncodeToString([]byte("ghp_ghp_ghp_.atlasv1._mmk8Q~"))
	data := []byte(strings.Repeat(unit, (1<<20)/len(unit)))
	if _, err := d.Scan(strings.NewReader(string(data)), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}
