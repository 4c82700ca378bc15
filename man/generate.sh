#!/bin/sh
# Converts every man/*.md (go-md2man's Markdown) into the roff page next to
# it: man/sbx.1.md -> man/sbx.1. The generated pages are committed, so a
# build without go-md2man still installs them; run this after editing a .md.
# Usage: man/generate.sh [GO_MD2MAN]   (default: $GO_MD2MAN, else go-md2man)
set -eu

md2man=${1:-${GO_MD2MAN:-go-md2man}}
dir=$(cd "$(dirname "$0")" && pwd)

if ! command -v "$md2man" >/dev/null 2>&1; then
	echo "generate.sh: $md2man not found (Debian: apt-get install go-md2man)" >&2
	exit 1
fi

tmp=
trap 'rm -f "$tmp"' EXIT

for md in "$dir"/*.md; do
	[ -e "$md" ] || continue
	out=${md%.md}
	tmp=$out.tmp.$$
	"$md2man" -in "$md" -out "$tmp"
	mv -f "$tmp" "$out"
	tmp=
	echo "${out#"$dir"/}"
done
