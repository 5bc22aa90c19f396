#!/usr/bin/env bash
# Builds the release artifacts (scripts/release.sh) into a temporary
# directory and checks them as an installer would: checksums, static
# binaries, and each Debian package's files, conffiles and unit; the
# amd64 package is unpacked and its binary, man page and unit are used.
# The version is scripts/version.sh's, as a release's is, and must be the
# one string in the package names and control files, --version, the
# version command, the man page and the MCP serverInfo (the metric's
# fsguard_build_info is the same function's, TestVersionIsOneString).
# CI runs it: a release configuration nothing exercises rots.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
want=$(bash scripts/version.sh)
bash scripts/release.sh "$out" >/dev/null
cd "$out"
fail() { echo "check-release: $*" >&2; exit 1; }
sha256sum --quiet -c SHA256SUMS || fail "SHA256SUMS does not match"
for arch in amd64 arm64; do
	file "fsguard-linux-$arch" | grep -q "statically linked" || fail "fsguard-linux-$arch is not static: $(file "fsguard-linux-$arch")"
	deb=fsguard_${want}_$arch.deb
	[ -f "$deb" ] || fail "no $deb: $(ls)"
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "$deb: wrong architecture"
	[ "$(dpkg-deb -f "$deb" Version)" = "$want" ] || fail "$deb: version $(dpkg-deb -f "$deb" Version), want $want"
	files=$(dpkg-deb -c "$deb" | awk '{print $6}')
	for f in ./usr/bin/fsguard ./usr/lib/systemd/system/fsguard.service ./usr/share/man/man1/fsguard.1.gz \
		./usr/share/bash-completion/completions/fsguard ./usr/share/zsh/vendor-completions/_fsguard \
		./usr/share/fish/vendor_completions.d/fsguard.fish ./etc/fsguard/policy.toml; do
		grep -qx "$f" <<<"$files" || fail "$deb lacks $f"
	done
	dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/fsguard/policy.toml || fail "$deb: the policy is not a conffile"
done
# lintian clean, pedantic tags included; the one override (a static
# binary) carries its reason in the package.
report=$(lintian --pedantic --fail-on error,warning,info,pedantic --tag-display-limit 0 fsguard_"${want}"_*.deb 2>&1) ||
	fail "lintian: $report"
for s in postinst prerm postrm; do
	dpkg-deb --ctrl-tarfile "fsguard_${want}_amd64.deb" | tar -t | grep -qx "./$s" || fail "the package lacks its $s script"
done
tag=$(printf %s "$want" | tr '~+' '--')
[ "$(grep -c "image: ghcr.io/fsguard/fsguard:$tag\$" fsguard-k8s.yaml)" = 2 ] || fail "fsguard-k8s.yaml does not name the image ghcr.io/fsguard/fsguard:$tag twice (daemon, follower): $(grep image: fsguard-k8s.yaml)"
! grep -q ':VERSION' fsguard-k8s.yaml || fail "fsguard-k8s.yaml still holds the VERSION placeholder"
mkdir x && dpkg-deb -x "fsguard_${want}_amd64.deb" x
for flag in version --version; do
	got=$(x/usr/bin/fsguard $flag) || fail "the packaged binary does not run"
	[ "$got" = "fsguard $want" ] || fail "fsguard $flag says '$got', want 'fsguard $want'"
done
zcat x/usr/share/man/man1/fsguard.1.gz | grep -q "^\.TH FSGUARD 1 .* \"fsguard $want\"" || fail "the man page's header does not say fsguard $want: $(zcat x/usr/share/man/man1/fsguard.1.gz | grep '^\.TH')"
mkdir mcp-root
# The server's first answer, to initialize; stdin stays open until it came.
coproc MCP { cd mcp-root && FSGUARD_JOURNAL="$out/j.db" FSGUARD_POLICY= FSGUARD_SOCKET= timeout 60 ../x/usr/bin/fsguard mcp; }
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check-release","version":"1"}}}' >&"${MCP[1]}"
IFS= read -r -t 60 info <&"${MCP[0]}" || true
exec {MCP[1]}>&-
wait "$MCP_PID" || true
grep -qF "\"serverInfo\":{\"name\":\"fsguard\",\"title\":\"fsguard\",\"version\":\"$want\"}" <<<"$info" || fail "the MCP serverInfo does not say $want: $info"
grep -q '^ExecStart=/usr/bin/fsguard mount' x/usr/lib/systemd/system/fsguard.service || fail "the packaged unit does not run /usr/bin/fsguard"
warnings=$(zcat x/usr/share/man/man1/fsguard.1.gz | groff -man -ww -z 2>&1) && [ -z "$warnings" ] || fail "the man page: $warnings"
zcat x/usr/share/man/man1/fsguard.1.gz | grep -q '^\.SS read$' || fail "the man page lacks the read command"
echo "check-release: ok (version $want; binaries, checksums, packages for amd64 and arm64)"
