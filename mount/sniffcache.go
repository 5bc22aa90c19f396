package mount

import (
	"sync"

	"fsguard/roots"
	"fsguard/sniff"
)

// cacheKey is a file version: any write moves size, mtime or ctime.
type cacheKey struct{ id roots.Identity }

// sniffCache maps file versions to their class. It is bounded: when full it
// is dropped whole, which is cheaper than LRU bookkeeping on every open and
// costs at most one re-sniff per file.
type sniffCache struct {
	mu  sync.Mutex
	max int
	m   map[cacheKey]sniff.Class
}

func newSniffCache(max int) *sniffCache {
	return &sniffCache{max: max, m: make(map[cacheKey]sniff.Class)}
}

func (c *sniffCache) get(k cacheKey) (sniff.Class, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *sniffCache) put(k cacheKey, v sniff.Class) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.m = make(map[cacheKey]sniff.Class)
	}
	c.m[k] = v
}
