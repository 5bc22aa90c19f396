// Package warm is the mount's page-cache warming engine: what to push into
// the kernel's page cache, when and in which order; the workers that push;
// the content a listing kept for its pushes; the child process that lists
// and counts pages through the mount. It never hands the kernel a byte
// itself: it imports no FUSE package, and every push goes through the
// view's gate (internal/view/mount), which admits the version afresh and
// checks it around the store. TestOneGate (in the mount package) holds it
// to that.
package warm
