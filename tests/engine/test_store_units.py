"""Key remapping, index mapping, path filters, adapters and result texts, on burn-store's own
test vectors (crates/burn-store/src: keyremapper.rs, filter.rs, adapter.rs, apply_result.rs;
burn 2c06be351006851d42fdb6df16b976f4a82d9747; test names cited per test)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine.store import (
    ChainAdapter,
    FloatCastAdapter,
    IdentityAdapter,
    KeyRemapper,
    ModuleAdapter,
    PathFilter,
    PyTorchToBurnAdapter,
    TensorSnapshot,
    map_indices_contiguous,
    transpose_2d,
)
from harness.engine.store.apply_result import ApplyError, ApplyResult, LoadError, ShapeMismatch


def snap(path: str, shape=(2, 2), container: str = "Test", values=None) -> TensorSnapshot:
    data = np.ones(shape, np.float32) if values is None else np.asarray(values)
    return TensorSnapshot.from_data(data, path.split("."), [container])


def paths(snapshots) -> list[str]:
    return [s.full_path() for s in snapshots]


# ---- KeyRemapper --------------------------------------------------------------------------


def test_key_remapper_basic_and_multiple_patterns():  # test_key_remapper_basic / _multiple
    remapper = KeyRemapper().add_pattern(r"^encoder\.", "transformer.encoder.")
    out, names = remapper.remap([snap("encoder.layer1.weight"), snap("decoder.layer1.weight")])
    assert paths(out) == ["transformer.encoder.layer1.weight", "decoder.layer1.weight"]
    assert names[0] == ("transformer.encoder.layer1.weight", "encoder.layer1.weight")
    remapper = remapper.add_pattern(r"\.gamma$", ".weight")
    assert paths(remapper.remap([snap("encoder.layer1.gamma")])[0]) == [
        "transformer.encoder.layer1.weight"
    ]


def test_key_remapper_from_patterns_and_empty():  # test_key_remapper_from_patterns / _empty
    remapper = KeyRemapper.from_patterns([(r"^pytorch\.", "burn."), (r"\.bias$", ".bias_param")])
    assert paths(remapper.remap([snap("pytorch.linear.bias")])[0]) == ["burn.linear.bias_param"]
    empty = KeyRemapper()
    assert empty.is_empty()
    out, names = empty.remap([snap("test.weight")])
    assert paths(out) == ["test.weight"] and names == [("test.weight", "test.weight")]


@pytest.mark.parametrize(
    ("pattern", "replacement", "path", "want"),
    [
        (r"^pytorch\.(.*)", "burn.$1", "pytorch.layer", "burn.layer"),  # burn's doc example
        (r"^(.*)\.running_var$", "$1.variance", "bn.running_var", "bn.variance"),
        (r"^(\w+)\.(\w+)$", "${2}_$1", "a.b", "b_a"),
        (r"^(?P<head>\w+)\.x$", "$head.y", "fc.x", "fc.y"),
        (r"^(\w+)$", "$$1", "w", "$1"),  # $$ is a literal dollar
        (r"^(\w+)$", "$1a", "w", ""),  # Rust reads the group name "1a": none, so empty
        (r"^(\w+)$", "$9", "w", ""),  # a group that does not exist is empty
        (r"l(\d)", "L$1", "l1.l2", "L1.L2"),  # replace_all
        (r"^x$", "cost $", "x", "cost $"),  # a lone dollar stays
    ],
)
def test_replacements_use_rust_syntax(pattern, replacement, path, want):
    assert KeyRemapper().add_pattern(pattern, replacement).remap_path(path) == want


def test_invalid_remapping_regex_raises():
    with pytest.raises(ValueError, match=r"invalid key remapping regex '\(': "):
        KeyRemapper().add_pattern("(", "x")


# ---- map_indices_contiguous ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (  # test_map_indices_contiguous_basic
            ["fc.0.weight", "fc.0.bias", "fc.2.weight", "fc.2.bias", "fc.4.weight", "fc.4.bias"],
            ["fc.0.weight", "fc.0.bias", "fc.1.weight", "fc.1.bias", "fc.2.weight", "fc.2.bias"],
        ),
        (["fc.0.weight", "fc.1.weight"], ["fc.0.weight", "fc.1.weight"]),  # already contiguous
        (  # test_map_indices_contiguous_multiple_prefixes
            ["encoder.0.weight", "encoder.2.weight", "decoder.1.weight", "decoder.5.weight"],
            ["encoder.0.weight", "encoder.1.weight", "decoder.0.weight", "decoder.1.weight"],
        ),
        (["encoder.weight", "decoder.bias"], ["encoder.weight", "decoder.bias"]),  # no indices
        (  # test_map_indices_contiguous_mixed_indexed_and_non_indexed
            ["fc.0.weight", "fc.2.weight", "output.weight"],
            ["fc.0.weight", "fc.1.weight", "output.weight"],
        ),
        (  # test_map_indices_contiguous_nested_sequential
            [
                "feature.layers.0.conv_block.0.weight",
                "feature.layers.0.conv_block.2.weight",
                "feature.layers.2.conv_block.0.weight",
                "feature.layers.2.conv_block.2.weight",
            ],
            [
                "feature.layers.0.conv_block.0.weight",
                "feature.layers.0.conv_block.1.weight",
                "feature.layers.1.conv_block.0.weight",
                "feature.layers.1.conv_block.1.weight",
            ],
        ),
        (  # test_map_indices_contiguous_deeply_nested
            [
                "a.0.b.0.c.0.weight",
                "a.0.b.0.c.2.weight",
                "a.0.b.2.c.0.weight",
                "a.2.b.0.c.0.weight",
            ],
            [
                "a.0.b.0.c.0.weight",
                "a.0.b.0.c.1.weight",
                "a.0.b.1.c.0.weight",
                "a.1.b.0.c.0.weight",
            ],
        ),
        (["fc.10.w", "fc.9.w"], ["fc.1.w", "fc.0.w"]),  # numeric order, not text order
        ([], []),  # test_map_indices_contiguous_empty
    ],
)
def test_map_indices_contiguous(given, want):
    out, names = map_indices_contiguous([snap(p) for p in given])
    assert paths(out) == want
    assert names == list(zip(want, given, strict=True))


# ---- PathFilter -----------------------------------------------------------------------------


def test_filter_empty_all_and_exact():  # empty_filter / match_all / exact_paths
    assert PathFilter().is_empty() and not PathFilter().matches("encoder.weight")
    assert PathFilter.all().matches("anything") and not PathFilter.all().is_empty()
    exact = PathFilter().with_full_path("encoder.weight").with_full_path("decoder.bias")
    assert exact.matches("encoder.weight") and exact.matches("decoder.bias")
    assert not exact.matches("encoder.bias") and not exact.matches("decoder.weight")


def test_filter_regex_predicates_and_or():  # regex_patterns / predicates / or_combination
    regex = PathFilter().with_regex(r"^encoder\..*").with_regex(r".*\.weight$")
    assert regex.matches("encoder.layer1.bias") and regex.matches("decoder.weight")
    assert not regex.matches("decoder.bias")
    layers = PathFilter().with_regexes([r"(^|.*\.)layers\.0\.", r"(^|.*\.)layers\.2\."])
    assert layers.matches("model.layers.0.weight") and not layers.matches("layers.1.weight")
    preds = (
        PathFilter()
        .with_predicate(lambda p, _: "norm" in p)
        .with_predicate(lambda p, _: len(p) < 10)
    )
    assert preds.matches("layer.norm.bias") and preds.matches("bias")
    assert not preds.matches("encoder.decoder.weight.long.name")
    combined = (
        PathFilter()
        .with_full_path("encoder.weight")
        .or_(PathFilter().with_full_path("decoder.bias"))
    )
    assert combined.matches("decoder.bias") and not combined.matches("model.head.weight")


def test_filter_container_predicates():  # container_predicates
    linear_weights = PathFilter().with_predicate(
        lambda path, containers: containers.split(".")[-1] == "Linear" and path.endswith(".weight")
    )
    assert linear_weights.matches("layer1.weight", "Linear")
    assert not linear_weights.matches("layer1.weight", "Conv2d")
    assert linear_weights.matches_with_container_path(["fc", "weight"], ["Struct:Net", "Linear"])


def test_filter_invalid_regex_raises():
    with pytest.raises(ValueError, match=r"invalid filter regex '\[': "):
        PathFilter().with_regex("[")


# ---- adapters -------------------------------------------------------------------------------


def test_pytorch_to_burn_linear_weight():  # test_pytorch_to_burn_linear_weight
    adapter = PyTorchToBurnAdapter()
    assert adapter.adapt(snap("fc.weight", (10, 5), "Struct:Linear")).shape == (5, 10)
    assert adapter.adapt(snap("fc.bias", (10,), "Struct:Linear")).shape == (10,)
    assert adapter.adapt(snap("fc.weight", (2, 3, 4), "Struct:Linear")).shape == (2, 3, 4)


def test_pytorch_to_burn_norm_params():  # test_pytorch_to_burn_norm_params
    adapter = PyTorchToBurnAdapter()
    assert adapter.adapt(snap("norm.weight", (10,), "Struct:BatchNorm")).full_path() == "norm.gamma"
    assert adapter.adapt(snap("norm.bias", (10,), "Struct:BatchNorm")).full_path() == "norm.beta"
    assert adapter.get_alternative_param_name("gamma", "Struct:RmsNorm") == "weight"
    assert adapter.get_alternative_param_name("gamma", "Struct:InstanceNorm") is None
    assert adapter.get_alternative_param_name("weight", "Struct:Linear") is None


def test_no_container_info_leaves_the_tensor():  # test_no_container_info
    adapter = PyTorchToBurnAdapter()
    bare = TensorSnapshot.from_data(np.ones((10, 5), np.float32), ["fc", "weight"])
    assert adapter.adapt(bare).shape == (10, 5)
    assert adapter.adapt(snap("other.weight", (10, 5), "Struct:Other")).shape == (10, 5)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_transpose_different_dtypes(dtype):  # test_transpose_different_dtypes
    values = np.array([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    out = transpose_2d(TensorSnapshot.from_data(values, ["w"])).to_data()
    assert out.dtype == dtype and out.shape == (3, 2)
    assert out.ravel().tolist() == [1, 4, 2, 5, 3, 6] and out.flags.c_contiguous


class _Rename(ModuleAdapter):
    def __init__(self, src, dst):
        self.src, self.dst, self.calls = src, dst, 0

    def adapt(self, snapshot):
        self.calls += 1
        if snapshot.path_stack[-1] != self.src:
            return snapshot
        return snapshot.with_path((*snapshot.path_stack[:-1], self.dst))

    def get_alternative_param_name(self, param_name, container_type):
        self.calls += 1
        return self.dst if param_name == self.src else None


def test_chain_adapter_pipes_adapt():  # test_chain_adapter_pipes_adapt
    first, second = _Rename("weight", "a"), _Rename("a", "b")
    chain = first.chain(second)
    assert isinstance(chain, ChainAdapter)
    assert chain.adapt(snap("fc.weight", (2, 2), "Struct:Linear")).full_path() == "fc.b"
    assert (first.calls, second.calls) == (1, 1)


def test_chain_adapter_alternative_names():  # test_chain_adapter_alternative_name_pipes_...
    assert (
        _Rename("gamma", "weight")
        .chain(_Rename("weight", "scale"))
        .get_alternative_param_name("gamma", "Struct:LayerNorm")
        == "scale"
    )
    assert (
        _Rename("gamma", "weight")
        .chain(_Rename("x", "y"))
        .get_alternative_param_name("gamma", "Struct:LayerNorm")
        == "weight"
    )
    assert (
        _Rename("x", "y")
        .chain(_Rename("gamma", "weight"))
        .get_alternative_param_name("gamma", "Struct:LayerNorm")
        == "weight"
    )
    assert IdentityAdapter().get_alternative_param_name("gamma", "Struct:LayerNorm") is None


def test_float_cast():  # test_float_cast_bf16_to_f16 / _skips_non_float / _rejects_non_float
    values = np.array([1.0, -2.0, 0.5, 4.0, -0.25, 8.0], np.float32).reshape(2, 3)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact: these need 8 bits
    bf16 = TensorSnapshot.from_data(bits, ["fc", "weight"], ["Struct:Linear"], dtype="bfloat16")
    half = FloatCastAdapter.to("float16").adapt(bf16)
    assert half.dtype == "float16" and half.to_data().dtype == np.float16
    assert half.to_data().astype(np.float32).tolist() == values.tolist()
    ints = TensorSnapshot.from_data(np.arange(3), ["idx"])
    assert FloatCastAdapter.to("float16").adapt(ints) is ints
    f16 = TensorSnapshot.from_data(values.astype(np.float16), ["w"])
    assert FloatCastAdapter.to("float16").adapt(f16) is f16
    with pytest.raises(ValueError, match="must be a float dtype, got 'int32'"):
        FloatCastAdapter.to("int32")
    chained = PyTorchToBurnAdapter().chain(FloatCastAdapter.to("float64"))
    adapted = chained.adapt(snap("fc.weight", (10, 5), "Struct:Linear"))
    assert (adapted.shape, adapted.dtype, adapted.to_data().dtype) == (
        (5, 10),
        "float64",
        "float64",
    )


# ---- ApplyResult ----------------------------------------------------------------------------


def test_apply_error_texts_and_variants():
    assert ApplyError.ShapeMismatch is ShapeMismatch and ApplyError.LoadError is LoadError
    assert str(ShapeMismatch("fc.weight", (4, 8), (8, 4))) == (
        "Shape mismatch for 'fc.weight': expected [4, 8], found [8, 4]"
    )
    assert str(ApplyError.AdapterError("p", "boom")) == "Adapter error for 'p': boom"
    assert str(LoadError("p", "bad")) == "Load error for 'p': bad"


def test_apply_result_summary():
    result = ApplyResult(
        applied=("a",), missing=(("m", "Struct:M"),), unused=tuple(f"u{i}" for i in range(12))
    )
    assert result.is_success()
    text = str(result).splitlines()
    assert text[:6] == [
        "Tensor Loading Summary",
        "  Successfully applied: 1 tensors",
        "  Skipped (filtered):   0 tensors",
        "  Missing in source:    1 tensors",
        "  Unused in target:     12 tensors",
        "  Errors:               0 errors",
    ]
    assert "    m" in text and "    u9" in text and "    u10" not in text
    assert text[-1] == "    ... and 2 more"
    assert not ApplyResult(errors=(LoadError("p", "x"),)).is_success()


def test_apply_result_fields_are_lists_as_burns_vecs():
    """burn's `ApplyResult` fields are `Vec`s (apply_result.rs): a complete load compares equal
    to `[]`, and tuples given to the constructor become lists."""
    empty = ApplyResult()
    assert empty.applied == [] and empty.missing == [] and empty.unused == []
    assert empty.skipped == [] and empty.errors == []
    given = ApplyResult(applied=("a", "b"), missing=(("m", "Struct:M"),))
    assert given.applied == ["a", "b"] and given.missing == [("m", "Struct:M")]
    assert ApplyResult().applied is not empty.applied  # no list shared between results
    with pytest.raises(AttributeError):
        given.applied = []  # frozen: the fields cannot be rebound
