"""The HTML report: one self-contained page (no network, no external files) from case data.

``report.case_data`` gives the numbers; this module only lays them out. The page has a summary
(counts, worst ULP, the environment of both sides and of the goldens with differences marked),
the table of differences by design (one row per ``differ`` check), what changed against the
committed goldens, and one section per case with its docstring, its tables and a log2-ULP
histogram per tensor.

Histograms are PNGs drawn with matplotlib (the optional ``report`` extra) and embedded as data
URIs (64-colour palette PNGs, about 3 kB each); without matplotlib they are drawn as HTML bars
and the page says so. The output is deterministic: the same run gives byte-identical HTML (no
times, no random ids, PNGs without metadata chunks), so two reports can be diffed.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness import record
from harness.diff import Diff, TensorDiff
from harness.report import (
    agree_ulps,
    format_index,
    format_value,
    header,
    render_text,
    table_cells,
    verdict,
)

SAMPLE_ELEMENTS = 6  # elements shown per value in the differences table
# Drawn at twice the displayed 280x100 px, so the small labels stay sharp on high-DPI screens.
HISTOGRAM_DPI = 200
MIN_BUCKETS = 8  # histogram x axis spans at least 0 .. 2**6 ULP, so small ones stay readable

# ---------------------------------------------------------------------------------------------
# Extra case data (called by ``report.case_data``; plain picklable values)


def check_details(run: Any, check: Any) -> dict:
    """What the differences table needs beyond the Diff: pattern, relation, because, values.

    ``because`` and ``samples`` are None except for differ checks; ``relation`` is the text of
    a differ or expect check's relation.
    """
    because = getattr(check, "because", None)
    return {
        "pattern": getattr(check, "pattern", None),
        "because": because,
        "relation": getattr(getattr(check, "relation", None), "text", None),
        "samples": _samples(run, check) if because is not None else None,
    }


def _samples(run: Any, check: Any) -> list[list[str]]:
    """``[key, left summary, right summary]`` per key the differ check matched."""
    left_side, right_side = (run.values.get(ref.side, {}) for ref in (check.left, check.right))
    left = check.left.select(left_side, check.pattern)
    right = check.right.select(right_side, check.pattern)
    keys = list(left) + [k for k in right if k not in left]
    absent = "(absent)"
    return [
        [
            k,
            value_summary(left[k]) if k in left else absent,
            value_summary(right[k]) if k in right else absent,
        ]
        for k in keys
    ]


def value_summary(value: Any, limit: int = SAMPLE_ELEMENTS) -> str:
    """``float32[2] [4.0, 8.0]``, ``RuntimeError: ...``, ``True``: a value in one line."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        dtype = str(value.dtype)
        flat = value.reshape(-1)
        shown = [format_value(x.item(), dtype) for x in flat[:limit]]
        if value.ndim == 0:
            return f"{dtype} {shown[0]}"
        more = f", ... ({flat.size} values)" if flat.size > limit else ""
        return f"{dtype}{format_index(value.shape)} [{', '.join(shown)}{more}]"
    if isinstance(value, record.CapturedError):
        return f"{value.type}: {_first_line(value.message, 160)}"
    return format_value(value)


def _first_line(text: str, width: int) -> str:
    line = next(iter((text or "").strip().splitlines()), "")
    return line if len(line) <= width else line[: width - 3] + "..."


def run_envs(run: Any) -> dict[str, dict]:
    """The ``env`` block each side of this run recorded (both sides written so far)."""
    return {side: dict(run.env) for side in run.texts}


# ---------------------------------------------------------------------------------------------
# Histograms: bucket 0 = 0 ULP, bucket k = [2**(k-1), 2**k) ULP (``TensorDiff.ulp_histogram``)


def bucket_label(k: int) -> str:
    if k == 0:
        return "0"
    low, high = 1 << (k - 1), (1 << k) - 1
    return str(low) if low == high else f"{low}-{high}"


def _tick_label(k: int) -> str:
    return "0" if k == 0 else (str(1 << (k - 1)) if k <= 11 else f"$2^{{{k - 1}}}$")


def histogram_alt(row: TensorDiff) -> str:
    """The histogram as text (alt text and tooltip): ``ULP distances of w: 0: 10; 1: 2``."""
    parts = [f"{bucket_label(k)}: {c}" for k, c in enumerate(row.ulp_histogram) if c]
    return f"ULP distances of {row.key}: " + "; ".join(parts)


@functools.cache
def _load_matplotlib() -> Any:
    """matplotlib's Figure and Agg canvas, or None (it is the optional ``report`` extra)."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    # Never touch pyplot's global state; the hash salt makes any SVG output reproducible too.
    matplotlib.rcParams["svg.hashsalt"] = "conformance-report"
    return Figure, FigureCanvasAgg


def has_matplotlib() -> bool:
    return _load_matplotlib() is not None


@functools.cache
def histogram_png(hist: tuple[int, ...], tone: str, ulps: int | None) -> bytes:
    """A small bar chart of one ULP histogram as PNG bytes (deterministic: no metadata)."""
    figure_cls, canvas_cls = _load_matplotlib()
    buckets = max(len(hist), MIN_BUCKETS)
    counts = list(hist) + [0] * (buckets - len(hist))
    fig = figure_cls(figsize=(2.8, 1.0), dpi=HISTOGRAM_DPI)
    canvas_cls(fig)
    ax = fig.add_axes((0.1, 0.3, 0.87, 0.64))
    colors = [_BIT_IDENTICAL if k == 0 else _TONES[tone] for k in range(buckets)]
    ax.bar(range(buckets), counts, width=0.8, color=colors)
    if ulps is not None:  # elements at or left of this line are within the ULP tolerance
        ax.axvline(ulps.bit_length() + 0.5, color="#555555", linestyle="--", linewidth=0.8)
    _style_axes(ax, buckets, max(counts))
    return _small_png(fig)


def _small_png(fig: Any) -> bytes:
    """PNG bytes with a 64-colour palette (a third of the RGBA size) and no metadata chunks.

    Pillow is a dependency of matplotlib, so it is there whenever the figure is.
    """
    from PIL import Image

    fig.canvas.draw()
    image = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).convert("RGB")
    out = io.BytesIO()
    image.quantize(64, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


_BIT_IDENTICAL = "#2e7d32"
_TONES = {"ok": "#1565c0", "fail": "#c62828", "documented": "#6a1b9a"}


def _style_axes(ax: Any, buckets: int, top: int) -> None:
    step = max(1, -(-buckets // 10))  # at most ten tick labels fit the small axis
    # Counted from the right, so the largest bucket (the worst elements) is always labelled.
    ticks = list(range(buckets - 1, -1, -step))[::-1]
    if ticks[0] > 1:
        ticks.insert(0, 0)
    ax.set_xticks(ticks, [_tick_label(k) for k in ticks], fontsize=6)
    ax.set_xlim(-0.6, buckets - 0.4)
    ax.set_ylim(0, max(top, 1) * 1.1)
    ax.yaxis.get_major_locator().set_params(integer=True, nbins=3)
    ax.tick_params(axis="y", labelsize=6, length=2)
    ax.tick_params(axis="x", length=2, pad=1)
    ax.set_xlabel("ULP distance (log2 buckets)", fontsize=6, labelpad=1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def histogram_html(row: TensorDiff, tone: str) -> str:
    """An <img> with the PNG, or HTML bars without matplotlib; empty when there is no data.

    ``tone`` colours the non-zero buckets: ``ok``, ``fail`` or ``documented`` (a differ check).
    """
    if row.kind != "tensor" or row.status not in ("ok", "fail"):
        return ""
    if not row.ulp_histogram:  # integer dtypes, or no pair of finite floats
        return "<small>no ULP data</small>"
    alt = _e(histogram_alt(row))
    if not has_matplotlib():
        return _css_histogram(row.ulp_histogram, tone, alt)
    png = histogram_png(tuple(row.ulp_histogram), tone, row.tol.ulps)
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<img class="hist" src="{uri}" width="280" height="100" alt="{alt}" title="{alt}">'


def _css_histogram(hist: Sequence[int], tone: str, alt: str) -> str:
    """The fallback: one fixed-width CSS bar per bucket (padded like the PNG's axis)."""
    counts = list(hist) + [0] * (MIN_BUCKETS - len(hist))
    top = max(counts) or 1
    bars = "".join(
        f'<span class="{"b0" if k == 0 else tone}" style="height:{round(60 * c / top)}px" '
        f'title="{_e(bucket_label(k))} ulp: {c}"></span>'
        for k, c in enumerate(counts)
    )
    axis = f"<small>0 .. {_e(bucket_label(len(counts) - 1))} ulp, log2 buckets</small>"
    return f'<div class="cssbars" role="img" aria-label="{alt}" title="{alt}">{bars}</div>{axis}'


# ---------------------------------------------------------------------------------------------
# Small HTML helpers


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def _badge(ok: bool, yes: str = "OK", no: str = "FAIL") -> str:
    return f'<span class="badge {"ok" if ok else "fail"}">{yes if ok else no}</span>'


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped cell HTML; no header row when ``head`` is empty."""
    th = "".join(f"<th>{h}</th>" for h in head)
    thead = f"<thead><tr>{th}</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>{thead}<tbody>{body}</tbody></table>"


def _docstring_html(doc: str) -> str:
    """Paragraphs of a docstring, with its code spans as <code>."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]
    return "".join(_paragraph_html(p) for p in paragraphs)


def _paragraph_html(paragraph: str) -> str:
    """A paragraph; its ``- item`` lines (continued by the lines below them) become a list."""
    intro: list[str] = []
    items: list[str] = []
    for line in (line.strip() for line in paragraph.splitlines()):
        if line.startswith("- "):
            items.append(line[2:])
        elif items:
            items[-1] += " " + line
        else:
            intro.append(line)
    text = f"<p>{_inline_code(' '.join(intro))}</p>" if intro else ""
    if items:
        text += "<ul>" + "".join(f"<li>{_inline_code(item)}</li>" for item in items) + "</ul>"
    return text


_CODE_SPAN = re.compile(r"``(.+?)``|`([^`]+?)`", re.S)


def _inline_code(text: str) -> str:
    """Escaped text whose ``reST`` and `Markdown` code spans (both used in docstrings) are code."""
    parts, end = [], 0
    for match in _CODE_SPAN.finditer(text):
        code = match.group(1) or match.group(2)
        parts += [_e(text[end : match.start()]), f"<code>{_e(code)}</code>"]
        end = match.end()
    return "".join([*parts, _e(text[end:])])


# ---------------------------------------------------------------------------------------------
# A Diff as an HTML table: the terminal's columns, the worst element, a histogram per tensor


def diff_html(diff: Diff, divergence: bool = False) -> str:
    """``divergence``: the table of a differ check, where differing rows are the expectation."""
    la, lb = diff.labels
    head = ["key", "status", "n", "max|diff|", "max rel", "max ulp", "worst at", la, lb]
    head += ["details", "ULP histogram"]
    rows = [_row_cells(row, diff.labels, divergence) for row in diff.rows]
    table = _table([_e(h) for h in head], rows, "diff")
    caption = f"{_e(header(diff))}: <b>{_e(verdict(diff, divergence))}</b>"
    terminal = _e(render_text(diff, divergence))
    return (
        f'<div class="difftable"><p class="verdict">{caption}</p>{table}'
        f"<details><summary>as in the terminal</summary><pre>{terminal}</pre></details></div>"
    )


def _row_cells(row: TensorDiff, labels: tuple[str, str], divergence: bool) -> list[str]:
    key, status, *numbers, a, b, details = (_e(c) for c in table_cells(row, labels))
    if divergence and not row.ok:  # as the terminal says: the documented outcome, not a failure
        status_cls, status = "documented", ("DIFF" if row.status == "fail" else status)
    else:
        status_cls = "ok" if row.ok else "fail"
    values = [f"<code>{v}</code>" if v else "" for v in (a, b)]
    status = f'<span class="{status_cls}">{status}</span>'
    return [
        f"<code>{key}</code>",
        status,
        *numbers,
        *values,
        details,
        histogram_html(row, status_cls),
    ]


# ---------------------------------------------------------------------------------------------
# The case-run page


def render_cases_html(results: Sequence[dict], *, title: str = "Conformance report") -> str:
    """The whole page for a case run (``results`` are ``report.case_data`` dicts)."""
    sections = [
        _NAV,
        _summary_section(results),
        _environment_section(results),
        _divergences_section(results),
        _golden_section(results),
        '<section id="cases"><h2>Cases</h2>' + "".join(_case_section(d) for d in results),
        "</section>",
    ]
    return _page(title, all(d["ok"] for d in results), "".join(sections))


def render_diffs_html(diffs: Sequence[Diff], *, meta: Mapping | None = None) -> str:
    """A page for plain comparisons (file mode): the meta, then one table per Diff."""
    meta_rows = [(_e(k), f"<code>{_e(_env_text(v))}</code>") for k, v in (meta or {}).items()]
    body = "<section><h2>Comparisons</h2>"
    body += _table([], meta_rows, "meta") if meta_rows else ""
    body += "".join(diff_html(d) for d in diffs) + "</section>"
    return _page("Conformance comparison", all(d.ok for d in diffs), body)


def _page(title: str, ok: bool, body: str) -> str:
    note = "" if has_matplotlib() else _NO_MATPLOTLIB
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)} {_badge(ok)}</h1>{note}{body}</body></html>\n"
    )


_NAV = (
    '<nav><a href="#summary">Summary</a> · <a href="#environment">Environment</a> · '
    '<a href="#differences">Differences by design</a> · <a href="#goldens">Goldens</a> · '
    '<a href="#cases">Cases</a></nav>'
)
_NO_MATPLOTLIB = (
    '<p class="note">matplotlib is not installed, so the ULP histograms are drawn as plain HTML '
    "bars. Install the <code>report</code> extra for the images.</p>"
)


# -- summary


def _summary_section(results: Sequence[dict]) -> str:
    checks = [c for d in results for c in d["checks"]]
    goldens = [g for d in results for g in d["goldens"]]
    worst = _worst_agree_ulp(results)
    rows = [
        ("cases", _count_text(sum(d["ok"] for d in results), len(results), "ok")),
        ("checks", _count_text(sum(c["ok"] for c in checks), len(checks), "hold")),
    ]
    for kind, noun in _KIND_NOUNS:
        of_kind = [c for c in checks if c["kind"] == kind]
        count = _count_text(sum(c["ok"] for c in of_kind), len(of_kind), "hold")
        rows.append((f"&nbsp;&nbsp;{noun}", count))
    statuses = sorted(Counter(g["status"] for g in goldens).items())
    by_status = ", ".join(f"{_e(s)} {n}" for s, n in statuses)
    count = _count_text(sum(g["ok"] for g in goldens), len(goldens), "ok")
    rows.append(("goldens", count + (f"; {by_status}" if by_status else "")))
    rows.append(("worst ULP (agree checks)", worst))
    nondet = [f"{d['case']}:{s}" for d in results for s in d.get("nondeterministic", [])]
    if nondet:
        rows.append(("non-deterministic sides", _e(", ".join(nondet))))
    summary = _table([], rows, "summary")
    return f'<section id="summary"><h2>Summary</h2>{summary}{_case_index(results)}</section>'


_KIND_NOUNS = (("agree", "agree"), ("differ", "documented divergence"), ("expect", "expect"))


def _count_text(good: int, total: int, word: str) -> str:
    bad = total - good
    text = f"{total} ({good} {word}"
    text += f', <span class="fail">{bad} fail</span>)' if bad else ")"
    return text


def _worst_agree_ulp(results: Sequence[dict]) -> str:
    ulps = [u for d in results for u in agree_ulps(d)]
    if not ulps:
        return "n/a"
    ulp, where = max(ulps, key=lambda item: item[0])  # first of the largest: stable
    return f"{ulp} <small>at <code>{_e(where)}</code></small>"


def _case_index(results: Sequence[dict]) -> str:
    rows = []
    for d in results:
        by_kind = Counter((c["kind"], c["ok"]) for c in d["checks"])
        ulps = [u for u, _ in agree_ulps(d)]
        rows.append(
            [
                f'<a href="#case-{_slug(d["case"])}">{_e(d["case"])}</a>',
                _badge(d["ok"]),
                *(_kind_count(by_kind, k) for k in ("agree", "differ", "expect")),
                _e(", ".join(f"{g['side']}: {g['status']}" for g in d["goldens"])),
                str(max(ulps)) if ulps else "",
            ]
        )
    head = ["case", "verdict", "agree", "differ", "expect", "goldens", "worst agree ulp"]
    return _table(head, rows, "index")


def _kind_count(by_kind: Counter, kind: str) -> str:
    good, bad = by_kind[(kind, True)], by_kind[(kind, False)]
    if not good and not bad:
        return ""
    return f"{good}/{good + bad}" + (f' <span class="fail">({bad} fail)</span>' if bad else "")


# -- environment


def _environment_section(results: Sequence[dict]) -> str:
    """One row per env key: each side of this run and the goldens; differences marked."""
    columns = _env_columns(results)
    keys = sorted({k for col in columns.values() for env, _ in col for k in env})
    body = "<p>No environment recorded.</p>"
    if keys:
        reference = {k: _distinct(columns["torch"], k) for k in keys}
        rows = [
            [
                f"<code>{_e(k)}</code>",
                *(_env_cell(col, k, reference[k]) for col in columns.values()),
            ]
            for k in keys
        ]
        head = ["key", "torch side (this run)", "engine side (this run)", "committed goldens"]
        body = _ENV_NOTE + _table(head, rows, "env")
    if not columns["goldens"]:
        body += "<p>No committed goldens were read (none existed before this run).</p>"
    return f'<section id="environment"><h2>Environment</h2>{body}</section>'


_ENV_NOTE = (
    '<p class="hint">Highlighted cells differ from the torch side of this run. Environments '
    "are compared with a warning, never a failure; goldens must be bit-identical only when the "
    "fingerprint (versions, BLAS, threads) matches.</p>"
)


def _env_columns(results: Sequence[dict]) -> dict[str, list[tuple[dict, str]]]:
    """``(env, where)`` pairs per column; cases without a recorded env are left out."""
    columns = {
        side: [(d.get("env", {}).get(side), d["case"]) for d in results]
        for side in ("torch", "engine")
    }
    columns["goldens"] = [
        (g.get("env"), f"{d['case']}/{g['side']}") for d in results for g in d["goldens"]
    ]
    return {name: [(env, where) for env, where in col if env] for name, col in columns.items()}


def _env_text(value: Any) -> str:
    """Compact text for an env value; BLAS pools as ``openblas 0.3 Haswell pthreads x2``."""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "; ".join(_pool_text(v) for v in value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _pool_text(pool: Mapping) -> str:
    parts = [pool.get("internal_api"), pool.get("version"), pool.get("architecture")]
    parts += [pool.get("threading_layer"), f"threads={pool.get('num_threads')}"]
    return " ".join(str(p) for p in parts if p is not None)


def _distinct(column: Sequence[tuple[dict, str]], key: str) -> dict[str, list[str]]:
    """Each distinct text of ``key`` in a column, with where it was seen (first-seen order)."""
    seen: dict[str, list[str]] = {}
    for env, where in column:
        seen.setdefault(_env_text(env.get(key, "(absent)")), []).append(where)
    return seen


def _env_cell(column: Sequence[tuple[dict, str]], key: str, reference: dict[str, list[str]]) -> str:
    """Each distinct value, marked when the torch side of this run has not got it."""
    seen = _distinct(column, key)
    parts = []
    for value, where in seen.items():
        text = f"<code>{_e(value)}</code>"
        if len(seen) > 1:  # several values in one column: say where each came from
            text += f" <small>({_e(_places(where))})</small>"
        parts.append(text if value in reference else f'<span class="changed">{text}</span>')
    return "<br>".join(parts)


def _places(where: Sequence[str], named: int = 3) -> str:
    return ", ".join(where) if len(where) <= named else f"{len(where)} files"


# -- differences by design


def _divergences_section(results: Sequence[dict]) -> str:
    rows = [
        _divergence_row(d["case"], c) for d in results for c in d["checks"] if c["kind"] == "differ"
    ]
    head = ["topic", "PyTorch (or first side)", "engine (or second side)", "relation", "reason"]
    head.append("status")
    intro = (
        "<p>Every <code>differ</code> check: a place where the engine follows burn rather than "
        "PyTorch, the relation that holds between the two, and the engine docstring that "
        "documents it. A row fails if the divergence vanishes or the relation breaks.</p>"
    )
    table = _table(head, rows, "divergences") if rows else "<p>No differ checks.</p>"
    return f'<section id="differences"><h2>Differences by design</h2>{intro}{table}</section>'


def _divergence_row(case: str, check: dict) -> list[str]:
    labels = check["diff"].labels if check["diff"] is not None else ("torch", "engine")
    samples = check.get("samples") or []
    pattern = check.get("pattern") or check["label"]
    name = _e(case).replace("_", "_<wbr>")  # break long case names between words
    topic = f'<a href="#case-{_slug(case)}">{name}</a><br><code>{_e(pattern)}</code>'
    # The columns are PyTorch / engine even when a check lists the engine first.
    torch_i = 0 if labels[0].startswith("torch") or not labels[1].startswith("torch") else 1
    sides = [_side_cell(labels[i], samples, i + 1, pattern) for i in (torch_i, 1 - torch_i)]
    # <wbr> lets a long dotted path break at its dots, not inside a name.
    because = _e(check.get("because") or "").replace(".", ".<wbr>")
    reason = f"<code>{because}</code>"
    if check["documented_by"]:
        reason += f"<br>{_inline_code(check['documented_by'])}"
    status = _badge(check["ok"], "holds", "FAIL")
    status += "" if check["ok"] else f"<br>{_e(check['message'])}"
    return [topic, *sides, _e(check.get("relation") or ""), reason, status]


def _side_cell(label: str, samples: Sequence[Sequence[str]], column: int, pattern: str) -> str:
    prefix = label.partition(":")[2]
    where = f"<small>{_e(label)}</small><br>" if prefix else ""
    if len(samples) == 1 and samples[0][0] == pattern:  # the topic already names the key
        return where + f"<code>{_e(samples[0][column])}</code>"
    lines = [f"<code>{_e(s[0])}</code> = <code>{_e(s[column])}</code>" for s in samples]
    return where + "<br>".join(lines)


# -- goldens


def _golden_section(results: Sequence[dict]) -> str:
    goldens = [(d["case"], g) for d in results for g in d["goldens"]]
    # Byte-identical goldens are the usual case: name them in one line, tabulate the rest.
    same = [f"{case}/{g['side']}" for case, g in goldens if g["status"] == "identical"]
    others = [(case, g) for case, g in goldens if g["status"] != "identical"]
    head = ["case", "side", "status", "message", "changed keys", "max|diff|", "max ulp"]
    parts = [_GOLDEN_INTRO]
    if not goldens:
        parts.append("<p>No goldens checked.</p>")
    if same:
        parts.append(
            f"<details><summary>{len(same)} of {len(goldens)} goldens are byte-identical to "
            f"this run's output</summary><p>{_e(', '.join(same))}</p></details>"
        )
    if others:
        parts.append(_table(head, [_golden_row(case, g) for case, g in others], "goldens"))
    parts += [
        f'<h3 id="golden-{_slug(case)}-{_slug(g["side"])}">{_e(case)}/{_e(g["side"])}: '
        f"{_e(g['status'])}</h3>{diff_html(g['diff'])}"
        for case, g in others
        if g["diff"] is not None
    ]
    return f'<section id="goldens"><h2>Goldens</h2>{"".join(parts)}</section>'


_GOLDEN_INTRO = (
    "<p>This run's output against the committed "
    "<code>golden/&lt;case&gt;/&lt;side&gt;.json</code>: which values changed and by how much.</p>"
)


def _golden_row(case: str, g: dict) -> list[str]:
    diff: Diff | None = g["diff"]
    changed = [r for r in diff.rows if not r.bit_identical] if diff is not None else []
    abs_values = [r.max_abs for r in changed if r.max_abs is not None]
    ulp_values = [r.max_ulp for r in changed if r.max_ulp is not None]
    status = f'<span class="{"ok" if g["ok"] else "fail"}">{_e(g["status"])}</span>'
    changed_text = ", ".join(r.key for r in changed) if diff is not None else ""
    changed_cell = f"<code>{_e(changed_text)}</code>" if changed_text else ""
    if diff is not None and not changed:
        changed_cell = "none"
    return [
        f'<a href="#case-{_slug(case)}">{_e(case)}</a>',
        _e(g["side"]),
        status,
        _e(g["message"]),
        changed_cell,
        _e(f"{max(abs_values):.2e}") if abs_values else "",
        str(max(ulp_values)) if ulp_values else "",
    ]


# -- one case


def _case_section(data: dict) -> str:
    name = data["case"]
    parts = [
        f'<section class="case" id="case-{_slug(name)}">',
        f"<h3>{_e(name)} {_badge(data['ok'])}</h3>",
        f'<div class="doc">{_docstring_html(data.get("doc") or "")}</div>',
    ]
    if data.get("error"):
        parts.append(f'<p class="fail">{_e(data["error"])}</p>')
    for side in data.get("nondeterministic", []):
        parts.append(f'<p class="fail">{_e(side)} side is non-deterministic: two runs differ</p>')
    parts += [_check_html(c) for c in data["checks"]]
    parts.append(_case_goldens(name, data["goldens"]))
    return "".join(parts) + "</section>"


def _check_html(check: dict) -> str:
    mark = _badge(check["ok"], "ok", "FAIL")
    title = f"<h4>{mark} <code>{_e(check['label'])}</code></h4>"
    message = _e(check["message"])
    if check["documented_by"]:
        because = f"<code>{_e(check.get('because') or '')}</code>"
        message += (
            f"<br><small>documented by {because}: {_inline_code(check['documented_by'])}</small>"
        )
    table = ""
    if check["diff"] is not None:
        table = diff_html(check["diff"], check["kind"] == "differ")
    return f'<div class="check">{title}<p class="msg">{message}</p>{table}</div>'


def _case_goldens(case: str, goldens: Sequence[dict]) -> str:
    items = []
    for g in goldens:
        text = f"golden {_e(g['side'])}: {_e(g['status'])}: {_e(g['message'])}"
        if g["diff"] is not None:
            text += f' (<a href="#golden-{_slug(case)}-{_slug(g["side"])}">table</a>)'
        items.append(f'<li class="{"ok" if g["ok"] else "fail"}">{text}</li>')
    return f'<ul class="goldens">{"".join(items)}</ul>' if items else ""


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1400px;padding:0 24px 48px;color:#1d1d1f;background:#fff}
h1{font-size:24px;margin:20px 0 8px}h2{font-size:20px;border-bottom:2px solid #ddd;
padding-bottom:4px;margin-top:32px}h3{font-size:17px;margin:22px 0 6px}
h4{font-size:14px;margin:14px 0 2px;font-weight:600}
code,pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;border:1px solid #e1e4e8}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
table.diff td:nth-child(n+3):nth-child(-n+6){text-align:right;white-space:nowrap}
table.diff td:last-child{padding:1px;text-align:center}
table.divergences{width:100%;table-layout:fixed}table.divergences td{overflow-wrap:anywhere}
table.divergences th:nth-child(1){width:15%}table.divergences th:nth-child(2),
table.divergences th:nth-child(3){width:24%}table.divergences th:nth-child(4){width:14%}
table.divergences th:nth-child(5){width:17%}table.divergences th:nth-child(6){width:6%}
.difftable{overflow-x:auto}
table.env{width:100%;table-layout:fixed}table.env th:first-child{width:10%}
table.diff td code{overflow-wrap:anywhere}table.diff td:nth-child(8),
table.diff td:nth-child(9){max-width:320px}
.badge{display:inline-block;white-space:nowrap;padding:0 7px;border-radius:9px;font-size:12px;
font-weight:600;vertical-align:middle}.badge.ok{background:#2e7d32;color:#fff}
.badge.fail{background:#c62828;color:#fff}
.ok{color:#2e7d32}.fail{color:#c62828}.documented{color:#6a1b9a}li.ok,li.fail{color:inherit}
li.fail::marker{color:#c62828}
.changed{background:#fff3b0;padding:1px 3px;border-radius:3px}
.note{background:#fff3b0;padding:6px 10px;border:1px solid #e6c200}
.hint,small{color:#57606a}.doc{max-width:900px}.doc p{margin:6px 0}
.case{border-top:1px solid #eee;margin-top:18px}.msg{margin:2px 0 4px}
.verdict{margin:6px 0 2px;color:#57606a}details summary{cursor:pointer;color:#57606a;font-size:12px}
img.hist{display:block;margin:0 auto}nav{margin:0 0 8px;color:#57606a}
.cssbars{display:flex;align-items:flex-end;gap:2px;height:62px;padding:0 4px;
border-bottom:1px solid #333;width:max-content}.cssbars span{width:9px;background:#1565c0}
.cssbars span.b0{background:#2e7d32}.cssbars span.fail{background:#c62828}
.cssbars span.documented{background:#6a1b9a}
"""
