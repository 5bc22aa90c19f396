package mount

import (
	"testing"

	"fsguard/roots"
	"fsguard/sniff"
)

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:            "/plain",
		`/with\040space`:    "/with space",
		`/tab\011and\134bs`: "/tab\tand\\bs",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSniffCacheIsBoundedAndKeyedByVersion(t *testing.T) {
	c := newSniffCache(2)
	v1 := cacheKey{roots.Identity{Ino: 1, Size: 10, MtimeNs: 1}}
	v2 := cacheKey{roots.Identity{Ino: 1, Size: 10, MtimeNs: 2}} // same file, rewritten
	c.put(v1, sniff.Text)
	if _, ok := c.get(v2); ok {
		t.Fatal("a new version of the file hit the old version's class")
	}
	c.put(v2, sniff.PrivateKey)
	c.put(cacheKey{roots.Identity{Ino: 3}}, sniff.Binary)
	if len(c.m) > 2 {
		t.Fatalf("cache holds %d entries, bound 2", len(c.m))
	}
}
