"""A PEP 517 build backend in the standard library, for the engram client.

It builds the wheel (the ``engram`` package and its dist-info) with zipfile, so installing the
client needs no build tools from a package index. Only what pip calls is implemented:
get_requires_for_build_wheel, prepare_metadata_for_build_wheel, build_wheel, and the sdist pair.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "engram_client"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
METADATA = f"""Metadata-Version: 2.1
Name: engram-client
Version: {VERSION}
Summary: Python client for the engram memory service (memctl serve): the whole HTTP API, sync and asyncio, and a mem0-style Memory facade
Requires-Python: >=3.9
"""
WHEEL = """Wheel-Version: 1.0
Generator: engram build_backend
Root-Is-Purelib: true
Tag: py3-none-any
"""
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


def _package_files():
    pkg = os.path.join(HERE, "engram")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name == "py.typed":
            yield f"engram/{name}", os.path.join(pkg, name)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(WHEEL)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, path in _package_files():
            with open(path, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for name, text in (("METADATA", METADATA), ("WHEEL", WHEEL), ("top_level.txt", "engram\n")):
            arc = f"{DIST_INFO}/{name}"
            z.writestr(arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append(f"{DIST_INFO}/RECORD,,")
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(records) + "\n")
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as t:
        for rel in ["pyproject.toml", "build_backend.py"] + [arc for arc, _ in _package_files()]:
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return filename
