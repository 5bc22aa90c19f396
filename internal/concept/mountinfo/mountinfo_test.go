package mountinfo

import "testing"

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
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
