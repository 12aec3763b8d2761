"""Values that look like secrets or personal data, found in text and replaced before a request leaves
(data_policy `redact`, and under `schema_only` too). Every built-in pattern has bounded quantifiers
and no nested repetition, so its work is linear in the text; an operator's patterns run on pieces of
at most PIECE_CHARS characters, so even a badly written one cannot make a long text slow."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

PIECE_CHARS = 4096  # an operator pattern sees at most this much text at a time

Check = Callable[[str], bool]


def luhn_valid(number: str) -> bool:
    """The Luhn checksum of a card number's digits (separators ignored)."""
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616's mod-97 check of an IBAN (spaces ignored)."""
    compact = iban.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34 or not compact[:2].isalpha() or not compact[2:4].isdigit():
        return False
    rearranged = compact[4:] + compact[:4]
    digits = "".join(str(int(c, 36)) for c in rearranged)
    return int(digits) % 97 == 1


def _always(_: str) -> bool:
    return True


def _enough_digits(value: str) -> bool:
    return sum(c.isdigit() for c in value) >= 8  # "+1 2 3" in code is not a phone number


@dataclass(frozen=True)
class Pattern:
    name: str  # what the replacement says was there: [REDACTED:<name>]
    regex: re.Pattern[str]
    check: Check = _always  # a match is replaced only when this holds (checksums)
    group: int = 0  # the part of the match that is the value (the rest stays)
    # Lower-case strings one of which every match contains: a text with none is not searched at all.
    hints: tuple[str, ...] = ()


BUILT_IN: tuple[Pattern, ...] = (
    # Passwords in URLs: scheme://user:password@host keeps the user, drops the password.
    Pattern(
        "password",
        re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]{0,20}://[^\s/:@]{1,256}:([^\s/@]{1,256})@"),
        group=1,
        hints=("://",),
    ),
    Pattern(
        "token",
        re.compile(
            r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,200}"  # OpenAI, Anthropic
            r"|gh[pousr]_[A-Za-z0-9]{30,100}|github_pat_[A-Za-z0-9_]{30,200}"  # GitHub
            r"|xox[abposr]-[A-Za-z0-9-]{10,200}"  # Slack
            r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}"  # AWS access key id, Google API key
            r"|hf_[A-Za-z0-9]{30,100}|glpat-[A-Za-z0-9_-]{20,100}"  # Hugging Face, GitLab
            r"|eyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{8,2000})"  # JWT
        ),
        hints=("sk-", "gh", "xox", "akia", "aiza", "hf_", "glpat-", "eyj"),
    ),
    Pattern("token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,2000}=*)"), group=1, hints=("bearer",)),
    # key = "literal" (a quoted value of a secret-named setting; code reading os.environ is left alone)
    Pattern(
        "secret",
        re.compile(
            r"(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|pwd)[\w-]{0,40}[\"']?\s{0,3}[:=]\s{0,3}"
            r"[\"']([^\"'\s]{8,500})[\"']"
        ),
        group=1,
        hints=("key", "secret", "token", "passw", "pwd"),
    ),
    Pattern(
        "email",
        re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"),
        hints=("@",),
    ),
    # Card numbers: 13-19 digits, single spaces or dashes between them, with a valid Luhn checksum.
    Pattern("card", re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])"), check=luhn_valid),
    Pattern("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"), check=iban_valid),
    # Phone numbers: international (+CC, then groups each opened by a separator or a parenthesis, so a
    # run of digits splits one way only) or grouped like (555) 123-4567 / 555-123-4567; a plain
    # integer in data is not taken for one.
    Pattern(
        "phone",
        re.compile(
            r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\)|[ .-]\d{1,4}){2,5}(?![\w-])|(?<![\w+])\+\d{8,15}(?![\w-])"
        ),
        check=_enough_digits,
        hints=("+",),
    ),
    Pattern("phone", re.compile(r"(?<![\w-])(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-])")),
)


def compile_patterns(sources: Iterable[str]) -> tuple[Pattern, ...]:
    """The operator's `redaction_patterns`; raises ValueError naming the first that does not compile,
    or that nests one unbounded repetition in another (like `(a+)+`: exponential time on a near miss,
    which no cut of the text bounds)."""
    compiled = []
    for index, source in enumerate(sources):
        where = f"redaction_patterns[{index}] ({source!r})"
        try:
            regex = re.compile(source)
        except re.error as exc:
            raise ValueError(f"{where} is not a valid regular expression: {exc}") from None
        if _nested_repetition(source):
            raise ValueError(
                f"{where} repeats a group that itself repeats without bound, which can take exponential time "
                "on some texts: rewrite it without the nesting (e.g. (ab)+, not (a+b?)+)."
            )
        compiled.append(Pattern("custom", regex))
    return tuple(compiled)


def _nested_repetition(source: str) -> bool:
    """Whether an unbounded repetition sits inside another repetition (the cause of catastrophic backtracking)."""
    try:  # the parser of `re` itself: the tree it will run (sre_parse before Python 3.11)
        import re._constants as sre
        import re._parser as parser
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_constants as sre
        import sre_parse as parser

    repeats = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))

    def walk(items: Any, inside_repeat: bool) -> bool:
        for op, av in items:
            if op in repeats:
                _, high, body = av
                if (high == sre.MAXREPEAT or high > 100) and inside_repeat:
                    return True
                if walk(body, inside_repeat or high > 1):
                    return True
            elif op == sre.SUBPATTERN and walk(av[-1], inside_repeat):
                return True
            elif op == sre.BRANCH and any(walk(branch, inside_repeat) for branch in av[1]):
                return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT) and walk(av[1], inside_repeat):
                return True
        return False

    return walk(parser.parse(source).data, False)


@dataclass
class Redactor:
    """Replaces what the patterns find and counts the replacements (over its lifetime: one request)."""

    custom: tuple[Pattern, ...] = ()
    count: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    def text(self, text: str) -> str:
        if not text:
            return text
        key = (text, self.custom)
        seen = _SEEN.get(key)
        if seen is not None:  # a history is sent again with every turn: each text is searched once
            self.count += seen[1]
            for kind, n in seen[2].items():
                self.kinds[kind] = self.kinds.get(kind, 0) + n
            return seen[0]
        count, kinds = self.count, dict(self.kinds)
        result = self._search(text)
        if len(text) >= MIN_CACHED:
            found = {k: n - kinds.get(k, 0) for k, n in self.kinds.items() if n != kinds.get(k, 0)}
            _SEEN.put(key, (result, self.count - count, found))
        return result

    def _search(self, text: str) -> str:
        lower = text.lower()
        for pattern in BUILT_IN:
            if pattern.hints and not any(hint in lower for hint in pattern.hints):
                continue
            text = pattern.regex.sub(lambda m, p=pattern: self._replace(m, p), text)  # type: ignore[misc]
        for pattern in self.custom:
            text = "".join(
                pattern.regex.sub(lambda m, p=pattern: self._replace(m, p), piece)  # type: ignore[misc]
                for piece in _pieces(text)
            )
        return text

    def _replace(self, match: re.Match[str], pattern: Pattern) -> str:
        whole = match.group(0)
        value = match.group(pattern.group) if pattern.group else whole
        if value is None or not pattern.check(value):
            return whole
        self.count += 1
        self.kinds[pattern.name] = self.kinds.get(pattern.name, 0) + 1
        token = f"[REDACTED:{pattern.name}]"
        if not pattern.group:
            return token
        start, end = match.span(pattern.group)
        offset = match.start()
        return whole[: start - offset] + token + whole[end - offset :]


MIN_CACHED = 200  # shorter texts are searched again: cheaper than remembering them
CACHE_CHARS = 4_000_000  # what the cache of searched texts may hold (texts and results), in characters


class _Seen:
    """Texts already searched, with their result: least recently used out past CACHE_CHARS."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, tuple[Pattern, ...]], tuple[str, int, dict[str, int]]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()  # the %agent magic runs its agent on a worker thread

    def get(self, key: tuple[str, tuple[Pattern, ...]]) -> tuple[str, int, dict[str, int]] | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, tuple[Pattern, ...]], value: tuple[str, int, dict[str, int]]) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._chars += len(key[0]) + len(value[0])
            while self._chars > CACHE_CHARS and self._items:
                old, (result, _, _) = self._items.popitem(last=False)
                self._chars -= len(old[0]) + len(result)


_SEEN = _Seen()


def forget_searched() -> None:
    """Empty the cache of searched texts (a benchmark's cold start)."""
    _SEEN.__init__()  # type: ignore[misc]


def _pieces(text: str) -> Iterable[str]:
    """`text` in pieces of at most PIECE_CHARS, cut at line ends where it can be."""
    start = 0
    while start < len(text):
        end = min(len(text), start + PIECE_CHARS)
        if end < len(text):
            newline = text.rfind("\n", start, end)
            end = newline + 1 if newline > start else end
        yield text[start:end]
        start = end
