package tests

// A PDF encrypted with the empty user password opens in every reader
// without asking. A key kept in it as an attachment whose stream has no
// filter (qpdf --stream-data=uncompress) is encrypted in the file, where
// no search of its bytes finds it; decrypted, it must be searched as the
// decoded stream of a filtered one is, and the PDF refused.

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAttackPDFEncryptedUnfilteredAttachment(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("qpdf"); err != nil {
		t.Skip("no qpdf (scripts/deps.sh installs it)")
	}
	f := newFixture(t)
	key := realKeys(t)["openssh"]
	if key == "" {
		t.Skip("no ssh-keygen")
	}
	kp := filepath.Join(f.base, "notes")
	writeFile(t, kp, key, 0o600)
	blank := filepath.Join(f.base, "blank.pdf")
	writeFile(t, blank, "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\ntrailer\n<< /Size 4 /Root 1 0 R >>\n%%EOF\n", 0o644)
	att := filepath.Join(f.base, "att.pdf")
	mustRun(t, "qpdf", "--warning-exit-0", blank, "--add-attachment", kp, "--key=notes", "--", att)
	names := map[string][]string{
		"rc4.pdf":    {"--allow-weak-crypto", "--encrypt", "", "owner", "128", "--"},
		"aes128.pdf": {"--allow-weak-crypto", "--encrypt", "", "owner", "128", "--use-aes=y", "--"},
		"aes256.pdf": {"--encrypt", "", "owner", "256", "--"},
	}
	for name, enc := range names {
		args := append(append([]string{"--warning-exit-0"}, enc...), "--stream-data=uncompress", att, filepath.Join(f.root, name))
		mustRun(t, "qpdf", args...)
	}
	startMount(t, f.mp, "--policy", f.policy)
	line := strings.Split(key, "\n")[1]
	for name := range names {
		out, err := run(t, 90*time.Second, "cat", filepath.Join(f.mp, name))
		if err != nil {
			continue
		}
		served := filepath.Join(f.base, "served-"+name)
		writeFile(t, served, out, 0o600)
		if got, _ := run(t, 10*time.Second, "qpdf", "--show-attachment=notes", served); strings.Contains(got, line) {
			t.Errorf("%s: an encrypted PDF's unfiltered attachment holding a key was served", name)
		}
	}
}
