package tests

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// leaksEncoded reports whether out shows 16 characters in a row of the
// characters that secret's bytes alone decide in enc, the base64 of plain.
func leaksEncoded(out, enc, plain, secret string) bool {
	ss := strings.Index(plain, secret)
	core := enc[(8*ss+5)/6 : 8*(ss+len(secret))/6]
	if len(core) <= 16 {
		return strings.Contains(out, core)
	}
	for i := 0; i+16 <= len(core); i++ {
		if strings.Contains(out, core[i:i+16]) {
			return true
		}
	}
	return false
}

// TestAttackBase64AnyPlace base64-encodes, as `base64 -w0` and a
// Kubernetes Secret's data do, a .env whose token starts after zero, one or
// two bytes of a group of three (TOKEN=, TOK=, TOKN=), for every family
// whose sample is a bare token (twilio-api-key, azure-ad-client-secret,
// maxmind-license-key and terraform-token among them): decoding is one
// command away for the agent, so neither the mount (cat) nor fsguard read
// may show the characters that encode the token.
func TestAttackBase64AnyPlace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	type placed struct{ file, family, enc, plain, secret string }
	var placedAll []placed
	for _, before := range []string{"TOKEN=", "TOK=", "TOKN="} {
		name := fmt.Sprintf("secret-%d.yaml", len(before)%3)
		text := "apiVersion: v1\nkind: Secret\ndata:\n"
		for _, s := range sniff.SampleCredentials(20261207) {
			if strings.ContainsAny(s.Value, " =/:;") {
				continue
			}
			plain := before + s.Value + "\nDEBUG=1\n"
			enc := base64.StdEncoding.EncodeToString([]byte(plain))
			text += "  " + s.Family + ": " + enc + "\n"
			placedAll = append(placedAll, placed{name, s.Family, enc, plain, s.Secret})
		}
		writeFile(t, filepath.Join(f.root, name), text, 0o644)
	}
	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=b64"}
	leaked := map[string][]string{}
	served := map[string]string{}
	for _, p := range placedAll {
		if _, ok := served["mount "+p.file]; ok {
			continue
		}
		got, err := os.ReadFile(filepath.Join(f.mp, p.file))
		if err != nil {
			t.Errorf("the mount did not serve %s: %v", p.file, err)
		}
		served["mount "+p.file] = string(got)
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", p.file, "--no-dedupe")
		served["read "+p.file] = out + errs
		if !strings.Contains(out, "kind: Secret") {
			t.Errorf("fsguard read did not show %s: %s", p.file, out+errs)
		}
		if fi, _ := os.Stat(filepath.Join(f.root, p.file)); err == nil && int64(len(got)) != fi.Size() {
			t.Errorf("the mount served %d bytes of %s, %d long", len(got), p.file, fi.Size())
		}
	}
	for _, p := range placedAll {
		for _, door := range []string{"mount", "read"} {
			if leaksEncoded(served[door+" "+p.file], p.enc, p.plain, p.secret) {
				leaked[door] = append(leaked[door], p.family+" in "+p.file)
			}
		}
	}
	for door, names := range leaked {
		t.Errorf("%s: %d of %d base64-encoded tokens shown: %v", door, len(names), len(placedAll), names)
	}
}

// TestAttackEightBitAfterBOM writes a token as 8-bit text in a file that
// starts with a UTF-16 (or UTF-32) byte order mark, which a reader of its
// bytes (cat, grep -a, a script) shows as the 8-bit text it is: neither
// the mount nor fsguard read shows the token, and the mount serves the
// file's size.
func TestAttackEightBitAfterBOM(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	files := map[string]string{
		"bom16le.txt": "\xff\xfeTOKEN=" + pat.Value + "\nnext\n",
		"bom16be.txt": "\xfe\xffTOKEN=" + pat.Value + "\nnext\n",
		"bom32le.txt": "\xff\xfe\x00\x00TOKEN=" + pat.Value + "\nnext\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(f.root, name), content, 0o644)
	}
	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=bom"}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(f.mp, name))
		switch {
		case err != nil:
			t.Errorf("the mount did not serve %s: %v", name, err)
		case strings.Contains(string(got), pat.Secret):
			t.Errorf("the mount shows %s's token", name)
		case len(got) != len(content):
			t.Errorf("the mount served %d bytes of %s, %d long", len(got), name, len(content))
		}
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", name, "--no-dedupe")
		if strings.Contains(out+errs, pat.Secret) || strings.Contains(undoWide(out+errs), pat.Secret) {
			t.Errorf("fsguard read shows %s's token: %q", name, out+errs)
		}
	}
}

// undoWide is s's characters written back as the bytes a UTF-16 reading
// of 8-bit text made them of (each character's two bytes, both orders).
func undoWide(s string) string {
	var le, be strings.Builder
	for _, r := range s {
		le.WriteByte(byte(r))
		le.WriteByte(byte(r >> 8))
		be.WriteByte(byte(r >> 8))
		be.WriteByte(byte(r))
	}
	return le.String() + "\n" + be.String()
}

// TestAttackTokenInBinaryZipMember packs a token into a zip member that is
// not text (an executable's bytes around it, and UTF-16 without a byte
// order mark), stored, so the zip's own bytes hold it: the mount refuses
// the zip, and neither door shows the token.
func TestAttackTokenInBinaryZipMember(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	var wide []byte
	for _, c := range []byte("token = " + pat.Value + "\n") {
		wide = append(wide, c, 0)
	}
	members := map[string][]byte{
		"elf.zip":   append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00\x00\x00token\x00"), pat.Value+"\x00\x00\x01\x02"...),
		"utf16.zip": wide,
	}
	for name, m := range members {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "bin/member", Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m)
		zw.Close()
		writeFile(t, filepath.Join(f.root, name), b.String(), 0o644)
	}
	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=zipbin"}
	for name := range members {
		got, err := os.ReadFile(filepath.Join(f.mp, name))
		if err == nil {
			t.Errorf("the mount served %s, whose member holds a token", name)
		}
		if strings.Contains(strings.ReplaceAll(string(got), "\x00", ""), pat.Secret) {
			t.Errorf("the mount shows the token in %s", name)
		}
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", name, "--no-dedupe")
		if strings.Contains(strings.ReplaceAll(out+errs, "\x00", ""), pat.Secret) {
			t.Errorf("fsguard read shows the token in %s", name)
		}
	}
}

// TestAttackURLEncodedTokens writes tokens URL-encoded as a browser, curl
// or a logged request writes them — the first letter as %67, every byte
// percent-encoded, encoded twice (a URL inside a URL), a form body with
// '+' for spaces — and reads them through the mount (cat) and with
// fsguard read: decoding is one command away, so neither shows the secret
// in any of those forms, and the mount serves the file's size.
func TestAttackURLEncodedTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pct := func(s string) string {
		var b strings.Builder
		for i := range len(s) {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	forms := map[string]func(v string) string{
		"first": func(v string) string { return fmt.Sprintf("GET /cb?token=%%%02x%s&x=1 HTTP/1.1", v[0], v[1:]) },
		"all":   func(v string) string { return "curl -d 't=" + pct(v) + "' https://api.test/" },
		"twice": func(v string) string {
			return fmt.Sprintf("next=https%%3A%%2F%%2Fa.test%%2F%%3Ft%%3D%%25%02x%s", v[0], v[1:])
		},
		"form": func(v string) string { return "note=the+token+is+" + pct(v[:2]) + v[2:] + "&ok=1" },
	}
	type placed struct{ name, text, secret string }
	var files []placed
	n := 0
	for _, s := range sniff.SampleCredentials(20261207) {
		if strings.ContainsAny(s.Value, " =/:;") || len(s.Secret) < 12 || n == 6 {
			continue
		}
		n++
		text := ""
		for _, fname := range slices.Sorted(maps.Keys(forms)) {
			text += forms[fname](s.Value) + "\n"
		}
		name := fmt.Sprintf("u/%s.log", s.Family)
		writeFile(t, filepath.Join(f.root, name), "first\n"+text+"last\n", 0o644)
		files = append(files, placed{name, text, s.Secret})
	}
	startMount(t, f.mp, "--policy", f.policy)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=url"}
	leaked := map[string][]string{}
	shows := func(out, secret string) bool {
		// The secret's second half, as written (plain or encoded) or
		// decoded.
		half := secret[len(secret)/2:]
		dec, err := url.QueryUnescape(out)
		if err != nil {
			dec = out
		}
		if twice, err := url.QueryUnescape(dec); err == nil {
			dec += twice
		}
		return strings.Contains(out, half) || strings.Contains(out, pct(half)) || strings.Contains(dec, half)
	}
	for _, p := range files {
		got, err := os.ReadFile(filepath.Join(f.mp, p.name))
		if err != nil {
			t.Errorf("the mount did not serve %s: %v", p.name, err)
		} else if shows(string(got), p.secret) {
			leaked["mount"] = append(leaked["mount"], p.name)
		} else if len(got) != len("first\n"+p.text+"last\n") {
			t.Errorf("the mount served %d bytes of %s", len(got), p.name)
		}
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", p.name, "--no-dedupe")
		if !strings.Contains(out, "last") {
			t.Errorf("fsguard read did not show %s: %s", p.name, out+errs)
		}
		if shows(out+errs, p.secret) {
			leaked["read"] = append(leaked["read"], p.name)
		}
	}
	for door, names := range leaked {
		t.Errorf("%s: %d of %d URL-encoded tokens shown: %v", door, len(names), len(files), names)
	}
}

// TestAttackTokenInFileName names a file, and a directory, after a token
// (`ghp_….txt`, as a tool that saves a token under its own name does):
// the name is what shows it, so neither the mount's listing nor its
// lookup, nor fsguard read (the file, or its directory's listing) shows
// it; fsguard read says why (credential-in-name). Names that merely look
// like one stay shown.
func TestAttackTokenInFileName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	file := pat.Value + ".txt"
	writeFile(t, filepath.Join(f.root, "n", file), "hello\n", 0o644)
	writeFile(t, filepath.Join(f.root, "n", pat.Value, "inner.txt"), "hello\n", 0o644)
	writeFile(t, filepath.Join(f.root, "n", "ghp_notatoken_just_a_long_name.txt"), "hello\n", 0o644)
	// A link whose text holds the token, though it leads to a clean file.
	if err := os.Symlink(pat.Value+"/../ghp_notatoken_just_a_long_name.txt", filepath.Join(f.root, "n", "link")); err != nil {
		t.Fatal(err)
	}
	startMount(t, f.mp, "--policy", f.policy)
	if text, err := os.Readlink(filepath.Join(f.mp, "n", "link")); err == nil || strings.Contains(text, pat.Secret) {
		t.Errorf("the mount shows a link whose text holds a token: %q, %v", text, err)
	}
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=names"}
	ents, err := os.ReadDir(filepath.Join(f.mp, "n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); strings.Contains(got, pat.Secret) || !strings.Contains(got, "ghp_notatoken") {
		t.Errorf("the mount lists %q", got)
	}
	for _, p := range []string{filepath.Join("n", file), filepath.Join("n", pat.Value), filepath.Join("n", pat.Value, "inner.txt")} {
		if _, err := os.Stat(filepath.Join(f.mp, p)); err == nil {
			t.Errorf("the mount's lookup finds %s", p)
		}
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", p, "--no-dedupe")
		if strings.Contains(out, "hello") {
			t.Errorf("fsguard read shows %s", p)
		}
		if !strings.Contains(out+errs, "credential") {
			t.Errorf("fsguard read of %s does not say a credential is in the name: %s", p, out+errs)
		}
	}
	out, errs, _, _ := runBinary(t, f.root, env, "", "read", "n", "--no-dedupe")
	if strings.Contains(out, pat.Value[4:]) || !strings.Contains(out, "ghp_notatoken") {
		t.Errorf("fsguard read of the directory shows: %s", out+errs)
	}
}

// TestAttackBase64InKubernetesSecret keeps credentials where Kubernetes
// keeps them: each base64-encoded whole under a Secret's data. Decoding
// is one command away for the agent, so fsguard read must show none.
func TestAttackBase64InKubernetesSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=k8s"}
	text := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n"
	encs := map[string]string{}
	for _, s := range sniff.SampleCredentials(20261207) {
		if strings.ContainsAny(s.Value, " =/:;") {
			continue
		}
		encs[s.Family] = base64.StdEncoding.EncodeToString([]byte(s.Value))
		text += "  " + s.Family + ": " + encs[s.Family] + "\n"
	}
	writeFile(t, filepath.Join(f.root, "secret.yaml"), text, 0o644)
	out, errs, _, _ := runBinary(t, f.root, env, "", "read", "secret.yaml", "--no-dedupe")
	if !strings.Contains(out, "kind: Secret") {
		t.Fatalf("fsguard read did not show the Secret: %s", out+errs)
	}
	var leaked []string
	for fam, enc := range encs {
		if strings.Contains(out+errs, enc) {
			leaked = append(leaked, fam)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("%d families shown in a Secret's data, base64-encoded, unmasked: %v", len(leaked), leaked)
	}
}
