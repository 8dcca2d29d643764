#!/usr/bin/env python3
"""`vkf bench compare --html` opened in headless Chromium: the page must render its bar charts.

Usage: bench_html_in_chromium.py VKF RESULT.json RESULT.json ...

Writes the page for the given result files, takes a screenshot with Debian's chromium (no
network, no GPU, a fresh profile) and checks that the PNG shows the first two devices' bars:
runs of pixels in the page's first two palette colours. Exits 77 (ctest: skipped) when chromium
is not installed; scripts/install-deps installs it.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

BARS = {"first device": (0x1F, 0x77, 0xB4), "second device": (0xFF, 0x7F, 0x0E)}


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("PNG kind %s not handled" % (header,))
    bpp = 3 if colour == 2 else 4
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        ftype, cur = line[0], bytearray(line[1:])
        for i in range(stride):  # undo the scanline filter (PNG spec, section 9)
            a = cur[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                cur[i] = (cur[i] + a) & 255
            elif ftype == 2:
                cur[i] = (cur[i] + b) & 255
            elif ftype == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(cur[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = cur
    return w, h, rows


def longest_run(rows, rgb, tol=8):
    """The longest horizontal run of pixels within `tol` of `rgb`, and how many such pixels."""
    best, total = 0, 0
    for row in rows:
        run = 0
        for p in row:
            if all(abs(p[i] - rgb[i]) <= tol for i in range(3)):
                run, total = run + 1, total + 1
                best = max(best, run)
            else:
                run = 0
    return best, total


def main():
    vkf, results = sys.argv[1], sys.argv[2:]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("chromium is not installed (scripts/install-deps installs it): skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="vkf-html-") as tmp:
        page, shot = os.path.join(tmp, "page.html"), os.path.join(tmp, "shot.png")
        subprocess.run([vkf, "bench", "compare", *results, "--html", page], check=True,
                       stdout=subprocess.DEVNULL)
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + os.path.join(tmp, "p"),
               "--window-size=1200,900", "--screenshot=" + shot, "file://" + page]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
        if not os.path.exists(shot):
            print(out.stdout.decode(errors="replace"))
            print("FAIL: chromium wrote no screenshot")
            return 1
        w, h, rows = read_png(shot)
        print("screenshot %dx%d" % (w, h))
        ok = True
        for what, rgb in BARS.items():
            run, total = longest_run(rows, rgb)
            print("%s's bars (#%02x%02x%02x): %d pixels, longest run %d" % (what, *rgb, total, run))
            # A bar is a solid run; the legend's swatch alone is 14 pixels wide.
            if run < 40 or total < 500:
                ok = False
        print("PASS" if ok else "FAIL: the page shows no bar chart")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
