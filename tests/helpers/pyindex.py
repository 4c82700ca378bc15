"""Makes a tiny package index for the python_packages tests (pip.bats).

pyindex.py DIR writes DIR/simple/sbxdemo/index.html (PEP 503) and the wheel
it links to, DIR/packages/sbxdemo-1.0-py3-none-any.whl: a pure-Python
package `sbxdemo` whose VALUE is 42, made with zipfile as pip expects a
wheel (METADATA, WHEEL, RECORD with sha256 digests). Standard library only.
"""
import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "sbxdemo", "1.0"
DIST = f"{NAME}-{VERSION}.dist-info"
FILES = {
    f"{NAME}/__init__.py": b"VALUE = 42\n",
    f"{DIST}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: sbx test package\n".encode(),
    f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nGenerator: sbx-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def main():
    top = sys.argv[1]
    wheel_name = f"{NAME}-{VERSION}-py3-none-any.whl"
    os.makedirs(os.path.join(top, "packages"), exist_ok=True)
    os.makedirs(os.path.join(top, "simple", NAME), exist_ok=True)
    wheel = os.path.join(top, "packages", wheel_name)
    record = "".join(record_line(p, d) for p, d in FILES.items()) + f"{DIST}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in FILES.items():
            z.writestr(path, data)
        z.writestr(f"{DIST}/RECORD", record)
    with open(wheel, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(top, "simple", "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html><html><body><a href="{NAME}/">{NAME}</a></body></html>\n')
    with open(os.path.join(top, "simple", NAME, "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html><html><body><a href="../../packages/{wheel_name}#sha256={sha}">{wheel_name}</a>'
                "</body></html>\n")


if __name__ == "__main__":
    main()
