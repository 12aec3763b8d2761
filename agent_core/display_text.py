"""Model-written text made safe to show as plain text: every character that can change how the text
around it displays becomes a visible marker, so what the user reads is what will run.

A carriage return or a backspace lets later text overwrite earlier text in a terminal and in
JupyterLab's output area (`x='ran'\\rprint('ok')` shows one line, runs two); ANSI escapes recolour,
hide or move text; bidi controls reorder it (Trojan Source); zero-width and other format characters
hide it. None of these may reach a user's eyes unmarked in anything they approve or read."""

from __future__ import annotations

import re
import unicodedata

# Categories whose characters draw nothing themselves or change how others are drawn: controls,
# format characters (bidi, zero-width, tags), line and paragraph separators, lone surrogates.
_MARKED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Characters outside those categories that still display as nothing (Hangul fillers, ...).
_INVISIBLE = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x180E})
_SUSPECT = re.compile(r"[^\x20-\x7e]")


def visible(text: str, keep: str = "\n\t") -> str:
    """`text` with its control, bidi, zero-width and other invisible characters shown as markers:
    a C0 control as its Unicode control picture (␍ for \\r, ␈ for \\b, ␛ for ESC), DEL as ␡, and
    anything else as `<U+202E>`. Characters in `keep` (newline and tab unless told) stay as they
    are; pass keep="" for text that must stay on one line."""

    def marker(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        code = ord(char)
        if code < 0x20:
            return chr(0x2400 + code)
        if code == 0x7F:
            return "\u2421"
        if code in _INVISIBLE or unicodedata.category(char) in _MARKED_CATEGORIES:
            return f"<U+{code:04X}>"
        return char

    return _SUSPECT.sub(marker, str(text))
