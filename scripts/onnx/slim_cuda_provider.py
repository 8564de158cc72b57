#!/usr/bin/python3
"""Slims ONNX Runtime's CUDA provider library to the GPU code one architecture uses.

libonnxruntime_providers_cuda.so (asus4 npm package 0.4.9, ORT 1.29.0) is
230 MB, 166 MB of it the .nv_fatbin section: fat binary containers holding,
per kernel file, one cubin (SASS) for each of sm_75, 80, 86, 89, 90 and 120.
The CUDA driver loads only the entry matching the device (a cubin runs only on
its own major architecture), so for one GPU generation the other entries are
dead weight. This script copies the library and zero-fills the payload of
every entry the target cannot use or will not pick, leaving every header (and
so the file's layout, offsets and ELF structure) as it was: the zeros then
compress to almost nothing (xz).

Fat binary layout (checked against the data: entries must chain exactly to
each container's end, else the script stops):
  container header, 16 bytes: u32 magic 0xBA55ED50, u16 version, u16 header
      size, u64 size of the entries that follow
  entry header (header size at +4, 64 or more bytes): u16 kind (1 PTX,
      2 ELF cubin), u16, u32 header size, u64 payload size, ..., u32 arch
      (e.g. 90) at +28, u64 flags at +40; then the payload.

Kept: cubins whose arch number is in --keep (default 90, which covers sm_90
and sm_90a: both carry arch 90; the histogram shows each kind's header
flags, e.g. 0x8011 for sm_75..89 here, 0x108011 for 90), and per container the
PTX of the highest arch <= max(--keep) (a fallback the driver can JIT; an
sm_90 GPU cannot run PTX made for a later arch). Everything else is zeroed.

Usage: /usr/bin/python3 scripts/onnx/slim_cuda_provider.py IN OUT [--keep 90 ...] [--xz]
Stdlib only. Prints a histogram of (kind, arch) -> entries, bytes, kept.
"""

import argparse
import collections
import lzma
import os
import shutil
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND = {1: "ptx", 2: "cubin"}


def sections(buf):
    """Yields (name, offset, size) for each ELF64 little-endian section."""
    if buf[:4] != b"\x7fELF" or buf[4] != 2 or buf[5] != 1:
        sys.exit("not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", buf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", buf, 0x3A)
    hdrs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size = struct.unpack_from("<IIQQQQ", buf, shoff + i * shentsize)
        hdrs.append((name, typ, off, size))
    stroff = hdrs[shstrndx][2]
    for name, typ, off, size in hdrs:
        end = buf.index(b"\0", stroff + name)
        yield buf[stroff + name:end].decode(), typ, off, size


def entries(buf, off, size):
    """Yields (container_no, entry_offset, header_size, kind, arch, flags, payload_size)."""
    pos, end, n = off, off + size, 0
    while pos < end:
        if pos + 16 > end:
            if any(buf[pos:end]):
                sys.exit(f"trailing non-zero bytes at {pos:#x}")
            break
        magic, version, hsize, fsize = struct.unpack_from("<IHHQ", buf, pos)
        if magic != FATBIN_MAGIC:
            # containers are aligned; zero padding may separate them
            if magic == 0:
                pos += 4
                continue
            sys.exit(f"bad fatbin magic {magic:#x} at {pos:#x}")
        cend = pos + hsize + fsize
        if cend > end:
            sys.exit(f"container at {pos:#x} runs past the section end")
        e = pos + hsize
        while e < cend:
            kind, _, ehs, psize = struct.unpack_from("<HHIQ", buf, e)
            if kind not in KIND or ehs < 64 or e + ehs + psize > cend:
                sys.exit(f"bad entry header at {e:#x}: kind={kind} header={ehs} payload={psize}")
            arch, = struct.unpack_from("<I", buf, e + 28)
            flags, = struct.unpack_from("<Q", buf, e + 40)
            yield n, e, ehs, kind, arch, flags, psize
            e += ehs + psize
        if e != cend:
            sys.exit(f"entries of container at {pos:#x} end at {e:#x}, not at {cend:#x}")
        n += 1
        pos = cend


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--keep", type=int, action="append", help="cubin arch to keep (repeatable; default 90)")
    ap.add_argument("--xz", action="store_true", help="also write DST.xz (lzma preset 9)")
    args = ap.parse_args()
    keep = set(args.keep or [90])

    with open(args.src, "rb") as f:
        buf = bytearray(f.read())
    fat = [s for s in sections(buf) if s[0] == ".nv_fatbin"]
    if len(fat) != 1:
        sys.exit(f"{args.src}: {len(fat)} .nv_fatbin sections")
    _, _, off, size = fat[0]
    print(f"{args.src}: {len(buf)} bytes, .nv_fatbin at {off:#x}, {size} bytes")

    ents = list(entries(buf, off, size))
    # per container, the highest PTX arch the kept archs can JIT
    best_ptx = {}
    for n, _, _, kind, arch, _, _ in ents:
        if kind == 1 and arch <= max(keep):
            best_ptx[n] = max(best_ptx.get(n, 0), arch)
    hist = collections.defaultdict(lambda: [0, 0, 0])  # entries, payload bytes, kept entries
    zeroed = 0
    containers = set()
    have_keep = set()
    for n, e, ehs, kind, arch, flags, psize in ents:
        containers.add(n)
        h = hist[(KIND[kind], f"sm_{arch}", f"{flags:#x}")]
        h[0] += 1
        h[1] += psize
        ok = (kind == 2 and arch in keep) or (kind == 1 and best_ptx.get(n) == arch)
        if ok:
            h[2] += 1
            have_keep.add(n)
        else:
            buf[e + ehs:e + ehs + psize] = bytes(psize)
            zeroed += psize
    print(f"{len(containers)} containers, {len(ents)} entries")
    print(f"{'kind':6} {'arch':7} {'flags':>10} {'entries':>8} {'payload bytes':>14} {'kept':>5}")
    for (kind, sm, fl), (cnt, nbytes, kept) in sorted(hist.items(), key=lambda kv: (kv[0][0], int(kv[0][1][3:]))):
        print(f"{kind:6} {sm:7} {fl:>10} {cnt:8} {nbytes:14} {kept:5}")
    missing = sorted(containers - have_keep)
    if missing:
        print(f"warning: {len(missing)} containers keep no entry (no code for {sorted(keep)}): {missing[:20]}")
    print(f"zeroed {zeroed} payload bytes ({100 * zeroed / len(buf):.1f}% of the file)")

    with open(args.dst, "wb") as f:
        f.write(buf)
    shutil.copymode(args.src, args.dst)
    print(f"wrote {args.dst}")
    if args.xz:
        with lzma.open(args.dst + ".xz", "wb", preset=9) as f:
            f.write(buf)
        print(f"wrote {args.dst}.xz: {os.path.getsize(args.dst + '.xz')} bytes")


if __name__ == "__main__":
    main()
