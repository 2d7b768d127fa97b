#!/usr/bin/env python3
"""check_report_html.py — what headless Chromium made of report.html, against report.md.

usage: check_report_html.py REPORT_DIR SCREENSHOT.png DOM.html WIDTH HEIGHT [HOSTILE_TEXT]

Checks (standard library only; exits 1 naming the first failure):
  - the screenshot is a PNG of exactly WIDTH x HEIGHT pixels and not blank: over 5% of its
    pixels differ from the page background and it has over 16 distinct colours (text, table
    shading, the charts' series);
  - the DOM Chromium built holds every table of report.md, cell for cell, in order (the text of
    each <th>/<td> equals the Markdown cell with its markup removed), every list item, and
    every number of report.md's text at least as often;
  - the page fetches nothing and runs nothing: no <script>, no src= or href= attribute, no
    url( or @import, no http(s):// other than the SVG namespace;
  - each chart of report.md is an inline <svg> in the DOM;
  - HOSTILE_TEXT (a device name with markup characters) is in the DOM as text, and made no
    element.
"""
import html
import html.parser
import re
import struct
import sys
import zlib


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        fail(f"{path}: unexpected PNG format (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


class Dom(html.parser.HTMLParser):
    """The cell texts of every table row, list items, elements seen, and all text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.items, self.tags, self.text = [], [], [], []
        self.cell = self.item = None
        self.row = None
        self.attrs_seen = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs_seen.extend(attrs)
        if tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "li":
            self.item = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None
        elif tag == "li" and self.item is not None:
            self.items.append("".join(self.item).strip())
            self.item = None

    def handle_data(self, data):
        self.text.append(data)
        for part in (self.cell, self.item):
            if part is not None:
                part.append(data)


def md_inline(text):
    """A Markdown cell or line as the page shows it: code spans literal, ** and escapes gone."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and not text[i + 1].isalnum() and not text[i + 1].isspace():
            out.append(text[i + 1])
            i += 2
        elif c == "`" and "`" in text[i + 1:]:
            end = text.index("`", i + 1)
            out.append(text[i + 1:end].replace("\\|", "|"))
            i = end + 1
        elif text.startswith("**", i):
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out).strip()


def md_cells(line):
    cells, start = [], 1
    for i in range(1, len(line)):
        if line[i] == "|" and line[i - 1] != "\\":
            cells.append(md_inline(line[start:i]))
            start = i + 1
    return cells


def main():
    report_dir, png, dom_path, width, height = sys.argv[1:6]
    hostile = sys.argv[6] if len(sys.argv) > 6 else None
    md = open(f"{report_dir}/report.md", encoding="utf-8").read()
    dom_text = open(dom_path, encoding="utf-8").read()

    w, h, rows = png_pixels(png)
    if (w, h) != (int(width), int(height)):
        fail(f"screenshot is {w}x{h}, expected {width}x{height}")
    background = rows[0][0]
    colours, differ = set(), 0
    for row in rows:
        for px in row:
            colours.add(px)
            differ += px != background
    share = differ / (w * h)
    if share < 0.05 or len(colours) <= 16:
        fail(f"screenshot looks blank: {100 * share:.1f}% of pixels differ from the background, {len(colours)} colours")

    dom = Dom()
    dom.feed(dom_text)
    md_rows = [md_cells(l) for l in md.splitlines() if l.startswith("|") and not re.fullmatch(r"[|\-: ]+", l)]
    if md_rows != dom.rows:
        for k, (a, b) in enumerate(zip(md_rows, dom.rows)):
            if a != b:
                fail(f"table row {k + 1} differs:\n  report.md: {a}\n  page:      {b}")
        fail(f"report.md has {len(md_rows)} table rows, the page {len(dom.rows)}")
    md_items = [md_inline(l[2:]) for l in md.splitlines() if l.startswith("- ")]
    if md_items != dom.items:
        fail(f"list items differ:\n  report.md: {md_items}\n  page:      {dom.items}")
    page_text = " ".join(dom.text)   # text nodes apart: a cell ending in a digit is not glued to the next
    for number in sorted(set(re.findall(r"\d+(?:\.\d+)?", md))):
        want, got = len(re.findall(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)", md)), \
            len(re.findall(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)", page_text))
        if got < want:
            fail(f"the figure {number} appears {want} times in report.md, {got} on the page")

    if "script" in dom.tags:
        fail("the page has a <script> element")
    refs = [(k, v) for k, v in dom.attrs_seen if k in ("src", "href") or (v and "url(" in v)]
    if refs:
        fail(f"the page refers outside itself: {refs[:3]}")
    raw = open(f"{report_dir}/report.html", encoding="utf-8").read()
    if "@import" in raw or "url(" in raw or re.search(r"https?://(?!www\.w3\.org/2000/svg\")", raw):
        fail("report.html has @import, url( or an http(s) address other than the SVG namespace")
    charts = re.findall(r"^!\[[^\]]*\]\(([^)]+)\)$", md, re.M)
    if dom.tags.count("svg") != len(charts) or not charts:
        fail(f"report.md names {len(charts)} charts, the page has {dom.tags.count('svg')} inline <svg>")

    if hostile is not None:
        if hostile not in page_text:
            fail(f"the device name {hostile!r} is not on the page as text")
        if "script" in dom.tags or "b" in dom.tags:
            fail("the device name's markup became elements")
    print(f"ok: {w}x{h} screenshot, {100 * share:.0f}% drawn, {len(colours)} colours; {len(dom.rows)} table rows, "
          f"{len(dom.items)} list items and every figure of report.md on the page; {len(charts)} inline charts")


main()
