#!/bin/sh
# Install (or uninstall) the sbx Python package for PYTHON (default
# /usr/bin/python3) under PREFIX, as `make install` / `make uninstall` do:
#   install.sh install|uninstall SRCDIR PREFIX [DESTDIR]
# The package goes into the directory of that Python's sys.path under
# PREFIX (Debian: PREFIX/lib/python3.X/dist-packages), else into
# sysconfig's purelib for PREFIX. With pip for that Python it is installed
# by pip (--target, from a copy of SRCDIR, no network, no dependencies);
# without pip the files are copied and byte-compiled.
set -eu
action=$1 src=$2 prefix=$3 destdir=${4:-}
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
	echo "install.sh: no Python >= 3.9 at $py: the sbx Python package is not installed (set PYTHON=)" >&2
	exit 0
fi
dir=$("$py" - "$prefix" <<'PY'
import os, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
for p in sys.path:
    if p.startswith(prefix + "/lib/") and p.endswith(("dist-packages", "site-packages")) and "python3" in p:
        print(p)
        break
else:
    print(sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
PY
)
target=$destdir$dir
case $action in
install)
	mkdir -p "$target"
	rm -rf "$target/sbx" "$target"/sbx-*.dist-info
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -R "$src/pyproject.toml" "$src/README.md" "$src/sbx" "$tmp/"
	find "$tmp" -name __pycache__ -prune -exec rm -rf {} +
	if "$py" -m pip --version >/dev/null 2>&1 && "$py" -c 'import setuptools' 2>/dev/null &&
		(cd "$tmp" && "$py" -m pip install -q --no-build-isolation --no-deps --no-index \
			--disable-pip-version-check --no-compile --upgrade --target "$tmp/out" . >&2); then
		cp -R "$tmp/out/sbx" "$tmp/out"/sbx-*.dist-info "$target/"
	else
		cp -R "$tmp/sbx" "$target/"
	fi
	"$py" -m compileall -q -d "$dir/sbx" "$target/sbx" >/dev/null
	echo "sbx Python package installed in $target" >&2
	;;
uninstall)
	rm -rf "$target/sbx" "$target"/sbx-*.dist-info
	;;
*)
	echo "usage: install.sh install|uninstall SRCDIR PREFIX [DESTDIR]" >&2
	exit 2
	;;
esac
