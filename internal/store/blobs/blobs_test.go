package blobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
)

func idOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// incompressible content, so the cap arithmetic is predictable.
func noise(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func open(t *testing.T, capBytes int64) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "j.held.db"), capBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestKeepsAndReturnsContent(t *testing.T) {
	t.Parallel()
	s := open(t, 1<<20)
	data := []byte("package main\n\nfunc main() {}\n")
	if ev, err := s.Put(idOf(data), "/r/main.go", data); err != nil || len(ev) != 0 {
		t.Fatal(ev, err)
	}
	got, err := s.Get(idOf(data))
	if err != nil || string(got) != string(data) {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, _ := s.Get(idOf([]byte("other"))); got != nil {
		t.Fatal("content never kept came back")
	}
}

// The cap pushes out the least recently used blob, a Get counts as a use,
// and every eviction is reported so the caller can record it.
func TestEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	const n = 40 << 10
	s := open(t, 4*n+n/2) // room for four
	var ids []string
	for i := 0; i < 4; i++ {
		b := noise(n, int64(i))
		ids = append(ids, idOf(b))
		if ev, err := s.Put(ids[i], fmt.Sprintf("/f%d", i), b); err != nil || len(ev) != 0 {
			t.Fatalf("put %d: %v %v", i, ev, err)
		}
	}
	if got, _ := s.Get(ids[0]); got == nil { // 0 is now the most recent
		t.Fatal("blob 0 missing")
	}
	b := noise(n, 4)
	ev, err := s.Put(idOf(b), "/f4", b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 1 || ev[0].ID != ids[1] || ev[0].Path != "/f1" || ev[0].Bytes != n {
		t.Fatalf("evicted %+v, want blob 1 only", ev)
	}
	if got, _ := s.Get(ids[1]); got != nil {
		t.Fatal("an evicted blob came back")
	}
	for _, id := range []string{ids[0], ids[2], ids[3], idOf(b)} {
		if got, _ := s.Get(id); got == nil {
			t.Fatalf("blob %s… was evicted, not the least recently used", id[:8])
		}
	}
}

func TestRefusesWhatWouldNotFit(t *testing.T) {
	t.Parallel()
	s := open(t, 64<<10)
	b := noise(int(s.MaxFile())+1, 9)
	if ev, err := s.Put(idOf(b), "/big", b); err != nil || ev != nil {
		t.Fatal(ev, err)
	}
	if got, _ := s.Get(idOf(b)); got != nil {
		t.Fatal("content over MaxFile was kept")
	}
}

// A blob altered in the store is not returned as the content it names.
func TestDamagedBlobIsNotTrusted(t *testing.T) {
	t.Parallel()
	s := open(t, 1<<20)
	data := []byte("line one\nline two\n")
	s.Put(idOf(data), "/f", data)
	other, _ := pack([]byte("line one\nline 2\n"))
	if _, err := s.db.Exec(`UPDATE blobs SET data = ?`, other); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(idOf(data)); got != nil || err != nil {
		t.Fatalf("damaged blob returned %q, %v", got, err)
	}
	if _, err := s.db.Exec(`UPDATE blobs SET data = x'00ff00'`); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(idOf(data)); got != nil {
		t.Fatal("garbage returned")
	}
}
