"""What a completion asks the model: the text around the cursor, the cells above and the kernel's
names, each cut to a budget (the prompt's size is bounded whatever the request holds), as a
fill-in-the-middle prompt + suffix or as chat messages asking for the middle. Credentials inside
URLs are masked on the way out (agent_core.redaction)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent_core.json_types import JsonObject
from agent_core.privacy.outgoing import redacted_texts
from agent_core.redaction import redact_text

PREFIX_CHARS = 6000  # the end of the prefix: what is nearest the cursor matters most
SUFFIX_CHARS = 2000
CELLS_CHARS = 4000  # the cells above, nearest first until this is spent
NAMES_CHARS = 2000
CURSOR = "<CURSOR>"

CHAT_SYSTEM = (
    "You are a code completion engine inside a Jupyter notebook. Reply with ONLY the code to insert at "
    f"{CURSOR}: no explanation, no Markdown fences, never the code before or after {CURSOR} again. Complete the "
    "current statement or block and stop; reply with nothing when nothing fits. Use the kernel's real variable "
    "names and DataFrame columns listed."
)


@dataclass(frozen=True)
class CompletionContext:
    """One cursor's surroundings, already bounded."""

    path: str
    language: str
    prefix: str
    suffix: str
    cells_above: tuple[str, ...]  # oldest first, as they read in the notebook
    names: str  # comment lines from agent_core.completion.kernel_names.format_names

    @classmethod
    def bounded(
        cls, path: str, language: str, prefix: str, suffix: str, cells_above: list[str], names: str
    ) -> CompletionContext:
        kept: list[str] = []
        budget = CELLS_CHARS
        for cell in cells_above:  # nearest first
            if not cell.strip():
                continue
            if len(cell) > budget:
                if budget > 200:  # the end of a long cell: its last definitions
                    kept.append(cell[-budget:].split("\n", 1)[-1])
                break
            kept.append(cell)
            budget -= len(cell) + 2
        return cls(
            path=path,
            language=language,
            prefix=prefix[-PREFIX_CHARS:],
            suffix=suffix[:SUFFIX_CHARS],
            cells_above=tuple(reversed(kept)),
            names=names[:NAMES_CHARS],
        )

    def leaving(self, policy: str, patterns: tuple[str, ...]) -> CompletionContext:
        """The context as the server's data policy lets it leave: outside `full`, secrets and personal
        data replaced (agent_core.privacy), as in the agent's requests. Code and the kernel's names and
        types are what schema_only allows; values in them are redacted all the same."""
        if policy == "full":
            return self

        prefix, suffix, names, *cells = redacted_texts(
            [self.prefix, self.suffix, self.names, *self.cells_above], patterns
        )
        return replace(self, prefix=prefix, suffix=suffix, names=names, cells_above=tuple(cells))

    def _header(self) -> str:
        parts = [f"# {self.path}"]
        if self.names:
            parts.append("# Variables in the kernel, newest first (name: type):\n" + self.names)
        parts += list(self.cells_above)
        return redact_text("\n\n".join(parts))

    def fim(self) -> tuple[str, str]:
        """prompt and suffix for /v1/completions."""
        return self._header() + "\n\n" + redact_text(self.prefix), redact_text(self.suffix)

    def chat(self) -> list[JsonObject]:
        fence = "```" + (self.language or "python")
        parts = [f"File: {self.path}"]
        if self.names:
            parts.append("Variables in the kernel, newest first (name: type):\n" + self.names)
        if self.cells_above:
            parts.append("Cells above, in order:\n" + "\n\n".join(f"{fence}\n{cell}\n```" for cell in self.cells_above))
        parts.append(f"Complete at {CURSOR}:\n{fence}\n{self.prefix}{CURSOR}{self.suffix}\n```")
        return [
            {"role": "system", "content": CHAT_SYSTEM},
            {"role": "user", "content": redact_text("\n\n".join(parts))},
        ]

    def key(self) -> tuple[str, ...]:
        """What the cache tells completions apart by, besides prefix and suffix."""
        return (self.path, self.language, self.names, *self.cells_above)
