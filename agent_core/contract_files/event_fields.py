"""agent_core/contract/event_fields.py, written from the event models: each event's fields as a
TypedDict, the event itself as a TypedDict (its fields, its `type` and the stamps), and `make_event`
overloaded per event type to return it, so mypy checks every emitter's fields against the contract
and the code that passes events on sees their types (the models still check the values at run time)."""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import TypeAliasType

from agent_core.contract.events import MODEL_OF_TYPE, EventBase

LINE_LENGTH = 120  # pyproject's [tool.ruff]: the file is written as ruff format would leave it
STAMPS = ("seq", "thread_id", "run_id", "agent")  # of a stream event: set by the log and the driver, not its emitter

HEADER = '''"""Each event's fields as a TypedDict (`...Fields`, what its emitter passes), each event as a
TypedDict (`...EventDict`: the fields, `type` and the stamps, the plain dict the log stores), the
union `EventDict` of a thread's events, and `make_event` overloaded per event type: mypy checks every
emitter's fields against the contract and every event handed on. Written from
agent_core/contract/events.py by scripts/generate_contract.py (do not edit; tests/test_contract.py
fails when it is stale)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias, overload

from typing_extensions import NotRequired, TypedDict, Unpack

from agent_core.contract import events
{aliases}


class EventStamps(TypedDict, total=False):
    """What the log (`seq`, `thread_id`) and the run's event sink (`run_id`, `agent`) stamp on an
    event: absent from what an emitter makes, present on what the log stores."""

    seq: int
    thread_id: str
    run_id: str
    agent: str


'''


def _has_model(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_has_model(arg) for arg in get_args(annotation))


def _render(annotation: object, aliases: set[tuple[str, str]]) -> str:
    """`annotation` as the source of a type an emitter may pass: a model or a JSON object as a
    Mapping, a list as a Sequence (what the model validates from)."""
    if annotation is type(None):
        return "None"
    if isinstance(annotation, TypeAliasType):
        if _has_model(annotation.__value__):  # nbformat's outputs: passed as dicts, validated by the model
            return _render(annotation.__value__, aliases)
        aliases.add((str(annotation.__module__), annotation.__name__))
        return annotation.__name__
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "Mapping[str, object]"
    if annotation in (str, int, float, bool):
        return annotation.__name__
    if annotation is Any:  # the model takes anything: so does the emitter
        return "object"
    origin = get_origin(annotation)
    if origin is Annotated:  # a discriminated union: the type is the first argument
        return _render(get_args(annotation)[0], aliases)
    if origin in (Union, types.UnionType):
        return " | ".join(dict.fromkeys(_render(arg, aliases) for arg in get_args(annotation)))
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in get_args(annotation))}]"
    if origin is list:
        return f"Sequence[{_render(get_args(annotation)[0], aliases)}]"
    if origin is dict:
        return "Mapping[str, object]"
    raise TypeError(f"no rendering for {annotation!r}: teach contract_files/event_fields.py")


def _fields_class(name: str, fields: list[tuple[str, str]]) -> str:
    if any(not key.isidentifier() or key in ("from", "class") for key, _ in fields):  # agent_switch's "from"
        body = ", ".join(f'"{key}": {rendered}' for key, rendered in fields)
        return f'{name} = TypedDict(\n    "{name}", {{{body}}}\n)\n'
    lines = "".join(f"    {key}: {rendered}\n" for key, rendered in fields) or "    pass\n"
    return f"class {name}(TypedDict):\n{lines}"


def event_fields_module() -> str:
    """The module's text."""
    aliases: set[tuple[str, str]] = set()
    classes, overloads = [], []
    thread_events = []
    for type_, model in MODEL_OF_TYPE.items():
        stem = "".join(part.title() for part in type_.split("_"))
        name, event = f"{stem}Fields", f"{stem}EventDict"
        fields = []
        for field_name, info in model.model_fields.items():
            if field_name == "type" or (field_name in STAMPS and issubclass(model, EventBase)):
                continue
            rendered = _render(info.annotation, aliases)
            fields.append((info.alias or field_name, rendered if info.is_required() else f"NotRequired[{rendered}]"))
        classes.append(_fields_class(name, fields))
        if issubclass(model, EventBase):
            thread_events.append(event)
            classes.append(f'class {event}(EventStamps, {name}):\n    type: Literal["{type_}"]\n')
        else:  # caught_up: made by the stream, stamped by no one
            classes.append(f'class {event}({name}):\n    type: Literal["{type_}"]\n')
        params = f'type_: Literal["{type_}"], **fields: Unpack[{name}]'
        signature = f"def make_event({params}) -> {event}: ..."
        if len(signature) > LINE_LENGTH:  # as ruff format wraps it
            signature = f"def make_event(\n    {params}\n) -> {event}: ..."
        overloads.append(f"@overload\n{signature}")
    members = "\n    | ".join(thread_events)
    union = (
        "# An event of a thread's log, as a dict: narrow it on `type`. Code that only passes events on\n"
        "# takes any of them; what the log reads back is a JsonObject (the stored JSON, not checked again).\n"
        f"EventDict: TypeAlias = (\n    {members}\n)\n"
    )
    by_module: dict[str, list[str]] = {}
    for module, alias in sorted(aliases):
        by_module.setdefault(module, []).append(alias)
    imports = "".join(f"from {module} import {', '.join(names)}\n" for module, names in sorted(by_module.items()))
    implementation = (
        "def make_event(type_: events.EventType, **fields: object) -> Mapping[str, object]:\n"
        '    """An event body as the agent emits it, checked against the model of `type_` (events.make_event)."""\n'
        "    return events.make_event(type_, **fields)\n"
    )
    return (
        HEADER.format(aliases=imports.rstrip("\n"))
        + "\n\n".join(classes)
        + "\n\n"
        + union
        + "\n\n"
        + "\n\n\n".join(overloads)
        + "\n\n\n"
        + implementation
    )
