"""The burn API coverage table (harness.opmatrix.burn_api): the committed names file parses, every
name is present in the engine, left out with a reason, or reported missing; no reason is
stale; the source readers pick the right names out of Rust text; the report's format."""

from __future__ import annotations

import json

import pytest

from harness.opmatrix import burn_api
from harness.opmatrix.burn_api import (
    GROUPS,
    LEFT_OUT,
    MISSING,
    PRESENT,
    ApiFileError,
    config_structs,
    counts,
    coverage,
    free_functions,
    load_names,
    load_reasons,
    render,
    stale_reasons,
    tensor_functions,
)


def test_the_committed_names_file_parses_and_is_burns_at_the_pinned_commit():
    names = load_names()
    doc = json.loads(burn_api.NAMES.read_text(encoding="utf-8"))
    assert doc["commit"] == burn_api.BURN_COMMIT
    # The counts at this commit: 30 activations, 29 module functions.
    assert len(names["activation"]) == 30
    assert len(names["module"]) == 29
    assert {"permute", "matmul", "sort_with_indices", "dot", "eye", "fmod", "trunc", "pad"} <= set(
        names["tensor"]
    )
    assert "relu" not in names["tensor"]  # pub(crate) in float.rs
    assert {"Conv2dConfig", "LinearConfig", "RmsNormConfig"} <= set(names["nn_config"])
    # Byte-stable: what `extract` would write for the same content.
    assert burn_api.dumps(doc) == burn_api.NAMES.read_text(encoding="utf-8")


def test_every_name_is_present_left_out_with_a_reason_or_missing():
    names, reasons = load_names(), load_reasons()
    entries = coverage(names, reasons)
    assert [(e.group, e.name) for e in entries] == [(g, n) for g in GROUPS for n in names[g]]
    for e in entries:
        if e.status == PRESENT:
            assert burn_api.engine_has(e.group, e.name) and not e.reason
        elif e.status == LEFT_OUT:
            assert e.reason == reasons[e.group][e.name]
        else:
            assert e.status == MISSING and e.name not in reasons[e.group]
    table = counts(entries)
    assert sum(sum(c.values()) for c in table.values()) == sum(len(v) for v in names.values())
    for g, c in table.items():
        print(f"{g}: {c[PRESENT]} present, {c[LEFT_OUT]} left out, {c[MISSING]} missing")


def test_no_reason_is_stale():
    assert stale_reasons() == []


def test_a_present_name_is_detected_in_each_group():
    entries = {(e.group, e.name): e.status for e in coverage()}
    assert entries["tensor", "matmul"] == PRESENT
    assert entries["activation", "gelu"] == PRESENT
    assert entries["module", "conv2d"] == PRESENT
    assert entries["nn_config", "Conv2dConfig"] == PRESENT
    assert entries["tensor", "into_data"] == LEFT_OUT


def test_stale_reasons_name_unknown_and_present_names():
    names = {g: [] for g in GROUPS} | {"tensor": ["matmul", "into_data"]}
    reasons = {g: {} for g in GROUPS} | {
        "tensor": {"matmul": "device: x", "into_data": "data transfer: y", "nope": "async: z"}
    }
    assert stale_reasons(names, reasons) == [
        "tensor.matmul: present in the engine",
        "tensor.nope: not a burn name",
    ]


# ---- reading Rust -----------------------------------------------------------------------------

RUST = """\
impl<const D: usize, K, T> From<T> for Tensor<D, K>
where
    T: Into<TensorData>,
{
    fn from(value: T) -> Self {
        Tensor::from_data(value.into(), &Default::default())
    }
}

impl<const D: usize, K> Tensor<D, K>
where
    K: Basic,
{
    /// Docs.
    pub fn reshape<const D2: usize>(self, shape: S) -> Tensor<D2, K> {
        let inner = |x| {
            pub fn not_a_method() {}
        };
    }
    pub async fn into_data_async(self) -> TensorData {}
    pub(crate) fn relu(self) -> Self {}
    fn private(self) {}
}

impl<K> Tensor<1, K> {
    pub fn dot(self, other: Self) -> Self {}
}

impl<const D: usize, K: Numeric> core::ops::Add<Self> for Tensor<D, K> {
    pub fn add(self, rhs: Self) -> Self::Output {}
}

pub fn free(x: i32) {}
pub struct DimIter<const D: usize, K> {}
"""


def test_tensor_functions_are_the_pub_fns_of_inherent_tensor_impls():
    assert tensor_functions(RUST) == ["reshape", "into_data_async", "dot"]


def test_free_functions_and_configs():
    assert free_functions(RUST) == ["free"]
    text = "pub struct Conv2dConfig {\n}\n#[derive(Config)]\npub struct LinearConfig {}\n"
    text += "pub struct Conv2d<B> {}\nstruct HiddenConfig {}\n"
    assert config_structs(text) == ["Conv2dConfig", "LinearConfig"]


# ---- bad files ------------------------------------------------------------------------------


def test_a_reason_without_a_known_category_is_refused_naming_file_and_key(tmp_path):
    path = tmp_path / "reasons.toml"
    path.write_text('[tensor]\nto_data = "because"\n', encoding="utf-8")
    with pytest.raises(ApiFileError) as err:
        load_reasons(path)
    assert str(err.value).startswith(f'{path}: tensor.to_data: expected "category: why"')
    path.write_text('[tensors]\nto_data = "device: x"\n', encoding="utf-8")
    with pytest.raises(ApiFileError, match=r"\[tensors\]: not one of the groups"):
        load_reasons(path)


def test_an_unsorted_names_file_is_refused(tmp_path):
    path = tmp_path / "names.json"
    groups = {g: [] for g in GROUPS} | {"tensor": ["b", "a"]}
    path.write_text(json.dumps({"groups": groups}), encoding="utf-8")
    with pytest.raises(ApiFileError, match=r"groups\.tensor: names not sorted and unique"):
        load_names(path)


# ---- the report -------------------------------------------------------------------------------


def test_the_report_lists_every_name_the_counts_and_the_missing_names():
    entries = [
        burn_api.Entry("tensor", "matmul", PRESENT),
        burn_api.Entry("tensor", "to_data", LEFT_OUT, "data transfer: NumPy"),
        burn_api.Entry("tensor", "permute", MISSING),
        burn_api.Entry("activation", "elu", MISSING),
    ]
    assert render(entries).splitlines() == [
        "tensor     matmul                               present",
        "tensor     to_data                              left out  (data transfer: NumPy)",
        "tensor     permute                              MISSING",
        "activation elu                                  MISSING",
        "",
        "group       names  present  left out  MISSING",
        "tensor          3        1         1        1",
        "activation      1        0         0        1",
        "module          0        0         0        0",
        "nn_config       0        0         0        0",
        "total           4        1         1        2",
        "MISSING tensor (1): permute",
        "MISSING activation (1): elu",
    ]


def test_the_command_prints_the_table_and_exits_0(capsys):
    assert burn_api.main(["report", "--missing-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("group       names  present  left out  MISSING\n")
    assert "\ntotal " in out
    assert "stale reason" not in out
