package sniff

// A window is part of a file's bytes, read in one read, around a range a
// door is about to serve: the detectors look into it as into the whole
// file, for every key and credential whose context the window holds
// whole. With Margins around the served range, that is every one that
// overlaps it, so what the window shows is what a scan of the whole file
// at that moment would show of the range. A door serving bytes read now
// (not the very bytes an admission scanned) checks them so: a file
// changed in place (a shared mapping's store moves no ctime) is caught by
// what it holds, not by its identity.

// Margins are how many bytes a window reads before and after the range
// it checks, for a file of code units of unit bytes: a key's header up to
// a look-ahead before the range, with the look-behind its check needs;
// and a credential's anchor up to its longest match before the range,
// with the context its rules look at on either side.
func Margins(unit int) (back, ahead int64) {
	u := int64(max(unit, 1))
	keyBack := int64(lookBehind + maxMarker + lookAhead)
	keyAhead := int64(maxMarker + lookAhead)
	return max(keyBack, (credBack+credAhead)*u), max(keyAhead, credAhead*u)
}

// Units returns the code unit width and byte order a file's first bytes
// announce by their byte order mark (1, false without one), as a scan of
// the whole file reads it.
func Units(head []byte) (unit int, bigEndian bool) { return units(head) }

// KeyInWindow reports whether win, the bytes of a file from offset base,
// holds a private key: a marker whose whole check window (see findInChunk)
// lies inside win, or is cut only by the file's start (base 0) or its end
// (atEOF). A marker whose check the window cuts is not looked at: a
// window with Margins holds the whole check of every key reaching into
// the range it was read for.
func KeyInWindow(win []byte, base int64, atEOF bool) bool {
	lo, hi := 0, len(win)
	if base > 0 {
		lo = min(lookBehind, len(win))
	}
	if !atEOF {
		hi = max(len(win)-lookAhead, lo)
	}
	size := base + int64(len(win))
	at, _ := findInChunkFrom(win[lo:hi], base+int64(lo), base, size, func(from, want int64) ([]byte, error) {
		return win[from-base : from-base+want], nil
	})
	return at >= 0
}

// FindInWindow returns the credentials in win, the bytes of a file from
// offset base in code units of unit bytes (see Units), whose anchors have
// all the context a rule looks at inside win, or cut only by the file's
// start (base 0) or end (atEOF): as a scan of the whole file finds them.
// win is not changed.
func (d *Detector) FindInWindow(win []byte, base int64, atEOF bool, unit int, be bool) []Mask {
	if len(d.rules) == 0 {
		return nil
	}
	unit = max(unit, 1)
	var narrowed []Mask
	if unit > 1 {
		// As a scan reads it: as 8-bit text too.
		narrowed = d.FindInWindow(win, base, atEOF, 1, false)
	}
	if skip := int((int64(unit) - base%int64(unit)) % int64(unit)); skip > 0 {
		win, base = win[min(skip, len(win)):], base+int64(skip)
	}
	c := win[:len(win)/unit*unit]
	if unit > 1 {
		c = narrow(append([]byte(nil), c...), unit, be)
	}
	lo, hi := 0, len(c)
	if base > 0 {
		lo = min(credBack, len(c))
	}
	if !atEOF {
		hi = max(len(c)-credAhead, lo)
	}
	out, _ := merge(d.chunk(c, lo, hi, base, unit, be, narrowed))
	return out
}

// Covers reports whether every byte that a mask in found would fill
// within [from, to) is filled by masks (sorted by Off, not overlapping,
// as a verdict's are): served masked by masks, none of found's secrets
// shows.
func Covers(masks, found []Mask, from, to int64) bool {
	for _, f := range found {
		s, e := max(f.Off+int64(f.Keep), from), min(f.Off+int64(f.Len), to)
		for _, m := range masks {
			if s >= e {
				break
			}
			ms, me := m.Off+int64(m.Keep), m.Off+int64(m.Len)
			if ms <= s && s < me {
				s = me
			}
		}
		if s < e {
			return false
		}
	}
	return true
}
