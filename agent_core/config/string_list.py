"""A traitlets list of strings that the Jupyter server's command line can set as a list.

`--Cellwright.auto_approve="['run_cell', 'execute_command']"` reaches a server extension's class as a
deferred string (the class is not known when the command line is parsed). traitlets turns it into a
value with `List.from_string`, which checks each item against no object: a list of `Unicode()` raises
there, traitlets swallows that and keeps the whole text as one item ("['run_cell']"), and the
extension then failed to load over a tool name nobody wrote."""

from __future__ import annotations

from ast import literal_eval
from typing import Any

from traitlets import List, Unicode


class StringList(List):
    """`List(Unicode())` whose value from a command-line string is a list literal or one bare item;
    the items are checked as usual when the value is assigned."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(Unicode(), **kwargs)

    def from_string(self, s: str) -> Any:
        try:
            value = literal_eval(s)
        except (ValueError, SyntaxError):  # a bare word: `--Cellwright.auto_approve=run_cell`
            return [s]
        return [value] if isinstance(value, str) else value
