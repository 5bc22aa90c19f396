#!/usr/bin/env bash
# The release version of the checkout, printed on stdout: the tag when
# HEAD is tagged (v1.2.3 -> 1.2.3); after a tag, <tag>+git<date>.<hash>
# (above that tag, below the next); with no tag at all,
# 0.0.0~git<date>.<hash> (below any release). The date is the commit's
# (UTC), so later untagged builds sort later, as Debian compares versions;
# a work tree with changes adds +dirty (.dirty after a +).
# scripts/release.sh stamps it into the binary (-ldflags -X, see
# internal/concept/version) and names the packages with it.
set -euo pipefail
cd "$(dirname "$0")/.."
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
	v=${tag#v}
else
	day=$(TZ=UTC git log -1 --date=format-local:%Y%m%d --format=%cd)
	hash=$(git rev-parse --short=12 HEAD)
	if last=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null); then
		v=${last#v}+git$day.$hash
	else
		v=0.0.0~git$day.$hash
	fi
fi
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	case $v in *+*) v=$v.dirty ;; *) v=$v+dirty ;; esac
fi
echo "$v"
