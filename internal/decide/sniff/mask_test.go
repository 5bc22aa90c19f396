package sniff

import "testing"

// TestApplyMasksAnyWindow fills a mask the same way whatever window of the
// file a reader asks for: a READ at any offset and size sees one file.
func TestApplyMasksAnyWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data string
		m    Mask
		want string
	}{
		{"utf8", "x=ghp_abcdefgh;", Mask{Family: "t", Off: 2, Len: 12, Keep: 4, Unit: 1}, "x=ghp_********;"},
		{"utf16le", "a\x00b\x00c\x00d\x00", Mask{Off: 2, Len: 6, Keep: 2, Unit: 2}, "a\x00b\x00*\x00*\x00"},
		{"utf16be", "\x00a\x00b\x00c\x00d", Mask{Off: 2, Len: 6, Keep: 2, Unit: 2, BigEndian: true}, "\x00a\x00b\x00*\x00*"},
	}
	for _, c := range cases {
		whole := []byte(c.data)
		ApplyMasks([]Mask{c.m}, whole, 0)
		if string(whole) != c.want {
			t.Fatalf("%s: whole %q, want %q", c.name, whole, c.want)
		}
		for off := 0; off < len(c.data); off++ {
			for end := off; end <= len(c.data); end++ {
				part := []byte(c.data[off:end])
				ApplyMasks([]Mask{c.m}, part, int64(off))
				if string(part) != c.want[off:end] {
					t.Fatalf("%s [%d,%d): %q, want %q", c.name, off, end, part, c.want[off:end])
				}
			}
		}
	}
	if !Masked([]Mask{{Off: 5, Len: 3}}, 7, 1) || Masked([]Mask{{Off: 5, Len: 3}}, 8, 4) || Masked([]Mask{{Off: 5, Len: 3}}, 0, 5) {
		t.Fatal("Masked misjudges the span's edges")
	}
}
