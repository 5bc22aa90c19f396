#!/usr/bin/env bash
# Builds the release artifacts (scripts/release.sh) into a temporary
# directory and checks them as an installer would: checksums, static
# binaries, and each Debian package's files, conffiles and unit; the
# amd64 package is unpacked and its binary, man page and unit are used.
# CI runs it: a release configuration nothing exercises rots.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bash scripts/release.sh "$out" 1.2.3 >/dev/null
cd "$out"
fail() { echo "check-release: $*" >&2; exit 1; }
sha256sum --quiet -c SHA256SUMS || fail "SHA256SUMS does not match"
for arch in amd64 arm64; do
	file "fsguard-linux-$arch" | grep -q "statically linked" || fail "fsguard-linux-$arch is not static: $(file "fsguard-linux-$arch")"
	deb=fsguard_1.2.3_$arch.deb
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "$deb: wrong architecture"
	[ "$(dpkg-deb -f "$deb" Version)" = "1.2.3" ] || fail "$deb: wrong version"
	files=$(dpkg-deb -c "$deb" | awk '{print $6}')
	for f in ./usr/bin/fsguard ./usr/lib/systemd/system/fsguard.service ./usr/share/man/man1/fsguard.1.gz \
		./usr/share/bash-completion/completions/fsguard ./usr/share/zsh/vendor-completions/_fsguard \
		./usr/share/fish/vendor_completions.d/fsguard.fish ./etc/fsguard/policy.toml; do
		grep -qx "$f" <<<"$files" || fail "$deb lacks $f"
	done
	dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/fsguard/policy.toml || fail "$deb: the policy is not a conffile"
done
mkdir x && dpkg-deb -x fsguard_1.2.3_amd64.deb x
x/usr/bin/fsguard version >/dev/null || fail "the packaged binary does not run"
grep -q '^ExecStart=/usr/bin/fsguard mount' x/usr/lib/systemd/system/fsguard.service || fail "the packaged unit does not run /usr/bin/fsguard"
warnings=$(zcat x/usr/share/man/man1/fsguard.1.gz | groff -man -ww -z 2>&1) && [ -z "$warnings" ] || fail "the man page: $warnings"
zcat x/usr/share/man/man1/fsguard.1.gz | grep -q '^\.SS read$' || fail "the man page lacks the read command"
echo "check-release: ok (binaries, checksums, packages for amd64 and arm64)"
