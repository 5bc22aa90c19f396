package mount

import (
	"errors"
	"syscall"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestErrnoOfRefusals: the mount's one mapping of refusals to errnos: a
// hidden or escaping name is simply not there (a denial), a denied name is
// EACCES when the policy asks, and what is no policy decision keeps its
// own errno.
func TestErrnoOfRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason refusal.Reason
		eacces bool
		want   syscall.Errno
		denial bool
	}{
		{refusal.NotFoundName, false, syscall.ENOENT, false},
		{refusal.LinkLoop, false, syscall.ENOENT, false},
		{refusal.DeniedName, false, syscall.ENOENT, true},
		{refusal.DeniedName, true, syscall.EACCES, true},
		{refusal.TooManyMasks, true, syscall.EACCES, true},
		{refusal.LinkOnPathOutside, true, syscall.ENOENT, true},
		{refusal.LeadsDangerous, false, syscall.ENOENT, true},
		{refusal.SpecialFile, false, syscall.ENOENT, true},
		{refusal.NoPermission, false, syscall.EACCES, false},
		{refusal.ChangedReading, false, syscall.ESTALE, false},
		{refusal.NameTooLong, false, syscall.EINVAL, false},
		{refusal.IOFailed, false, syscall.EIO, false},
	} {
		got, denial := errnoOf(refusal.Of(tc.reason, refusal.OpRead, "/p/a", refusal.Facts{}), tc.eacces)
		if got != tc.want || denial != tc.denial {
			t.Errorf("%s (eacces %v): %v, denial %v; want %v, %v", tc.reason, tc.eacces, got, denial, tc.want, tc.denial)
		}
	}
	if got, denial := errnoOf(errors.New("not a refusal"), true); got != syscall.EIO || denial {
		t.Errorf("another error: %v, %v", got, denial)
	}
}
