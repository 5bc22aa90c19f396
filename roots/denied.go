package roots

import "sync"

// denials remembers Denied's answers. Denied is a pure function of the
// guard's policy and roots, which never change (a reload makes a new
// guard), and of the path; a tree walk asks it up to four times per name
// (the listing, the entry's stat, its open, READDIRPLUS's lookup), and
// matching every deny glob was a sixth of a cold listing's time in the
// daemon. Bounded: dropped whole when full, which costs one match per
// name again.
type denials struct {
	mu sync.RWMutex
	m  map[deniedKey]bool
}

type deniedKey struct {
	root *Root
	rel  string
}

// maxDenials bounds the answers remembered (about 100 bytes each).
const maxDenials = 1 << 17

func (d *denials) get(k deniedKey) (denied, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	denied, ok = d.m[k]
	return denied, ok
}

func (d *denials) put(k deniedKey, denied bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxDenials {
		d.m = make(map[deniedKey]bool)
	}
	d.m[k] = denied
}
