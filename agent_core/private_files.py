"""Cellwright's own files hold API keys and whole conversations: the folder is 0700 and every
file in it 0600, whatever the umask. SQLite gives its -wal/-shm files the database file's mode,
so creating the database file 0600 before SQLite opens it covers those too."""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask, and an existing folder keeps its own
    return path


def private_file(path: Path) -> Path:
    """Create `path` (and its folder) owner-only if missing, or make an existing one owner-only."""
    private_dir(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    os.chmod(path, FILE_MODE)
    return path
