"""What an outside agent's own commands change, seen before and after (jupyter_ext.acp_watch), and put
back by undo (jupyter_ext.acp_undo): pure file logic on a temporary root, no server. The real agent's
flow (Codex's shell through an approved card, then undo) is tests/test_acp_codex.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_core.messages import Preimage
from agent_core.undo.preimages import ABSENT, MAX_PREIMAGE_BYTES
from agent_core.workspace import Workspace
from jupyter_ext import acp_watch
from jupyter_ext.acp_undo import HostedWrites
from jupyter_ext.errors import Conflict


def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "secrets").mkdir()
    for name, text in {"a.txt": "a\n", "sub/b.txt": "b\n", ".env": "KEY=1\n", "secrets/key": "k\n"}.items():
        (root / name).write_text(text)
    (root / "big.csv").write_text("x" * (MAX_PREIMAGE_BYTES + 1))
    (root / "link.txt").symlink_to(root / "a.txt")
    return Workspace(root, denied=(root / "secrets",))


def test_a_command_s_creations_changes_and_deletions_are_undone(tmp_path: Path) -> None:
    space = workspace(tmp_path)
    root = space.root
    before = acp_watch.take(space)
    assert set(before.files) == {"a.txt", "sub/b.txt", "big.csv"} and before.complete  # no hidden, denied, link
    (root / "a.txt").write_text("changed\n")
    (root / "sub/b.txt").unlink()
    (root / "sub/new.txt").write_text("new\n")
    (root / "big.csv").write_text("y")
    (root / ".env").write_text("KEY=2\n")
    (root / "secrets/key").write_text("k2\n")
    (root / "written.txt").write_text("through fs/write_text_file\n")  # its own card undoes it
    images, lost = acp_watch.changes(before, space, {"written.txt"})
    assert {i["path"]: (i["existed"], i.get("content"), i["after"] == ABSENT) for i in images} == {
        "a.txt": (True, "a\n", False),
        "sub/b.txt": (True, "b\n", True),
        "sub/new.txt": (False, None, False),
    }
    assert len(lost) == 1 and lost[0].startswith("big.csv: no copy from before the step was kept")

    writes = HostedWrites(tmp_path / "undo", space)
    writes.keep("t1", "card", images, lost)
    (root / "sub/new.txt").write_text("the user's edit since\n")  # left alone, and said
    restored, removed, not_undone = writes.undo("t1", "card")
    assert (sorted(restored), removed) == (["a.txt", "sub/b.txt"], [])
    assert any(n.startswith("sub/new.txt: changed since the step") for n in not_undone) and lost[0] in not_undone
    assert (root / "a.txt").read_text() == "a\n" and (root / "sub/b.txt").read_text() == "b\n"
    with pytest.raises(Conflict):
        writes.undo("t1", "card")  # once


def test_a_workspace_too_large_to_see_whole_claims_no_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    space = workspace(tmp_path)
    monkeypatch.setattr(acp_watch, "MAX_FILES", 2)
    before = acp_watch.take(space)
    assert not before.complete and len(before.files) == 2
    seen = sorted(before.files)[0]
    (space.root / seen).write_text("changed\n")
    (space.root / "zzz_new.txt").write_text("maybe the user's\n")
    images, _ = acp_watch.changes(before, space, set())
    assert [i["path"] for i in images] == [seen]  # undo could otherwise delete a file it never saw made


def test_the_window_closes_at_its_call_s_end_or_the_next_approval(tmp_path: Path) -> None:
    space = workspace(tmp_path)
    kept: dict[str, list[Preimage]] = {}
    watch = acp_watch.Watch(space, lambda card, images, lost: kept.update({card: images}))

    async def scenario() -> None:
        await watch.open("card1", "call1")
        (space.root / "one.txt").write_text("1")
        await watch.settle("another-call")  # not its call: still open
        assert kept == {}
        await watch.open("card2", "call2")  # the next approval closes the first
        (space.root / "two.txt").write_text("2")
        await watch.settle()  # the turn ended

    asyncio.run(scenario())
    assert {card: [i["path"] for i in images] for card, images in kept.items()} == {
        "card1": ["one.txt"],
        "card2": ["two.txt"],
    }
