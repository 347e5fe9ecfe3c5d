"""harness.report.html: the page parses, shows every case, row, histogram and divergence."""

import base64
import dataclasses
import html
import io
import json
import re
import shutil
import struct
import subprocess

import html5lib
import numpy as np
import PIL.Image
import pytest

from harness.case import load_case
from harness.record import CapturedError
from harness.report import histogram
from harness.report.cells import value_summary
from harness.report.html import render_cases_html
from harness.report.json_doc import cases_json, schema_errors
from harness.report.markdown import cases_markdown
from harness.results import CaseReport
from harness.runner import check_case
from harness.session import Progress

CASE = '''"""A synthetic case for the HTML report tests.

Second paragraph with ``code`` in it.

A list:
- first item,
  continued;
- second item.
"""
import numpy as np
import torch  # noqa: F401  (loads torch's OpenMP pool before the environment is recorded)

from harness.case import agree, differ, expect, scaled
from harness.tolerances import Tolerance

W = np.array([1.0, 2.0, 3.0, 4.0], np.float32)


def torch_side():
    return {{
        "grads.w": W,
        "grads.b": np.array([0.5, 0.25], np.float32),
        "steps": np.array([1, 2], np.int64),
        "flag": True,
        "x_grad": np.array([4.0, 8.0], np.float32),
    }}


def engine_side():
    ulps = np.array([0, 1, 3, 9], np.int32)  # buckets 0, 1, [2, 4) and [8, 16)
    b = np.array([0.5, 0.25], np.float32)
    return {{
        "grads.w": (W.view(np.int32) + ulps).view(np.float32),
        "grads.b": (b.view(np.int32) + np.array([0, {b_ulps}], np.int32)).view(np.float32),
        "steps": np.array([1, 2], np.int64),
        "flag": True,
        "x_grad": np.array([2.0, 4.0], np.float32),
    }}


TOLERANCES = {{"grads.*": Tolerance(atol=0.0, ulps=16, reason="synthetic")}}
CHECKS = [
    agree("grads.*"),
    agree("steps"),
    agree("flag"),
    differ("x_grad", because="harness.engine.tensor.Tensor.grad", relation=scaled(2)),
    expect("flag", "torch", True),
]
'''

IMG_PNG = 'src="data:image/png;base64,'


def run_synthetic(tmp_path, b_ulps=0):
    """Run the synthetic case with goldens and outputs under tmp_path; return its report."""
    path = tmp_path / "cases" / "synthetic.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(CASE.format(b_ulps=b_ulps))
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    return check_case(load_case(path), **dirs)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Two runs: the first writes the goldens, the second moves the engine's ``grads.b[1]`` by
    2 ULP (still within the case's tolerance, but the golden must be bit-identical)."""
    tmp_path = tmp_path_factory.mktemp("html")
    run_synthetic(tmp_path)
    return [run_synthetic(tmp_path, b_ulps=2)]


@pytest.fixture(scope="module")
def page(results):
    return render_cases_html(results)


def parse(page):
    """Strict HTML5 parse: any parse error (bad nesting, stray end tag...) raises."""
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(page)


def rendered_diffs(results):
    """Every Diff the page renders as a table: each check's, then each golden's."""
    diffs = [c.diff for r in results for c in r.checks]
    diffs += [g.diff for r in results for g in r.goldens.values()]
    return [diff for diff in diffs if diff is not None]


def histogram_rows(results):
    return [
        row
        for diff in rendered_diffs(results)
        for row in diff.rows
        if row.kind == "tensor" and row.ulp_histogram
    ]


def test_page_parses_and_has_every_case_row_and_histogram(results, page):
    tree = parse(page)
    assert tree.find(".//section[@id='case-synthetic']") is not None
    table_rows = tree.findall(".//table[@class='diff']/tbody/tr")
    expected_keys = [row.key for diff in rendered_diffs(results) for row in diff.rows]
    assert [tr[0].findtext("code") for tr in table_rows] == expected_keys
    images = [img for img in tree.iter("img") if img.get("src", "").startswith("data:image/png")]
    # grads.w, grads.b and x_grad, in their checks and in the engine's golden comparison
    assert len(images) == len(histogram_rows(results)) == 6
    assert all(img.get("alt", "").startswith("ULP distances of ") for img in images)
    assert 'src="http' not in page and "<script" not in page and "<link" not in page


def test_histogram_alt_text_counts_each_bucket(page):
    assert 'alt="ULP distances of grads.w: 0: 1; 1: 1; 2-3: 1; 8-15: 1"' in page


def test_histograms_are_deterministic_pngs_without_metadata(page):
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    for uri in uris:
        png = base64.b64decode(uri)
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == (560, 200)  # twice the displayed size
        assert b"tIME" not in png and b"Software" not in png


def test_the_same_data_renders_byte_identical_html(results, page):
    histogram.histogram_png.cache_clear()
    assert render_cases_html(results) == page


def test_differences_table_has_one_row_per_differ_check(results, page):
    tree = parse(page)
    rows = tree.findall(".//table[@class='divergences']/tbody/tr")
    differs = [c for r in results for c in r.checks if c.kind == "differ"]
    assert len(rows) == len(differs) == 1
    topic, torch_cell, engine_cell, relation, reason, status = (
        "".join(cell.itertext()) for cell in rows[0]
    )
    assert topic == "syntheticx_grad"  # the case (a link), then the pattern
    assert (torch_cell, engine_cell) == ("float32[2] [4.0, 8.0]", "float32[2] [2.0, 4.0]")
    assert relation == "left = 2 x right"
    # The docstring's first sentence, whole although it wraps over two lines (`grads` is code).
    assert reason == (
        "harness.engine.tensor.Tensor.grad"
        "This tensor's gradient in grads as a plain tensor, or None (intermediate, untracked, "
        "unreachable, another node, entry taken, other container)."
    )
    assert status == "holds"


def test_golden_section_says_what_changed_and_by_how_much(page):
    tree = parse(page)
    rows = tree.findall(".//table[@class='goldens']/tbody/tr")
    assert len(rows) == 1  # byte-identical goldens are only named
    case, side, status, _message, *changed = ("".join(td.itertext()) for td in rows[0])
    assert (case, side, status) == ("synthetic", "engine", "mismatch")
    assert changed == ["grads.b", "5.96e-08", "2"]
    assert "1 of 2 goldens are byte-identical to this run's output" in page


def test_case_section_shows_the_docstring_with_code_and_lists(page):
    assert "<p>Second paragraph with <code>code</code> in it.</p>" in page
    assert "<p>A list:</p><ul><li>first item, continued;</li><li>second item.</li></ul>" in page


def test_summary_counts_checks_and_environment(results, page):
    tree = parse(page)
    summary = {
        "".join(tr[0].itertext()).strip(): "".join(tr[1].itertext())
        for tr in tree.findall(".//table[@class='summary']/tbody/tr")
    }
    assert summary["checks"] == "5 (5 hold)"
    assert summary["documented divergence"] == "1 (1 hold)"
    # grads.w is 0, 1, 3 and 9 ULP off under a 16-ULP tolerance (atol 0): 9/16 of it at [3].
    assert (
        summary["worst agree element (of its tolerance)"] == "0.562x tol at synthetic::grads.w[3]"
    )
    assert summary["max ULP (agree checks, away from 0)"].startswith("9 at synthetic::grads.w[3]")
    env_keys = [tr[0].findtext("code") for tr in tree.findall(".//table[@class='env']/tbody/tr")]
    assert "numpy" in env_keys and "torch" in env_keys
    assert 'class="changed"' not in page  # one machine: goldens and sides agree


def test_environment_differences_are_highlighted(results):
    report = results[0]
    goldens = {
        side: dataclasses.replace(g, env={**g.env, "numpy": "0.0-old"})
        for side, g in report.goldens.items()
    }
    page = render_cases_html([dataclasses.replace(report, goldens=goldens)])
    assert '<span class="changed"><code>0.0-old</code></span>' in page


def test_without_matplotlib_histograms_are_html_bars(results, monkeypatch):
    monkeypatch.setattr(histogram, "_load_matplotlib", lambda: None)
    page = render_cases_html(results)
    parse(page)
    assert IMG_PNG not in page
    assert "matplotlib is not installed" in page
    assert page.count('class="cssbars"') == len(histogram_rows(results))


def test_json_carries_because_and_relation_and_validates(results):
    doc = cases_json(results)
    assert schema_errors(doc) == []
    differ_check = next(c for c in doc["cases"][0]["checks"] if c["kind"] == "differ")
    assert differ_check["because"] == "harness.engine.tensor.Tensor.grad"
    assert differ_check["relation"] == "left = 2 x right"


def test_markdown_has_one_row_per_tensor(results):
    md = cases_markdown(results)
    for key in ("grads.w", "grads.b", "steps", "flag", "x_grad"):
        assert md.count(f"| `{key}` |") == 1


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.array(0.1, np.float32), "float32 0.1"),
        (np.float64(0.1), "float64 0.1"),
        (np.arange(3, dtype=np.int64), "int64[3] [0, 1, 2]"),
        (np.zeros((3, 4), np.float32), "float32[3, 4] [" + "0.0, " * 5 + "0.0, ... (12 values)]"),
        (CapturedError("RuntimeError", "bad\nsecond line"), "RuntimeError: bad"),
        (None, "None"),
        (True, "True"),
    ],
)
def test_value_summary(value, text):
    assert value_summary(value) == text


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_a_bar_only_on_a_terminal():
    stream = Terminal()
    progress = Progress(4, stream=stream)
    progress.advance(CaseReport("a", "", (), {}))
    # Redrawn in place: carriage return and erase-line before the bar, no newline until done.
    assert stream.getvalue().startswith("\r\x1b[K#####............... [1/4] a ok (elapsed ")
    assert not stream.getvalue().endswith("\n")


CHROMIUM = shutil.which("chromium")

TRAJECTORY_CASE = '''"""A synthetic trajectory case for the browser test: a reordered sum (rounding)
and a modified epsilon (a formula difference, documented as systematic)."""
import numpy as np
import torch  # noqa: F401  (loads torch's OpenMP pool before the environment is recorded)

from harness.case import differ, trajectory
from harness.engine.optim.adam import ADAM_BIAS_CORRECTION

A = (((np.arange(48).reshape(12, 4) * 7) % 11) * 0.1 - 0.5).astype(np.float32)
B = ((np.arange(12) % 5) * 0.2 - 0.3).astype(np.float32)


def descent(dtype, reverse=False, eps=1e-3):
    dtype = str(dtype).removeprefix("torch.")
    dt = np.dtype(dtype).type
    a, b, w = A.astype(dtype), B.astype(dtype), np.zeros(4, dtype)
    ws = []
    for _ in range(60):
        terms = a * (a @ w - b)[:, None]
        g = np.cumsum(terms[::-1] if reverse else terms, axis=0)[-1]
        w = w - dt(0.05) * g / (np.sqrt(np.mean(g * g)) + dt(eps))
        ws.append(w)
    return np.stack(ws)


def torch_side(dtype="float32"):
    return {"sum.w": descent(dtype), "eps.w": descent(dtype)}


def engine_side(dtype="float32"):
    # The epsilon stands for a documented divergence: Adam's switch undoes it.
    eps = 1e-3 if ADAM_BIAS_CORRECTION.on else 1.001e-3
    return {"sum.w": descent(dtype, reverse=True), "eps.w": descent(dtype, eps=eps)}


CHECKS = [
    trajectory("sum.*"),
    differ("eps.*", because="harness.engine.optim.Adam", systematic=True),
]
'''

# Run in the page copy only (the report itself has no script): what a person would see, read
# back from the rendered DOM by --dump-dom.
PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const plots = [...document.querySelectorAll("img.trajectory")];
  const probe = {
    verdict: document.querySelector("h1 .badge").textContent,
    images: images.length,
    broken: images.filter((i) => !i.complete || i.naturalWidth === 0).length,
    plots: plots.length,
    plotsDrawn: plots.filter((i) => i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)
      .length,
    plotsInside: plots.filter((i) => i.getBoundingClientRect().right <= window.innerWidth)
      .length,
    viewport: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    fontSize: parseFloat(getComputedStyle(document.body).fontSize),
  };
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(probe);
  document.body.appendChild(out);
});
</script>"""
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1400,4200",  # tall enough for the trajectory plots in the screenshot
]


@pytest.fixture(scope="module")
def trajectory_results(tmp_path_factory):
    """The trajectory case run twice (the first run writes its goldens), so that it is OK."""
    tmp_path = tmp_path_factory.mktemp("trajectory")
    path = tmp_path / "cases" / "synthetic_trajectory.py"
    path.parent.mkdir()
    path.write_text(TRAJECTORY_CASE)
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    check_case(load_case(path), **dirs)
    return [check_case(load_case(path), **dirs)]


def chromium(tmp_path, *args):
    profile = f"--user-data-dir={tmp_path / 'profile'}"
    command = [CHROMIUM, *CHROMIUM_FLAGS, profile, *args]
    return subprocess.run(command, capture_output=True, timeout=120, check=False, text=True)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")
def test_page_renders_in_headless_chromium(results, trajectory_results, tmp_path):
    """In a real browser at 1400 px: the verdict, every trajectory plot drawn, no broken
    image, nothing wider than the window; and a screenshot that is not blank."""
    reports = [*results, *trajectory_results]
    # The synthetic case fails (its engine golden moved by 2 ULP); the trajectory case holds.
    assert [r.ok for r in reports] == [False, True]
    page = render_cases_html(reports)
    html_path, probed, png = tmp_path / "report.html", tmp_path / "probed.html", tmp_path / "r.png"
    html_path.write_text(page, encoding="utf-8")
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")

    dom = chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert found, f"no probe output in the rendered DOM: {dom[:300]!r}"
    probe = json.loads(html.unescape(found.group(1)))
    expected_plots = sum(c.trajectory is not None for r in reports for c in r.checks)
    assert expected_plots == 2
    assert probe["verdict"] == "FAIL"
    assert probe["plots"] == probe["plotsDrawn"] == probe["plotsInside"] == expected_plots
    assert probe["images"] == page.count("<img ") and probe["broken"] == 0
    assert probe["viewport"] == 1400
    assert probe["scrollWidth"] <= probe["viewport"]  # no sideways scrolling at 1400 px
    assert probe["fontSize"] >= 13
    summary = parse(dom).find(".//table[@class='summary']/tbody/tr")
    assert "".join(summary.itertext()) == "cases2 (1 ok, 1 fail)"

    chromium(tmp_path, f"--screenshot={png}", html_path.as_uri())
    data = png.read_bytes()
    assert struct.unpack(">II", data[16:24]) == (1400, 4200)
    colours = PIL.Image.open(png).convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # text, badges and plots, not a blank page
