"""The import graph of ``harness/``: no circle, and no module imports the layers above it.

Read from the source with ``ast`` (every import statement, at any depth, so an import inside
a function counts too), not from ``sys.modules``: the test does not depend on what happens to
be imported already.
"""

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def imported_modules(name: str) -> set[str]:
    """The harness modules ``name`` imports; ``from pkg import sub`` counts as ``pkg.sub``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's imports; read on first use, not at import: collection (each xdist
    worker's) does not parse ~200 files for one worker's tests."""
    return {name: imported_modules(name) for name in MODULES}


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_graph_is_read_from_every_module():
    assert {"harness.results", "harness.report.cells", "harness.record.read"} <= graph().keys()
    assert "harness.results" in graph()["harness.runner"]
    assert "harness.report.cells" in graph()["harness.report.text"]  # from-imports resolve


def test_no_import_circle():
    """Depth-first search; a back edge is a circle, reported as the path that closes it."""
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph()[name]):
            if state.get(target) == "open":
                circle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(graph()):
        if name not in state:
            visit(name, [name])


# Each rule: modules under the first prefix may import, among harness modules, only those
# under one of the allowed prefixes (a module may always import within its own package).
ONLY_FROM = {
    # The engine is the thing under test: it knows nothing of the harness around it.
    "harness.engine": (),
    # Parameter groups: the matcher knows modules only (burn-core's); the schedulers know
    # modules, not the optimizers (which use them); the optimizer groups sit below base.py.
    "harness.engine.module.param_group": ("harness.engine.module.core",),
    "harness.engine.lr_scheduler": ("harness.engine.module",),
    "harness.engine.optim.groups": (
        "harness.engine.module",
        "harness.engine.lr_scheduler.module_lr_scheduler",
        "harness.engine.optim.clipping",
    ),
    # The codec and the shared pieces below everything else.
    "harness.tolerances": (),
    # The float dtypes side files know (bfloat16 through ml_dtypes): a leaf.
    "harness.float_dtypes": (),
    "harness.ulp": ("harness.float_dtypes",),
    "harness.summary": ("harness.escape",),
    # The one bounded reader of files: below everything that reads one.
    "harness.bounded": ("harness.escape",),
    "harness.sidecar": (
        "harness.summary",
        "harness.bounded",
        "harness.escape",
        "harness.float_dtypes",
    ),
    # What decides the bits of a run: read before numpy loads, so the standard library only.
    "harness.numerics": (),
    "harness.environment": ("harness.numerics",),
    "harness.escape": (),  # the one escaping rule for text from input: a leaf
    "harness.cli": ("harness.escape",),
    "harness.record": (
        "harness.sidecar",
        "harness.escape",
        "harness.bounded",
        "harness.float_dtypes",
    ),
    "harness.diff_stats": ("harness.tolerances", "harness.ulp", "harness.float_dtypes"),
    "harness.diff_scalar": (
        "harness.tolerances",
        "harness.ulp",
        "harness.diff_stats",
        "harness.float_dtypes",
    ),
    "harness.diff": (
        "harness.tolerances",
        "harness.ulp",
        "harness.diff_stats",
        "harness.diff_scalar",
    ),
    "harness.mismatches": (
        "harness.diff",
        "harness.tolerances",
        "harness.ulp",
        "harness.float_dtypes",
    ),
    "harness.project": ("harness.tolerances", "harness.numerics", "harness.bounded"),
    # Trajectory statistics and fits: numbers over diff's rules, no results, no rendering.
    "harness.trajectory": (
        "harness.diff",
        "harness.tolerances",
        "harness.ulp",
        "harness.float_dtypes",
    ),
    # The results model is data over diffs; the renderers read it and diff data only.
    "harness.results": ("harness.diff", "harness.mismatches", "harness.trajectory"),
    "harness.report": (
        "harness.results",
        "harness.diff",
        "harness.mismatches",
        "harness.tolerances",
        "harness.record",
        "harness.escape",
        "harness.trajectory",
    ),
    # Localisation runs sides (pinned as the runner pins them) on the engine and torch, and
    # returns results data; it knows nothing of how a case is judged or rendered.
    "harness.localise": (
        "harness.case",
        "harness.pinning",
        "harness.record",
        "harness.results",
        "harness.trajectory",
        "harness.engine",
    ),
    # The author's API does not know how a case is run, judged or rendered.
    "harness.case": (
        "harness.record",
        "harness.results",
        "harness.tolerances",
        "harness.trajectory",
    ),
    "harness.golden": (
        "harness.record",
        "harness.diff",
        "harness.environment",
        "harness.results",
        "harness.mismatches",
        "harness.tolerances",
        "harness.golden_summary",
    ),
    # How a summary-only golden entry is compared: values and diffs, no results, no text.
    "harness.golden_summary": (
        "harness.record",
        "harness.sidecar",
        "harness.diff",
        "harness.float_dtypes",
        "harness.tolerances",
    ),
    # The RNN-T primitives sit with the other primitives, below the Tensor and the losses.
    "harness.engine.ops.lattice": ("harness.engine.ops", "harness.engine.errors"),
    # The RNN-T loss is a composite of Tensor ops, like every loss (no kernel of its own).
    "harness.engine.loss.rnnt": (
        "harness.engine.loss.reduction",
        "harness.engine.module",
        "harness.engine.tensor",
    ),
}
# Single modules allowed one more import than their prefix's rule: the engine's burnpack writer
# saves through the harness's one atomic writer (temp file, fsync, os.replace) rather than a
# second copy of it.
ALSO_FROM = {
    "harness.engine.optim.burnpack": ("harness.sidecar",),
    # Weight files are read through the harness's one bounded reader and echoed through its
    # one bounded repr: the engine keeps no second copy of either.
    "harness.engine.untrusted": ("harness.bounded", "harness.escape"),
}
# Modules that must not import these (the runner below the session, neither of them the CLI).
NEVER = {
    "harness.checks": ("harness.runner", "harness.session", "harness.golden", "harness.cli"),
    "harness.runner": ("harness.session", "harness.cli", "harness.opmatrix"),
    "harness.session": ("harness.cli", "harness.opmatrix", "harness.report"),
    # The assertion API runs nothing: it compares values and reads / writes goldens.
    "harness.testing": ("harness.runner", "harness.session", "harness.case", "harness.cli"),
}
# The front ends: nothing inside the harness imports them.
TOP = ("harness.command", "harness.pytest_plugin")


@pytest.mark.parametrize("prefix", sorted(ONLY_FROM))
def test_no_upward_import(prefix):
    allowed = (prefix, *ONLY_FROM[prefix])
    wrong = {
        f"{name} imports {target}"
        for name in graph()
        if within(name, prefix)
        for target in graph()[name]
        if not any(within(target, ok) for ok in (*allowed, *ALSO_FROM.get(name, ())))
    }
    assert not wrong, sorted(wrong)


@pytest.mark.parametrize("prefix", sorted(NEVER))
def test_no_import_of_what_sits_above(prefix):
    wrong = {
        f"{name} imports {target}"
        for name in graph()
        if within(name, prefix)
        for target in graph()[name]
        if any(within(target, bad) for bad in NEVER[prefix])
    }
    assert not wrong, sorted(wrong)


def test_the_rules_name_existing_modules():
    """A renamed module must not leave a rule that no longer checks anything."""
    named = {*ONLY_FROM, *NEVER, *ALSO_FROM}
    rules = [*ONLY_FROM.values(), *NEVER.values(), *ALSO_FROM.values()]
    named |= {t for targets in rules for t in targets}
    assert {p for p in named if not any(within(m, p) for m in MODULES)} == set()


def test_nothing_imports_the_front_ends():
    wrong = {f"{name} imports {t}" for name in graph() for t in graph()[name] if t in TOP}
    assert not wrong, sorted(wrong)


def test_only_the_plugin_imports_pytest():
    """design.md: the harness never imports pytest; its pytest plugin is the one exception."""
    importers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in getattr(node, "names", [])] if isinstance(node, ast.Import) else []
            )
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if "pytest" in names or (module or "").split(".")[0] == "pytest":
                importers.add(name)
    assert importers == {"harness.pytest_plugin"}
