#!/usr/bin/env bash
# Release artifacts: static binaries (CGO_ENABLED=0, so they run in any
# image, musl and distroless included), a Debian package per architecture
# (the binary, the systemd unit, completions, the man page, the example
# policy as a config file), the Kubernetes manifests with the image's tag
# (fsguard-k8s.yaml), and SHA256SUMS.
#   scripts/release.sh OUTDIR [VERSION]
# VERSION defaults to scripts/version.sh (the tag, else
# 0.0.0~git<date>.<hash>). It is stamped into every binary (-ldflags -X),
# so --version, the fsguard_build_info metric, the MCP serverInfo, the man
# page and the package name all say the same string. The Debian packages are built with
# nfpm, a tool of the tools/release module (pinned in its go.mod), so the
# main module's dependencies stay what the program needs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/release.sh OUTDIR [VERSION]}
version=${2:-$(bash scripts/version.sh)}
version=${version#v}
case $version in [0-9]*) ;; *) echo "release.sh: version $version does not start with a digit (Debian's rule)" >&2; exit 1 ;; esac
stamp="-X github.com/fsguard/fsguard/internal/concept/version.stamped=$version"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
nfpm=$(cd tools/release && go tool -n nfpm)
# changelog VERSION: the package's Debian changelog (a native package's,
# one entry for this build), dated by the commit like every other stamp.
changelog() {
	printf 'fsguard (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- fsguard developers <fsguard@users.noreply.github.com>  %s\n' \
		"$1" "$(git rev-parse HEAD)" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
}
for arch in amd64 arm64; do
	stage=$(mktemp -d)
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags="-s -w $stamp" -o "$stage/fsguard" ./cmd/fsguard
	cp "$stage/fsguard" "$out/fsguard-linux-$arch"
	# Generated with a binary that runs here, whatever $arch is.
	host=$stage/host
	CGO_ENABLED=0 go build -ldflags="$stamp" -o "$host" ./cmd/fsguard
	bash scripts/manpage.sh "$host" | gzip -9n > "$stage/fsguard.1.gz"
	"$host" completion bash > "$stage/fsguard.bash"
	"$host" completion zsh > "$stage/_fsguard"
	"$host" completion fish > "$stage/fsguard.fish"
	sed 's|/usr/local/bin/fsguard|/usr/bin/fsguard|g' deploy/fsguard.service > "$stage/fsguard.service"
	cp policy.toml.example "$stage/policy.toml"
	changelog "$version" | gzip -9n > "$stage/changelog.gz"
	sed "s|\${STAGE}|$stage|g" deploy/nfpm.yaml > "$stage/nfpm.yaml" # nfpm expands no variable in a source path
	ARCH=$arch VERSION=$version "$nfpm" package --config "$stage/nfpm.yaml" --packager deb --target "$out/fsguard_${version}_$arch.deb" >/dev/null
	rm -rf "$stage"
done
# The Kubernetes manifests with the image tagged by this version (a tag
# may not hold Debian's ~ or +); build and push the image under the same
# name: docker build --build-arg VERSION=$version -t ghcr.io/fsguard/fsguard:$tag .
tag=$(printf %s "$version" | tr '~+' '--')
for f in namespace policy-configmap daemonset; do
	echo ---
	sed "s|ghcr.io/fsguard/fsguard:VERSION|ghcr.io/fsguard/fsguard:$tag|" "deploy/k8s/$f.yaml"
done > "$out/fsguard-k8s.yaml"
(cd "$out" && sha256sum fsguard-linux-* fsguard_*.deb fsguard-k8s.yaml > SHA256SUMS)
ls -l "$out"
