"""Stale goldens: the folders of deleted cases, and deleting only what is provably a golden.

A folder of the golden folder that no case is named after is *stale* only if it is empty or
holds nothing but files the golden writer makes (``record.write_side``):

- ``<side>.json`` and ``<side>.obtained.json``;
- their ``.npy`` sidecars, ``<stem>.<key>.<first 12 hex of sha256>.npy``
  (``harness.sidecar.sidecar_name``, the key's unsafe characters replaced);
- the temporary files an interrupted atomic write leaves,
  ``.<target>.<host tag>-<pid>.<random>.tmp`` (``harness.sidecar.atomic_write``).

Anything else (another file, a folder, a symbolic link, a FIFO) makes the folder *foreign*: it
is reported and never deleted, whatever the configuration says the golden folder is. Symbolic
links are never followed.

Pruning names every folder and file it will delete, then renames each stale folder into a
trash folder inside the golden folder, ``.prune-<pid>`` (one atomic rename: a process killed
at any moment leaves a stale folder either where it was, untouched, or in the trash), checks
it again there (a file added meanwhile puts it back), and deletes the trash. The next run
finishes a trash folder whose process is gone (``finish_interrupted``). Only the standard
library is imported: a prune needs no NumPy.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

TRASH_PREFIX = ".prune-"
_SAFE = r"[A-Za-z0-9_.-]"  # the characters sidecar names keep (harness.sidecar._UNSAFE)


@dataclass(frozen=True)
class Foreign:
    """A folder no case is named after that is not provably goldens: never deleted."""

    path: Path
    problem: str  # why: "holds <path>, which is not a golden file"


@dataclass(frozen=True)
class Scan:
    """The folders of a golden folder that no case is named after."""

    stale: tuple[Path, ...] = ()  # nothing but golden files (or empty): --prune-stale deletes
    foreign: tuple[Foreign, ...] = ()  # anything else: reported, left alone


def golden_file_pattern(sides: Collection[str]) -> re.Pattern[str]:
    """File names the golden writer makes for these sides (JSON, sidecars, temporaries)."""
    side = "|".join(re.escape(s) for s in sorted(sides))
    stem = rf"(?:{side})(?:\.obtained)?"
    written = rf"{stem}\.json|{stem}\.{_SAFE}+\.[0-9a-f]{{12}}\.npy"
    # A temporary file keeps the first 100 characters of its target's name: a long sidecar
    # name arrives cut, so only its stem and its characters can be checked.
    temporary = rf"\.{stem}\.{_SAFE}+\.[0-9a-f]{{8}}-[0-9]+\.[a-z0-9_]{{8}}\.tmp"
    return re.compile(rf"(?:{written}|{temporary})")


def scan(golden_dir: Path, case_names: Collection[str], sides: Collection[str]) -> Scan:
    """Sort the folders of ``golden_dir`` not named after a case into stale and foreign.

    Files beside the case folders (a README, ``.gitattributes``) are not a case's: ignored.
    """
    golden_dir = Path(golden_dir)
    if not golden_dir.is_dir():
        return Scan()
    pattern = golden_file_pattern(sides)
    stale, foreign = [], []
    for entry in sorted(os.scandir(golden_dir), key=lambda e: e.name):
        path = golden_dir / entry.name
        if entry.name in case_names or _is_trash(entry):
            continue
        elif entry.is_symlink():
            foreign.append(Foreign(path, "is a symbolic link (never followed)"))
        elif entry.is_dir(follow_symlinks=False):
            problem = _problem(path, pattern)
            if problem:
                foreign.append(Foreign(path, problem))
            else:
                stale.append(path)
    return Scan(tuple(stale), tuple(foreign))


def _is_trash(entry: os.DirEntry) -> bool:
    return entry.name.startswith(TRASH_PREFIX) and entry.is_dir(follow_symlinks=False)


def _problem(folder: Path, pattern: re.Pattern[str]) -> str | None:
    try:
        return not_golden(folder, pattern)
    except OSError as exc:  # unreadable, or changed while listed: not provably goldens
        return f"cannot be listed ({exc.strerror or exc})"


def not_golden(folder: Path, pattern: re.Pattern[str]) -> str | None:
    """Why ``folder`` is not a stale golden folder (its first entry that is not a golden
    file), or None when it holds golden files only."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = folder / entry.name
        if entry.is_symlink():
            return f"holds {path}, a symbolic link"
        if entry.is_dir(follow_symlinks=False):
            return f"holds the folder {path}"
        if not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
            return f"holds {path}, which is not a regular file"
        if not pattern.fullmatch(entry.name):
            return f"holds {path}, which is not a golden file"
    return None


def files_of(folder: Path) -> list[Path]:
    """The files of a stale folder (flat: a stale folder holds no folder)."""
    return sorted(folder / name for name in os.listdir(folder))


def prune(
    golden_dir: Path,
    stale: Sequence[Path],
    sides: Collection[str],
    *,
    announce: Callable[[list[tuple[Path, list[Path]]]], None] | None = None,
) -> tuple[list[Path], list[Foreign]]:
    """Delete stale folders of ``golden_dir`` through its trash folder.

    ``announce`` receives each folder about to be deleted with its files, before anything
    is. Returns the files deleted and the folders that changed since the scan (now foreign:
    left in place).
    """
    pattern = golden_file_pattern(sides)
    planned = [(folder, files_of(folder)) for folder in stale]
    if announce is not None:
        announce(planned)
    trash = Path(golden_dir) / f"{TRASH_PREFIX}{os.getpid()}"
    trash.mkdir(exist_ok=True)
    deleted, kept = [], []
    for folder, _ in planned:
        moved = trash / folder.name
        try:
            os.rename(folder, moved)  # atomic: the folder is in its place or in the trash
        except FileNotFoundError:
            continue  # gone since the scan
        problem = not_golden(moved, pattern)  # anything written before the rename is in it
        if problem is None:
            deleted += [folder / path.name for path in files_of(moved)]
        elif os.path.lexists(folder):  # recreated meanwhile: this one waits in the trash
            kept.append(Foreign(moved, problem))
        else:
            os.rename(moved, folder)
            kept.append(Foreign(folder, problem.replace(str(moved), str(folder))))
    empty_trash(trash, pattern)
    return deleted, kept


def finish_interrupted(golden_dir: Path, sides: Collection[str]) -> list[Path]:
    """Finish the prunes that were killed: delete their trash folders (whose process is
    gone), golden files only; a folder there that is not goes back. Returns the files
    deleted, named as they were in ``golden_dir``. Run it before ``scan``."""
    golden_dir = Path(golden_dir)
    if not golden_dir.is_dir():
        return []
    pattern = golden_file_pattern(sides)
    deleted = []
    for entry in sorted(os.scandir(golden_dir), key=lambda e: e.name):
        trash = golden_dir / entry.name
        if not _is_trash(entry) or _writer_alive(trash):
            continue  # a prune running now keeps its own trash
        for moved in sorted(trash.iterdir()):
            if _is_golden_folder(moved, pattern):
                deleted += [golden_dir / moved.name / f.name for f in files_of(moved)]
        empty_trash(trash, pattern)
    return deleted


def _is_golden_folder(path: Path, pattern: re.Pattern[str]) -> bool:
    return not path.is_symlink() and path.is_dir() and not_golden(path, pattern) is None


def empty_trash(trash: Path, pattern: re.Pattern[str]) -> None:
    """Delete the trash folder's stale folders, then the trash folder itself.

    A folder in it that is not (or no longer) golden files only goes back into the golden
    folder when its name is free there, else stays: the trash is never deleted whole.
    """
    for moved in sorted(trash.iterdir()):
        if _is_golden_folder(moved, pattern):
            shutil.rmtree(moved)  # flat, regular files only: nothing to follow
        elif not os.path.lexists(trash.parent / moved.name):
            os.rename(moved, trash.parent / moved.name)
    if not any(trash.iterdir()):
        trash.rmdir()


def _writer_alive(trash: Path) -> bool:
    """Whether the process that named this trash folder still runs (not this one: a prune
    always empties its own trash before it returns)."""
    pid = trash.name[len(TRASH_PREFIX) :]
    if not (pid.isascii() and pid.isdigit()) or int(pid) in (0, os.getpid()):
        return False
    try:
        os.kill(int(pid), 0)
    except PermissionError:
        return True  # another user's process
    except (ProcessLookupError, OverflowError):
        return False
    return True
