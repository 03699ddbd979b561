"""One HTML file that travels: figures as data: URIs, fonts cut to the page's own text.

A report copied alone into an empty folder, mailed or opened from ``file://``
must look the same as in the repository, so nothing in it points at another
file. Two helpers do it:

* :func:`image_uri` turns a figure into a ``data:`` URI: its PNG (re-encoded
  losslessly, which is about 12 % smaller than matplotlib's) or the SVG
  written beside it, whichever is shorter. matplotlib's SVGs draw their text
  as outlines, so both render with no font.
* :func:`font_css` embeds ``@font-face`` rules cut, per page, to exactly the
  characters the page shows (:func:`page_text`): the packaged Noto Sans CJK
  subset first, then the packaged Extension B supplement for the corpus's
  rarest characters, then matplotlib's own DejaVu Sans (it ships with every
  matplotlib) for the symbols Noto Sans CJK lacks (✓ ✗ ⁻ ᵀ …), and DejaVu Sans
  Mono for code. The faces are WOFF 1.0 (zlib, in the standard library), so
  rendering needs nothing beyond fontTools, which matplotlib already depends
  on. Every face keeps its copyright and licence name records (SIL OFL 1.1;
  DejaVu's Bitstream Vera licence), as both licences ask.
"""

from __future__ import annotations

import base64
import html
import io
import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from ..fonts import EXTB_FILE, FONT_FILE

TEXT_FAMILIES = ("ReportCJK", "ReportCJKExtB", "ReportSymbols")
MONO_FAMILY = "ReportMono"
# the CSS font stacks every page uses: the embedded faces first, in the order they are cut
SANS_STACK = ", ".join(f'"{f}"' for f in TEXT_FAMILIES) + ", sans-serif"
MONO_STACK = f'"{MONO_FAMILY}", ' + ", ".join(f'"{f}"' for f in TEXT_FAMILIES) + ", monospace"
_NAME_IDS = [0, 1, 2, 3, 4, 5, 6, 13, 14]  # copyright, names, licence text and URL
# characters Noto Sans CJK draws full-width where the text means a Latin symbol: ‖ (a norm's bars, ‖J‖_F)
# is cut into the DejaVu face instead, so the CJK face lacks it and the stack falls through to that one
LATIN_DRAWN = frozenset("\u2016")
FONT_NOTICE = (
    "<!-- Embedded fonts, each cut to this page's characters: ReportCJK from Noto Sans CJK TC and "
    "ReportCJKExtB from HanaMinB (renamed Attnlab CJK ExtB), both SIL Open Font License 1.1; ReportSymbols "
    "and ReportMono from DejaVu Sans and DejaVu Sans Mono (Bitstream Vera licence; DejaVu changes public "
    "domain). Each face carries its copyright and licence in its name table. -->"
)


def _dejavu(name: str) -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name


def text_fonts() -> tuple[tuple[str, Path], ...]:
    """(CSS family, source file) in fallback order."""
    return (
        (TEXT_FAMILIES[0], FONT_FILE),
        (TEXT_FAMILIES[1], EXTB_FILE),
        (TEXT_FAMILIES[2], _dejavu("DejaVuSans.ttf")),
    )


def mono_font() -> Path:
    return _dejavu("DejaVuSansMono.ttf")


# ------------------------------------------------------------------------------ page text
class _TextParser(HTMLParser):
    """The text a reader can see: text nodes outside <style>/<script>, plus alt and title
    attributes (shown when an image cannot load, or on hover); code text kept apart too."""

    HIDDEN = {"style", "script"}
    CODE = {"code", "pre", "kbd", "samp"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.code: list[str] = []
        self.hidden = 0
        self.in_code = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden += 1
        if tag in self.CODE:
            self.in_code += 1
        for k, v in attrs:
            if k in ("alt", "title") and v:
                self.text.append(v)

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        if tag in self.CODE:
            self.in_code = max(0, self.in_code - 1)

    def handle_data(self, data):
        if not self.hidden:
            self.text.append(data)
            if self.in_code:
                self.code.append(data)


def page_text(page: str) -> tuple[str, str]:
    """(all visible text, the text inside code elements) of an HTML page or fragment."""
    p = _TextParser()
    p.feed(page)
    p.close()
    return "".join(p.text), "".join(p.code)


def document(title: str, body: str, css: str) -> str:
    """A whole self-contained page: ``body`` under ``title``, styled by ``css``, with the fonts cut to
    exactly the characters it shows (a comment names any no embedded font draws)."""
    text, code = page_text(f"<title>{title}</title>" + body)
    fonts, missing = font_css(text, code)
    note = f"<!-- no embedded font draws: {html.escape(''.join(sorted(missing)))} -->" if missing else ""
    return (
        '<!doctype html>\n<html lang="zh"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title>\n{FONT_NOTICE}{note}\n"
        f"<style>{fonts}{css}</style></head><body>\n" + body + "\n</body></html>\n"
    )


def drawn_chars(text: str) -> set[str]:
    """The characters of ``text`` a font must draw: everything but line breaks, tabs and
    other control characters (the space is drawn too: its width comes from the font)."""
    return {c for c in text if c >= " " and not ("\x7f" <= c <= "\x9f")}


# ---------------------------------------------------------------------------------- fonts
@lru_cache(maxsize=8)
def _cmap(path: Path) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    return frozenset(TTFont(str(path), lazy=True).getBestCmap())


def _woff(path: Path, chars: set[str]) -> bytes:
    from fontTools import subset

    opts = subset.Options()
    opts.flavor = "woff"  # zlib: no brotli needed
    opts.layout_features = ["*"]
    opts.name_IDs = _NAME_IDS
    opts.hinting = False
    opts.notdef_outline = True
    opts.drop_tables += ["FFTM"]  # FontForge's timestamps: nothing to draw with
    opts.bidi_closure = False  # exactly the page's characters: no ≤ added for a ≥ (fontTools >= 4.45)
    font = subset.load_font(str(path), opts)
    sub = subset.Subsetter(opts)
    sub.populate(text="".join(sorted(chars)))
    sub.subset(font)
    buf = io.BytesIO()
    subset.save_font(font, buf, opts)
    return buf.getvalue()


def _face(family: str, data: bytes) -> str:
    uri = "data:font/woff;base64," + base64.b64encode(data).decode("ascii")
    return f'@font-face{{font-family:"{family}";src:url({uri}) format("woff");font-display:block}}\n'


def font_css(text: str, code_text: str = "") -> tuple[str, set[str]]:
    """@font-face rules holding exactly the characters of ``text`` (each from the first font of
    :func:`text_fonts` that has it, but :data:`LATIN_DRAWN` from the last, DejaVu Sans, where it has them) and a monospace face for ``code_text``; also returns the
    characters no embedded face has (empty for every page attnlab writes; the tests check)."""
    wanted = drawn_chars(text)
    css, left = [], set(wanted)
    fonts = text_fonts()
    latin = fonts[-1][1]
    for family, path in fonts:
        if not path.is_file():
            continue
        take = {c for c in left if ord(c) in _cmap(path)}
        if path != latin and latin.is_file():
            take -= {c for c in LATIN_DRAWN if ord(c) in _cmap(latin)}
        if take:
            css.append(_face(family, _woff(path, take)))
            left -= take
    mono = mono_font()
    code = {c for c in drawn_chars(code_text) if mono.is_file() and ord(c) in _cmap(mono)}
    if code:
        css.append(_face(MONO_FAMILY, _woff(mono, code)))
    return "".join(css), left


# --------------------------------------------------------------------------------- images
def _png(path: Path) -> bytes:
    """The PNG re-encoded losslessly (an opaque RGBA image as RGB, zlib at its best)."""
    data = path.read_bytes()
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.mode == "RGBA" and im.getchannel("A").getextrema() == (255, 255):
                im = im.convert("RGB")
            buf = io.BytesIO()
            im.save(buf, "PNG", optimize=True)
        return min(data, buf.getvalue(), key=len)
    except Exception:  # a PNG Pillow cannot re-encode is embedded as it is
        return data


def image_uri(path: Path) -> str | None:
    """A figure as a data: URI: its PNG or the SVG beside it (same name), whichever is shorter;
    None when neither file exists."""
    path = Path(path)
    png, svg = path.with_suffix(".png"), path.with_suffix(".svg")
    candidates = []
    if png.is_file():
        candidates.append("data:image/png;base64," + base64.b64encode(_png(png)).decode("ascii"))
    if svg.is_file():
        candidates.append("data:image/svg+xml;base64," + base64.b64encode(svg.read_bytes()).decode("ascii"))
    return min(candidates, key=len) if candidates else None


# ------------------------------------------------------------------------------ the check
_URL = re.compile(r"""url\(\s*(["']?)(.*?)\1\s*\)""", re.I | re.S)
_LOADING_ATTRS = {"src", "srcset", "poster", "data", "background", "xlink:href", "action", "formaction"}


class _RefParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.in_style = False

    def handle_starttag(self, tag, attrs):
        self.in_style = tag == "style"
        for k, v in attrs:
            if v is None:
                continue
            if k in _LOADING_ATTRS or (k == "href" and tag != "a"):  # <link href> loads, <a href> is a link
                self.refs.append((tag, k, v))
            elif k == "href":
                self.refs.append(("a", k, v))
            elif k == "style":
                self.refs += [(tag, "style url()", m.group(2)) for m in _URL.finditer(v)]

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag == "style":
            self.in_style = False

    def handle_data(self, data):
        if self.in_style:
            self.refs += [("style", "url()", m.group(2)) for m in _URL.finditer(data)]


def external_refs(page: str) -> list[str]:
    """Every reference of ``page`` that would load another file or a remote resource, as
    "tag attribute=value": all but data: URIs, in-page anchors (#…) and plain hyperlinks
    (<a href="https://…">, followed only when clicked)."""
    p = _RefParser()
    p.feed(page)
    p.close()
    out = []
    for tag, attr, value in p.refs:
        v = value.strip()
        if v.startswith("data:") or (v.startswith("#") and attr == "href"):
            continue
        if tag == "a" and re.match(r"(https?|mailto):", v, re.I):
            continue
        out.append(f"<{tag}> {attr}={v[:80]}")
    return out
