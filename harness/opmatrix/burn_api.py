"""burn's public API at the pinned commit, name by name, against the engine's.

Four groups of names, read from burn's source (`extract`, needs a burn git directory):

- `tensor`: the functions of `Tensor`'s inherent impls (`pub fn` / `pub async fn` of
  `impl<...> Tensor<...>` blocks, not trait impls) in burn-tensor's `src/tensor/api/` files
  `TENSOR_FILES` (cast.rs has only the `Cast` trait: `Tensor::cast` is in float.rs);
- `activation`: the `pub fn`s of `burn::tensor::activation` (activation/base.rs);
- `module`: the `pub fn`s of `burn::tensor::module` (module.rs);
- `nn_config`: every `pub struct XxxConfig` under crates/burn-nn/src.

They are written, sorted, to `NAMES` (burn_api.json), committed, so that a clean clone
checks coverage without the snapshot. `report` (`make api`) then sorts every name into
present (the engine has it under the same name: a `Tensor` attribute, a function of
`harness.engine.activation` / `harness.engine.module_ops`, a config class exported by
`harness.engine` or `harness.engine.nn`), left out with the reason `REASONS`
(burn_api_reasons.toml) gives it (its category one of `CATEGORIES`), or missing. It prints
every name, the counts and the missing names, and exits 0: the table is a measurement; the
tests check that the files parse and that no reason is stale.

    python -m harness.opmatrix.burn_api extract BURN_GIT_DIR [--commit SHA]
    python -m harness.opmatrix.burn_api report [--missing-only]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import harness.engine as engine
from harness.engine import activation, module_ops, nn
from harness.record import atomic_write_text

BURN_COMMIT = "2c06be351006851d42fdb6df16b976f4a82d9747"  # v0.22.0-pre.2-47, the pinned burn
HERE = Path(__file__).parent
NAMES = HERE / "burn_api.json"
REASONS = HERE / "burn_api_reasons.toml"

_API = "crates/burn-tensor/src/tensor/api"
_TENSOR_STEMS = [
    "base",
    "float",
    "numeric",
    "orderable",
    "autodiff",
    "pad",
    "take",
    "trunc",
    "fmod",
    "cast",
]
TENSOR_FILES = tuple(f"{_API}/{stem}.rs" for stem in _TENSOR_STEMS)
ACTIVATION_FILE = "crates/burn-tensor/src/tensor/activation/base.rs"
MODULE_FILE = "crates/burn-tensor/src/tensor/module.rs"
NN_DIR = "crates/burn-nn/src"
GROUPS = ("tensor", "activation", "module", "nn_config")

# Why a name may be left out: the parts of burn's API that are not numerics.
CATEGORIES = (
    "data transfer",  # TensorData in and out, printing
    "async",
    "quantization",
    "device",
    "distributed",
    "ownership",  # Rust moves and in-place updates of a binding; engine values are immutable
    "autodiff backend",  # burn's inner/from_inner backend split, checkpointing strategies
    # Tensors of random values: a case's inputs are data both sides receive, and the engine's
    # generator is not burn's (the same seed gives other values), so no case can compare them.
    "random data",
)

PRESENT, LEFT_OUT, MISSING = "present", "left out", "MISSING"


# ---------------------------------------------------------------------------------------------
# Reading burn's source


_IMPL_TENSOR = re.compile(r"impl(<.*>)?\s+Tensor<")
_METHOD = re.compile(r"^    pub (?:const )?(?:async )?fn (\w+)")
_FUNCTION = re.compile(r"^pub (?:const )?(?:async )?fn (\w+)")
_CONFIG = re.compile(r"^\s*pub struct (\w+Config)\b", re.MULTILINE)


def tensor_functions(source: str) -> list[str]:
    """Names of the `pub fn`s in the inherent `impl ... Tensor<...>` blocks of one file."""
    names, header, inside = [], None, False
    for line in source.splitlines():
        if header is not None:  # an impl header, up to its opening brace
            header += " " + line.strip()
            if line.rstrip().endswith("{"):
                inside = bool(_IMPL_TENSOR.match(header)) and " for " not in header
                header = None
            continue
        if line.startswith("impl"):
            if line.rstrip().endswith("{"):
                inside = bool(_IMPL_TENSOR.match(line)) and " for " not in line
            else:
                header = line.strip()
            continue
        if line.startswith("}"):
            inside = False
        elif inside and (m := _METHOD.match(line)):
            names.append(m.group(1))
    return names


def free_functions(source: str) -> list[str]:
    """Names of the top-level `pub fn`s of one file."""
    return [m.group(1) for line in source.splitlines() if (m := _FUNCTION.match(line))]


def config_structs(source: str) -> list[str]:
    return _CONFIG.findall(source)


class BurnSource:
    """Files of a burn git directory (bare mirror or checkout) at one commit, via `git`."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir, self.commit = git_dir, commit

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.git_dir), *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"{self.git_dir}: git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")

    def files(self, folder: str) -> list[str]:
        listing = self._git("ls-tree", "-r", "--name-only", self.commit, folder)
        return sorted(p for p in listing.splitlines() if p.endswith(".rs"))


def extract(src: BurnSource) -> dict:
    """The names file's content: every group's names, sorted and unique, and their sources."""
    tensor = [n for f in TENSOR_FILES for n in tensor_functions(src.read(f))]
    configs = [n for f in src.files(NN_DIR) for n in config_structs(src.read(f))]
    groups = {
        "tensor": tensor,
        "activation": free_functions(src.read(ACTIVATION_FILE)),
        "module": free_functions(src.read(MODULE_FILE)),
        "nn_config": configs,
    }
    return {
        "commit": src.commit,
        "sources": {
            "tensor": list(TENSOR_FILES),
            "activation": [ACTIVATION_FILE],
            "module": [MODULE_FILE],
            "nn_config": [f"{NN_DIR}/**/*.rs"],
        },
        "groups": {g: sorted(set(names)) for g, names in groups.items()},
    }


def dumps(names: dict) -> str:
    return json.dumps(names, indent=1, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------------------
# The committed files


class ApiFileError(ValueError):
    """A names or reasons file that does not hold what it should (one line: file, key, what)."""


def load_names(path: Path = NAMES) -> dict[str, list[str]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        groups = doc["groups"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApiFileError(f"{path}: not a names file ({exc})") from None
    for g in GROUPS:
        names = groups.get(g)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ApiFileError(f"{path}: groups.{g}: expected a list of names")
        if names != sorted(set(names)):
            raise ApiFileError(f"{path}: groups.{g}: names not sorted and unique")
    if set(groups) != set(GROUPS):
        raise ApiFileError(f"{path}: groups: expected {', '.join(GROUPS)}, got {sorted(groups)}")
    return {g: groups[g] for g in GROUPS}


def load_reasons(path: Path = REASONS) -> dict[str, dict[str, str]]:
    """`{group: {name: reason}}`; each reason reads "category: why"."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ApiFileError(f"{path}: {exc}") from None
    for g, table in doc.items():
        if g not in GROUPS or not isinstance(table, dict):
            raise ApiFileError(f"{path}: [{g}]: not one of the groups {', '.join(GROUPS)}")
        for name, reason in table.items():
            category = reason.split(":", 1)[0] if isinstance(reason, str) else None
            if category not in CATEGORIES or not reason.split(":", 1)[1:]:
                raise ApiFileError(
                    f'{path}: {g}.{name}: expected "category: why", category one of '
                    f"{', '.join(CATEGORIES)}"
                )
    return {g: doc.get(g, {}) for g in GROUPS}


# ---------------------------------------------------------------------------------------------
# The engine side and the table


def engine_has(group: str, name: str) -> bool:
    """Whether the engine has burn's `name` of `group` under the same name."""
    if group == "tensor":
        return not name.startswith("_") and hasattr(engine.Tensor, name)
    if group == "activation":
        return callable(getattr(activation, name, None))
    if group == "module":
        return callable(getattr(module_ops, name, None))
    return any(isinstance(getattr(m, name, None), type) for m in (engine, nn))


@dataclass(frozen=True)
class Entry:
    group: str
    name: str
    status: str  # PRESENT, LEFT_OUT or MISSING
    reason: str = ""


def coverage(names=None, reasons=None) -> list[Entry]:
    """Every burn name with its status (a present name is present even if a reason exists:
    `stale_reasons` reports those)."""
    names = load_names() if names is None else names
    reasons = load_reasons() if reasons is None else reasons
    out = []
    for g in GROUPS:
        for n in names[g]:
            if engine_has(g, n):
                out.append(Entry(g, n, PRESENT))
            elif n in reasons[g]:
                out.append(Entry(g, n, LEFT_OUT, reasons[g][n]))
            else:
                out.append(Entry(g, n, MISSING))
    return out


def stale_reasons(names=None, reasons=None) -> list[str]:
    """Reasons for names burn does not have, or that the engine has after all."""
    names = load_names() if names is None else names
    reasons = load_reasons() if reasons is None else reasons
    return sorted(
        f"{g}.{n}: {'not a burn name' if n not in names[g] else 'present in the engine'}"
        for g in GROUPS
        for n in reasons[g]
        if n not in names[g] or engine_has(g, n)
    )


def counts(entries: list[Entry]) -> dict[str, dict[str, int]]:
    table = {g: {PRESENT: 0, LEFT_OUT: 0, MISSING: 0} for g in GROUPS}
    for e in entries:
        table[e.group][e.status] += 1
    return table


def render(entries: list[Entry], *, missing_only: bool = False) -> str:
    lines = []
    if not missing_only:
        for e in entries:
            why = f"  ({e.reason})" if e.reason else ""
            lines.append(f"{e.group:<10} {e.name:<36} {e.status}{why}")
        lines.append("")
    lines.append(f"{'group':<10} {'names':>6} {PRESENT:>8} {LEFT_OUT:>9} {MISSING:>8}")
    total = [0, 0, 0]
    for g, c in counts(entries).items():
        row = [c[PRESENT], c[LEFT_OUT], c[MISSING]]
        total = [a + b for a, b in zip(total, row, strict=True)]
        lines.append(f"{g:<10} {sum(row):>6} {row[0]:>8} {row[1]:>9} {row[2]:>8}")
    lines.append(f"{'total':<10} {sum(total):>6} {total[0]:>8} {total[1]:>9} {total[2]:>8}")
    for g in GROUPS:
        missing = [e.name for e in entries if e.group == g and e.status == MISSING]
        if missing:
            lines.append(f"{MISSING} {g} ({len(missing)}): {', '.join(missing)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.opmatrix.burn_api", description=__doc__.split("\n\n", 1)[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help=f"read burn's source, write {NAMES.name}")
    ex.add_argument("burn_git_dir", type=Path, help="a burn git directory (bare or checkout)")
    ex.add_argument("--commit", default=BURN_COMMIT)
    ex.add_argument("--out", type=Path, default=NAMES)
    rep = sub.add_parser("report", help="every name: present, left out (reason) or MISSING")
    rep.add_argument("--missing-only", action="store_true", help="only the counts and MISSING")
    args = parser.parse_args(argv)
    if args.command == "extract":
        atomic_write_text(args.out, dumps(extract(BurnSource(args.burn_git_dir, args.commit))))
        print(f"wrote {args.out}")
        return 0
    try:
        entries = coverage()
        stale = stale_reasons()
    except ApiFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(entries, missing_only=args.missing_only))
    for line in stale:
        print(f"stale reason: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
