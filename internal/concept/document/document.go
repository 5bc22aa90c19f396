// Package document reads PDF documents: their page count, the text of a
// range of pages, and a new PDF of a range of pages. PDF parsers have a
// long record of memory bugs and of bombs (nested objects, streams that
// decompress to gigabytes), and the daemon runs as root, so a document is
// parsed by PDFium compiled to WebAssembly and run by wazero: the parser's
// memory is a sandbox of at most MemoryLimit bytes, it has no file system,
// no network and no host calls beyond the WebAssembly system interface's
// clock and random source, and each request gets a fresh instance (no
// document's bytes outlive its request in a heap another request reuses).
//
// Every request is bounded: the input by MaxBytes, the time by the
// caller's context and MaxTime (the instance is closed when either ends),
// the memory by MemoryLimit (a bomb that would decompress past it traps
// the instance), the text by MaxPageChars per page and the caller's
// bound over all pages. Whatever the document, an answer is either its
// text or an *Error saying why not.
//
// The PDFium module is compiled once per process, on the first document,
// not at start (most sessions never read one); Configure names a
// directory where the compiled code is kept, so a daemon that restarts
// does not compile it again.
package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/klippa-app/go-pdfium"
	pdferrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// Bounds of one request.
const (
	// MaxBytes is the largest document parsed: it is copied whole into
	// the sandbox's memory.
	MaxBytes = 32 << 20
	// MemoryLimit bounds one instance's memory (WebAssembly pages of
	// 64 KiB): the document, PDFium's objects and every decompressed
	// stream live in it.
	MemoryLimit = 160 << 20
	// Instances bounds the documents parsed at once, so the daemon's
	// memory for documents is at most Instances * MemoryLimit.
	Instances = 2
	// MaxTime bounds one request, whatever its caller's deadline.
	MaxTime = 20 * time.Second
	// MaxPageChars bounds the characters taken from one page.
	MaxPageChars = 1 << 20
	// compileWait bounds the wait for the module's one compilation.
	compileWait = 5 * time.Minute
)

// Magic is how a PDF starts; a file is a PDF by this, never by its name.
const Magic = "%PDF-"

// At is the offset of a PDF's header in head (the start of a file), or -1:
// readers accept the header anywhere in the first 1024 bytes, so it is
// looked for there, at the start of a line and followed by a version
// digit (a text that mentions the magic inside a line is not a PDF).
func At(head []byte) int {
	head = head[:min(len(head), 1024)]
	for from := 0; ; {
		i := bytes.Index(head[from:], []byte(Magic))
		if i < 0 {
			return -1
		}
		at := from + i
		if (at == 0 || head[at-1] == '\n' || head[at-1] == '\r') && at+len(Magic) < len(head) &&
			head[at+len(Magic)] >= '0' && head[at+len(Magic)] <= '9' {
			return at
		}
		from = at + 1
	}
}

// Is reports whether head, the start of a file, is a PDF's.
func Is(head []byte) bool { return At(head) >= 0 }

// Error says why a document could not be read. Busy marks a reason that
// is not the document's (the reader was not ready or not free in time): a
// verdict is not made from it.
type Error struct {
	Reason string
	Busy   bool
}

func (e *Error) Error() string { return e.Reason }

func fail(format string, a ...any) error { return &Error{Reason: fmt.Sprintf(format, a...)} }

// Pages is the text of a range of a document's pages.
type Pages struct {
	Count int      // pages in the document
	First int      // the first page in Text, 1-based
	Text  []string // one per page from First on
}

var (
	cacheMu  sync.Mutex
	cacheDir string
	once     sync.Once
	pool     pdfium.Pool
	initErr  error
	ready    = make(chan struct{})
)

// Configure names the directory where the compiled module is kept (made
// 0700 if absent); call it before the first document. Without it the
// module is compiled afresh in each process.
func Configure(dir string) {
	cacheMu.Lock()
	cacheDir = dir
	cacheMu.Unlock()
}

// start compiles the module once, in the background: a request waits for
// it within its own bound on the wait, not within its parse deadline.
func start() {
	once.Do(func() {
		go func() {
			defer close(ready)
			rc := wazero.NewRuntimeConfig().
				WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
				WithMemoryLimitPages(MemoryLimit / 65536).
				WithCloseOnContextDone(true)
			cacheMu.Lock()
			dir := cacheDir
			cacheMu.Unlock()
			if private(dir) {
				if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
					rc = rc.WithCompilationCache(c)
				}
			}
			pool, initErr = webassembly.Init(webassembly.Config{
				Context: experimental.WithMemoryAllocator(context.Background(), experimental.MemoryAllocatorFunc(mapped)),
				MinIdle: 0, MaxIdle: Instances, MaxTotal: Instances,
				RuntimeConfig: rc,
				FSConfig:      wazero.NewFSConfig(), // no file system at all
				Stdout:        io.Discard, Stderr: io.Discard,
			})
		}()
	})
}

// private reports whether dir is a directory only this process's user
// can write, made if absent: the compiled code kept there is run, so a
// directory another user could write to is not used (the module is then
// compiled afresh).
func private(dir string) bool {
	if dir == "" {
		return false
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false
	}
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

// mapped is an instance's memory: MemoryLimit bytes of address space
// mapped at once, touched (and so made resident) only as the instance
// grows into it. A memory that grows in place is not copied on each grow
// (a document whose streams decompress to many megabytes grows it often),
// and it is outside the Go heap.
//
// It is unmapped by the request that made the instance (run), once that
// request's call has returned, never by wazero's Free: an instance killed
// for its time is closed, and its memory freed, while its call may still
// be running on another goroutine, which must not then touch unmapped
// memory.
func mapped(_, limit uint64) experimental.LinearMemory {
	limit = min(limit, MemoryLimit)
	b, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	r := &region{}
	if err == nil {
		r.b = b
	}
	made = append(made, r) // under getMu: see run
	return r
}

// region is a mapped instance memory.
type region struct {
	mu sync.Mutex
	b  []byte
}

func (r *region) Reallocate(size uint64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if size > uint64(len(r.b)) {
		return nil // the instance traps: over its memory bound
	}
	return r.b[:size]
}

// Free is wazero's: see mapped for why it leaves the mapping.
func (r *region) Free() {}

// unmap returns the memory to the system; the instance is closed and no
// call of it is running.
func (r *region) unmap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b != nil {
		unix.Munmap(r.b)
		r.b = nil
	}
}

var (
	// getMu serialises the taking of instances, so the memories made
	// while one is taken (made) are that request's to unmap.
	getMu sync.Mutex
	made  []*region
)

// Ready starts the module's compilation if it has not started, and waits
// for it within ctx: a caller that must not count the one compilation
// against a request's bound (a test's hang guard) waits here first.
func Ready(ctx context.Context) error {
	start()
	select {
	case <-ready:
		return initErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run gives work a fresh instance for at most MaxTime (and ctx), and
// closes the instance after: killed when the time ran out, so a call
// under way stops.
func run(ctx context.Context, data []byte, work func(inst pdfium.Pdfium) error) error {
	if len(data) > MaxBytes {
		return fail("the document is %d bytes; documents up to %d bytes are read", len(data), MaxBytes)
	}
	start()
	wait, cancel := context.WithTimeout(ctx, compileWait)
	defer cancel()
	select {
	case <-ready:
	case <-wait.Done():
		return &Error{Reason: "the document reader is not ready yet (its first start compiles it); try again", Busy: true}
	}
	if initErr != nil {
		return fail("the document reader cannot start: %v", initErr)
	}
	ctx, cancel = context.WithTimeout(ctx, MaxTime)
	defer cancel()
	getMu.Lock()
	made = nil
	inst, err := pool.GetInstanceWithContext(ctx)
	mine := made
	made = nil
	getMu.Unlock()
	defer func() {
		for _, r := range mine {
			r.unmap()
		}
	}()
	if err != nil {
		return &Error{Reason: "no document reader was free within the time bound; try again", Busy: true}
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fail("the document reader failed: %v", p)
			}
		}()
		done <- work(inst)
	}()
	select {
	case err = <-done:
		inst.Close()
		return err
	case <-ctx.Done():
		inst.Kill() // closes the module: the call under way returns
		<-done
		return fail("reading the document took longer than %s", MaxTime)
	}
}

// open loads data as a document; encrypted and damaged files are refused
// by name.
func open(inst pdfium.Pdfium, data []byte) (*requests.FPDF_GetPageCount, error) {
	doc, err := inst.FPDF_LoadMemDocument(&requests.FPDF_LoadMemDocument{Data: &data})
	switch {
	case errors.Is(err, pdferrors.ErrPassword), errors.Is(err, pdferrors.ErrSecurity):
		return nil, fail("it is encrypted (a password is needed to read it)")
	case errors.Is(err, pdferrors.ErrFormat), errors.Is(err, pdferrors.ErrFile):
		return nil, fail("it is damaged or not a PDF (the parser could not read its structure)")
	case err != nil:
		return nil, fail("the parser could not read it: %v", err)
	}
	return &requests.FPDF_GetPageCount{Document: doc.Document}, nil
}

// Text returns the page count of data and the text of pages first..last
// (1-based, last clipped to the count); maxText bounds the text of all of
// them (runes as UTF-8 bytes). A page past the end is an empty range.
func Text(ctx context.Context, data []byte, first, last, maxText int) (*Pages, error) {
	out := &Pages{First: first}
	err := run(ctx, data, func(inst pdfium.Pdfium) error {
		req, err := open(inst, data)
		if err != nil {
			return err
		}
		defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: req.Document})
		pc, err := inst.FPDF_GetPageCount(req)
		if err != nil {
			return fail("its page tree cannot be read: %v", err)
		}
		out.Count = pc.PageCount
		total := 0
		for n := first; n <= min(last, out.Count); n++ {
			t, err := pageText(inst, req, n)
			if err != nil {
				return err
			}
			if total += len(t); total > maxText {
				return fail("its text is more than %d bytes", maxText)
			}
			out.Text = append(out.Text, t)
		}
		return nil
	})
	return out, err
}

// pageText is the text of page n (1-based).
func pageText(inst pdfium.Pdfium, req *requests.FPDF_GetPageCount, n int) (string, error) {
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: req.Document, Index: n - 1})
	if err != nil {
		return "", fail("page %d cannot be read: %v", n, err)
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page.Page}})
	if err != nil {
		return "", fail("the text of page %d cannot be read: %v", n, err)
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	cc, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return "", fail("the text of page %d cannot be read: %v", n, err)
	}
	if cc.Count > MaxPageChars {
		return "", fail("page %d has %d characters; at most %d are read from a page", n, cc.Count, MaxPageChars)
	}
	if cc.Count <= 0 {
		return "", nil
	}
	t, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, StartIndex: 0, Count: cc.Count})
	if err != nil {
		return "", fail("the text of page %d cannot be read: %v", n, err)
	}
	return clean(t.Text), nil
}

// clean makes a page's text lines: PDFium ends lines with CR LF and
// marks soft hyphens and generated breaks with control characters.
func clean(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == 0xFFFE || r == 0xFFFF:
			return -1
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
}

// Extract returns a new PDF holding pages first..last of data (1-based),
// at most maxBytes long.
func Extract(ctx context.Context, data []byte, first, last int, maxBytes int64) ([]byte, error) {
	var out []byte
	err := run(ctx, data, func(inst pdfium.Pdfium) error {
		req, err := open(inst, data)
		if err != nil {
			return err
		}
		defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: req.Document})
		nd, err := inst.FPDF_CreateNewDocument(&requests.FPDF_CreateNewDocument{})
		if err != nil {
			return fail("a new document cannot be made: %v", err)
		}
		defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: nd.Document})
		rng := fmt.Sprintf("%d-%d", first, last)
		if _, err := inst.FPDF_ImportPages(&requests.FPDF_ImportPages{Source: req.Document, Destination: nd.Document, PageRange: &rng}); err != nil {
			return fail("pages %s cannot be copied: %v", rng, err)
		}
		w := &limited{max: maxBytes}
		if _, err := inst.FPDF_SaveAsCopy(&requests.FPDF_SaveAsCopy{Document: nd.Document, Flags: requests.SaveFlagNoIncremental, FileWriter: w}); err != nil || w.over {
			if w.over {
				return fail("pages %s make a document of more than %d bytes", rng, maxBytes)
			}
			return fail("pages %s cannot be saved: %v", rng, err)
		}
		out = w.b
		return nil
	})
	return out, err
}

// limited keeps at most max bytes written to it, and says when more came.
type limited struct {
	b    []byte
	max  int64
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if int64(len(l.b)+len(p)) > l.max {
		l.over = true
		return 0, errors.New("too large")
	}
	l.b = append(l.b, p...)
	return len(p), nil
}
