"""Optimizer and scheduler state records (issue 17).

The first five tests transcribe the `#[cfg(test)]` module of
`crates/burn-optim/src/optim/state.rs` at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747
(test name in each docstring), with the test's own structs written as `Layout`s. The burnpack
container is checked against a file burn wrote (`examples/mnist-inference-web/model.bpk` at
the same commit: its CBOR metadata is kept in `data/mnist_model_bpk_metadata.cbor`, the whole
file is read from the burn mirror when it is present). Resuming is checked on the A1 model:
stopped, saved, loaded into a fresh optimizer and continued, the run is bit-identical to the
uninterrupted one, and PyTorch's `state_dict()` / `load_state_dict` resume agrees with it.
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from test_optim import engine_grads

from harness.a1 import PARAM_NAMES, a1_engine, a1_torch, engine_params
from harness.engine import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    CrossEntropyLossConfig,
    Device,
    GradientsParams,
    MomentumConfig,
    MuonConfig,
    ParamGroup,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from harness.engine import lr_scheduler as lrs
from harness.engine.optim import burnpack
from harness.engine.optim.records import (
    RecordError,
    load_optimizer,
    load_optimizer_bytes,
    load_scheduler,
    optimizer_bytes,
    optimizer_pack,
    save_optimizer,
    save_scheduler,
)
from harness.engine.optim.state import (
    Layout,
    StateSink,
    StateSource,
    join_index,
    join_path,
    nested,
    opt_nested,
    opt_scalar,
    opt_tensor,
    scalar,
    state_flatten,
    state_unflatten,
    tensor,
    tensors,
)

AD = Device.flex().autodiff()
DATA = Path(__file__).parent / "data"
MIRROR = Path("/work/.mirror/tracel-ai+burn/repo")
BURN_COMMIT = "2c06be351006851d42fdb6df16b976f4a82d9747"

# ---- state.rs's tests ---------------------------------------------------------------------

INNER = Layout("Inner", (tensor("weight"), scalar("step", "i64")))
FULL = Layout(
    "Full",
    (
        tensor("t"),
        opt_tensor("opt_tensor"),
        tensors("history"),
        scalar("count", "usize"),
        opt_scalar("opt_scalar", "f64"),
        nested("nested", INNER),
        opt_nested("opt_nested", INNER),
    ),
)
ALL_OPTIONAL = Layout("AllOptional", (opt_tensor("x"), opt_scalar("y", "f64")))
OUTER_OPT = Layout("OuterOpt", (opt_nested("inner", ALL_OPTIONAL),))


def f32(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def round_trip(layout: Layout, state: dict) -> dict | None:
    """state.rs's `round_trip`: flatten under "p", then rebuild from the produced leaves."""
    sink = StateSink()
    state_flatten(layout, state, "p", sink)
    source = StateSource(dict(sink.scalars))
    for name, data in sink.tensors:
        source.insert_tensor(name, data)
    return state_unflatten(layout, "p", source)


def test_all_field_kinds_round_trip():
    """state.rs `all_field_kinds_round_trip`."""
    state = {
        "t": f32([1.0, 2.0]),
        "opt_tensor": f32([3.0]),
        "history": [f32([4.0]), f32([5.0, 6.0])],
        "count": 7,
        "opt_scalar": 8.5,
        "nested": {"weight": f32([9.0]), "step": 10},
        "opt_nested": {"weight": f32([11.0]), "step": 12},
    }
    out = round_trip(FULL, state)
    assert out["t"].tolist() == [1.0, 2.0]
    assert out["opt_tensor"].tolist() == [3.0]
    assert len(out["history"]) == 2
    assert out["history"][0].tolist() == [4.0]
    assert out["history"][1].tolist() == [5.0, 6.0]
    assert out["count"] == 7
    assert out["opt_scalar"] == 8.5
    assert out["nested"]["weight"].tolist() == [9.0]
    assert out["nested"]["step"] == 10
    assert out["opt_nested"]["weight"].tolist() == [11.0]
    assert out["opt_nested"]["step"] == 12


def test_absent_optionals_round_trip_to_none():
    """state.rs `absent_optionals_round_trip_to_none`."""
    state = {
        "t": f32([1.0]),
        "opt_tensor": None,
        "history": [],
        "count": 0,
        "opt_scalar": None,
        "nested": {"weight": f32([2.0]), "step": 0},
        "opt_nested": None,
    }
    out = round_trip(FULL, state)
    assert out["opt_tensor"] is None
    assert out["history"] == []
    assert out["opt_scalar"] is None
    assert out["opt_nested"] is None


def test_optional_all_optional_nested_stays_none():
    """state.rs `optional_all_optional_nested_stays_none` (regression: not resurrected)."""
    assert round_trip(OUTER_OPT, {"inner": None})["inner"] is None


def test_optional_all_optional_nested_present_with_content():
    """state.rs `optional_all_optional_nested_present_with_content`."""
    out = round_trip(OUTER_OPT, {"inner": {"x": f32([1.0, 2.0]), "y": None}})
    inner = out["inner"]
    assert inner is not None, "present because a leaf was recorded"
    assert inner["x"].tolist() == [1.0, 2.0]
    assert inner["y"] is None


def test_missing_required_tensor_yields_none():
    """state.rs `missing_required_tensor_yields_none`."""
    assert state_unflatten(INNER, "p", StateSource({})) is None


# ---- the naming, against the derive -------------------------------------------------------


def test_leaf_names_follow_the_derive():
    """`join_path`, `join_index` and the derive's `{field}.len` scalar of a Vec field."""
    assert join_path("", "leaf") == "leaf" and join_path("a.b", "c") == "a.b.c"
    assert join_index("history", 3) == "history.3"
    sink = StateSink()
    state = {
        "t": f32([1.0]),
        "opt_tensor": None,
        "history": [f32([4.0]), f32([5.0])],
        "count": 7,
        "opt_scalar": None,
        "nested": {"weight": f32([9.0]), "step": -2},
        "opt_nested": None,
    }
    state_flatten(FULL, state, "42", sink)
    assert [n for n, _ in sink.tensors] == [
        "42.t",
        "42.history.0",
        "42.history.1",
        "42.nested.weight",
    ]
    assert dict(sink.scalars) == {
        "42.history.len": burnpack.Scalar("UInt", 2),
        "42.count": burnpack.Scalar("UInt", 7),
        "42.nested.step": burnpack.Scalar("Int", -2),
    }


def test_wrong_scalar_variant_is_absent_as_in_burn():
    """state.rs: "a scalar leaf that is present but holds an incompatible Scalar variant is
    treated the same as absent"; burn_pack's `TryFrom` refuses a Float for an integer."""
    source = StateSource({"p.step": burnpack.Scalar("Float", 1.5)})
    source.insert_tensor("p.weight", f32([1.0]))
    assert state_unflatten(INNER, "p", source) is None


# ---- the burnpack container ---------------------------------------------------------------


def test_header_and_alignment_follow_burn_pack():
    """burn-pack `tests/header.rs` `header_constants` (10 bytes, "NRUB" on disk) and
    `reader.rs` `tensor_offsets_are_256_aligned` (odd sizes force padding)."""
    pack = burnpack.Pack(
        [
            burnpack.PackTensor(n, np.zeros(k, np.float32))
            for n, k in (("a", 3), ("b", 1), ("c", 2))
        ],
        {},
        {},
    )
    data = burnpack.pack_bytes(pack)
    assert data[:4] == b"NRUB" and struct.unpack_from("<H", data, 4)[0] == 1
    size = struct.unpack_from("<I", data, 6)[0]
    meta, _ = burnpack._decode(memoryview(data)[10 : 10 + size])
    assert [d["data_offsets"][0] % 256 for d in meta["tensors"].values()] == [0, 0, 0]
    assert (10 + size + 255) // 256 * 256 + meta["tensors"]["c"]["data_offsets"][1] == len(data)


def test_metadata_codec_reproduces_burns_own_bytes():
    """The CBOR metadata of a burnpack file burn wrote decodes and re-encodes to the same
    bytes (tensor table with dtype, shape, offsets and param ids, as ciborium writes it)."""
    blob = (DATA / "mnist_model_bpk_metadata.cbor").read_bytes()
    meta, end = burnpack._decode(memoryview(blob))
    assert end == len(blob) and len(meta["tensors"]) == 18
    assert meta["tensors"]["conv1.conv.weight"]["dtype"] == "F32"
    assert meta["tensors"]["conv1.conv.weight"]["shape"] == [64, 1, 3, 3]
    assert burnpack._encode(meta) == blob


MODEL_BPK = "examples/mnist-inference-web/model.bpk"


@pytest.mark.skipif(not MIRROR.exists(), reason="the burn mirror is not on this machine")
def test_a_file_burn_wrote_reads_and_rewrites_byte_for_byte():
    data = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{BURN_COMMIT}:{MODEL_BPK}"],
        capture_output=True,
        check=True,
    ).stdout
    size = struct.unpack_from("<I", data, 6)[0]
    assert data[10 : 10 + size] == (DATA / "mnist_model_bpk_metadata.cbor").read_bytes()
    pack = burnpack.unpack_bytes(data, "model.bpk")
    assert burnpack.pack_bytes(pack) == data
    assert hashlib.sha256(burnpack.pack_bytes(pack)).digest() == hashlib.sha256(data).digest()


def test_scalars_and_floats_in_the_metadata():
    """Scalars are serde's externally tagged enum (`{"UInt": 3}`); floats take the shortest
    lossless CBOR width, and every width reads back."""
    scalars = {
        "a": burnpack.Scalar("UInt", 3),
        "b": burnpack.Scalar("Int", -1),
        "c": burnpack.Scalar("Float", 0.5),
        "d": burnpack.Scalar("Float", 0.1),
        "e": burnpack.Scalar("Bool", True),
    }
    data = burnpack.pack_bytes(burnpack.Pack([], scalars, {"k": "v"}))
    assert b"\xa1dUInt\x03" in data and b"\xa1cInt\x20" in data
    assert b"\xf9\x38\x00" in data  # 0.5 as a half
    assert b"\xfb" + struct.pack(">d", 0.1) in data
    assert burnpack.unpack_bytes(data).scalars == scalars


# ---- optimizer records: exact round trips -------------------------------------------------


def train(optim, model, x, y, lr: float, steps: int):
    for _ in range(steps):
        model = optim.step(lr, model, engine_grads(model, x, y))
    return model


CONFIGS = {
    "sgd_plain": (SgdConfig(), 0.1),
    "sgd_momentum": (SgdConfig(momentum=MomentumConfig(momentum=0.9, dampening=0.1)), 0.1),
    "adam_amsgrad": (AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.01)), 0.01),
    "adamw": (AdamWConfig(weight_decay=0.1), 0.01),
    "adan": (AdanConfig(), 0.01),
    "adagrad": (AdaGradConfig(lr_decay=0.1), 0.05),
    "rmsprop": (RmsPropConfig(), 0.001),
    "rmsprop_centered": (RmsPropConfig(centered=True, momentum=0.0), 0.001),
}


def same_state(a, b) -> None:
    assert type(a) is type(b)
    for name, va in vars(a).items():
        if name in ("scratch", "masks"):
            continue
        vb = getattr(b, name)
        if isinstance(va, np.ndarray):
            assert va.dtype == vb.dtype and va.shape == vb.shape
            assert va.tobytes() == vb.tobytes(), name
        else:
            assert va == vb and type(va) is type(vb), name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_optimizer_state_round_trips_exactly(name, dtype, tmp_path):
    config, lr = CONFIGS[name]
    model, x, y = a1_engine(AD, dtype=dtype)
    optim = config.init()
    model = train(optim, model, x, y, lr, 3)
    path = save_optimizer(optim, tmp_path / "optim", module=model)
    assert path.endswith(".bpk")
    loaded = load_optimizer(config.init(), path, module=model)
    assert loaded.records.keys() == optim.records.keys()
    for pid in optim.records:
        same_state(optim.records[pid], loaded.records[pid])
    again = load_optimizer_bytes(config.init(), optimizer_bytes(loaded, model), model)
    assert optimizer_bytes(again, model) == optimizer_bytes(optim, model)


def test_muon_state_round_trips_exactly(tmp_path):
    model, x, y = a1_engine(AD)
    optim = MuonConfig().init()
    grads = engine_grads(model, x, y)
    grads.remove(model.fc1.bias.id)  # Muon takes 2-D params only
    grads.remove(model.fc2.bias.id)
    model = optim.step(0.01, model, grads)
    loaded = load_optimizer(MuonConfig().init(), save_optimizer(optim, tmp_path / "m.bpk"))
    for pid in optim.records:
        same_state(optim.records[pid], loaded.records[pid])


def test_record_keys_are_burns():
    """Adam's record: `{id}.momentum.{time,moment_1,moment_2}`, `{id}.__rank`, the path in
    the metadata; tensors carry the param id (module_optimizer.rs `to_record`)."""
    model, x, y = a1_engine(AD)
    optim = AdamConfig().init()
    model = train(optim, model, x, y, 0.01, 2)
    pack = optimizer_pack(optim, model)
    pid = model.fc1.weight.id
    prefix = str(int(pid))
    names = {t.name for t in pack.tensors if t.param_id == int(pid)}
    assert names == {f"{prefix}.momentum.moment_1", f"{prefix}.momentum.moment_2"}
    assert pack.scalars[f"{prefix}.momentum.time"] == burnpack.Scalar("UInt", 2)
    assert pack.scalars[f"{prefix}.__rank"] == burnpack.Scalar("UInt", 2)
    assert pack.metadata[prefix] == "fc1.weight"
    assert pack.metadata["optimizer"] == "Adam"


# ---- resuming -----------------------------------------------------------------------------

RESUME = {
    "adam": (
        AdamConfig(weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.Adam(p, lr=lr, eps=1e-5, weight_decay=0.01),
        0.01,
    ),
    "sgd_momentum": (
        SgdConfig(momentum=MomentumConfig(momentum=0.9, dampening=0.1)),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, dampening=0.1),
        0.1,
    ),
}
STEPS, HALF = 10, 5
ATOL = 2e-6  # test_optim.py's tolerance for aligned 10-step trajectories


def engine_run(config, lr, tmp_path=None):
    model, x, y = a1_engine(AD)
    optim = config.init()
    if tmp_path is None:
        model = train(optim, model, x, y, lr, STEPS)
    else:
        model = train(optim, model, x, y, lr, HALF)
        path = save_optimizer(optim, tmp_path / "optim.bpk", module=model)
        del optim
        optim = load_optimizer(config.init(), path, module=model)
        model = train(optim, model, x, y, lr, STEPS - HALF)
    return {k: v.numpy() for k, v in engine_params(model).items()}


def torch_run(make_optim, lr, tmp_path=None):
    model, x, y = a1_torch()
    optim = make_optim(model.parameters(), lr)
    for step in range(STEPS):
        if tmp_path is not None and step == HALF:
            torch.save(optim.state_dict(), tmp_path / "optim.pt")
            optim = make_optim(model.parameters(), lr)
            optim.load_state_dict(torch.load(tmp_path / "optim.pt"))
        optim.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optim.step()
    return {n: model.get_parameter(n).detach().numpy().copy() for n in PARAM_NAMES}


@pytest.mark.parametrize("name", sorted(RESUME))
def test_resumed_run_is_bit_identical_to_the_uninterrupted_one(name, tmp_path):
    config, _, lr = RESUME[name]
    straight = engine_run(config, lr)
    resumed = engine_run(config, lr, tmp_path)
    for key in PARAM_NAMES:
        assert resumed[key].tobytes() == straight[key].tobytes(), key


@pytest.mark.parametrize("name", sorted(RESUME))
def test_resume_corresponds_to_torch_state_dict_resume(name, tmp_path):
    config, make_torch, lr = RESUME[name]
    torch_straight = torch_run(make_torch, lr)
    torch_resumed = torch_run(make_torch, lr, tmp_path)
    resumed = engine_run(config, lr, tmp_path)
    for key in PARAM_NAMES:
        np.testing.assert_array_equal(torch_resumed[key], torch_straight[key])
        np.testing.assert_allclose(resumed[key], torch_resumed[key], rtol=0, atol=ATOL)
    # A resume that lost the state (a fresh optimizer) is far outside that tolerance.
    model, x, y = a1_engine(AD)
    model = train(config.init(), model, x, y, lr, HALF)
    model = train(config.init(), model, x, y, lr, STEPS - HALF)
    lost = {k: v.numpy() for k, v in engine_params(model).items()}
    assert max(float(np.abs(lost[k] - torch_resumed[k]).max()) for k in PARAM_NAMES) > 100 * ATOL


# ---- bad input ----------------------------------------------------------------------------


@pytest.fixture
def adam_file(tmp_path):
    model, x, y = a1_engine(AD)
    optim = AdamConfig().init()
    model = train(optim, model, x, y, 0.01, 2)
    return model, Path(save_optimizer(optim, tmp_path / "adam.bpk", module=model))


def rewrite(path: Path, edit) -> None:
    pack = burnpack.read_pack(path)
    edit(pack)
    path.write_bytes(burnpack.pack_bytes(pack))


def load_error(path, module=None, config=None) -> str:
    with pytest.raises(RecordError) as info:
        load_optimizer((config or AdamConfig()).init(), path, module=module)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_missing_key_is_named(adam_file):
    model, path = adam_file
    prefix = str(int(model.fc2.bias.id))
    rewrite(
        path, lambda p: p.tensors.remove(next(t for t in p.tensors if t.name.startswith(prefix)))
    )
    assert f"{prefix}.momentum.moment_" in load_error(path) and "missing tensor" in load_error(path)


def test_missing_scalar_is_named(adam_file):
    model, path = adam_file
    key = f"{int(model.fc1.weight.id)}.momentum.time"
    rewrite(path, lambda p: p.scalars.pop(key))
    assert f"{key}: missing scalar" in load_error(path)


def test_wrong_dtype_and_shape_are_named(adam_file):
    model, path = adam_file
    key = f"{int(model.fc1.weight.id)}.momentum.moment_2"

    def cast(pack):
        i = next(i for i, t in enumerate(pack.tensors) if t.name == key)
        pack.tensors[i] = burnpack.PackTensor(
            key, pack.tensors[i].array.astype(np.float64), pack.tensors[i].param_id
        )

    rewrite(path, cast)
    assert f"{key}: float64" in load_error(path)
    assert f"{key}: float64" in load_error(path, module=model)

    def reshape(pack):
        i = next(i for i, t in enumerate(pack.tensors) if t.name == key)
        t = pack.tensors[i]
        pack.tensors[i] = burnpack.PackTensor(key, t.array.astype(np.float32).T.copy(), t.param_id)

    rewrite(path, reshape)
    message = load_error(path, module=model)
    assert key in message and "expected float32" in message


def test_unknown_optimizer_kind_is_named(adam_file):
    _, path = adam_file
    rewrite(path, lambda p: p.metadata.update(optimizer="Lion"))
    assert "optimizer: the file holds unknown optimizer kind 'Lion'" in load_error(path)
    rewrite(path, lambda p: p.metadata.update(optimizer="Adam"))
    assert "holds optimizer kind 'Adam', the optimizer is 'Sgd'" in load_error(
        path, config=SgdConfig()
    )


def test_truncated_and_foreign_files_are_named(adam_file):
    _, path = adam_file
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    assert "truncated file" in load_error(path)
    path.write_bytes(data[:30])
    assert "truncated file" in load_error(path)
    path.write_bytes(b"PK\x03\x04" + data[4:])
    assert "not a burnpack file" in load_error(path)
    path.write_bytes(b"")
    assert "not a burnpack file" in load_error(path)


def test_a_state_for_another_module_is_named(adam_file):
    _, path = adam_file
    other, _, _ = a1_engine(AD)
    assert "no param with this id in the module" in load_error(path, module=other)


def test_saving_replaces_the_file_atomically(adam_file, monkeypatch):
    """A save that fails leaves the old file as it was (the harness's atomic writer)."""
    model, path = adam_file
    before = path.read_bytes()

    def failing(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(burnpack, "pack_bytes", failing)
    with pytest.raises(OSError):
        save_optimizer(AdamConfig().init(), path, module=model)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


# ---- scheduler records --------------------------------------------------------------------


def schedulers():
    """Built schedulers (burn's `build()`, records at the root) and two `init()` ones (burn
    0.22's `ModuleLrScheduler`: each group's scheduler under `"<index>."`)."""
    return {
        "linear": lambda: lrs.LinearLrSchedulerConfig(0.5, 0.1, 7).build(),
        "cosine": lambda: lrs.CosineAnnealingLrSchedulerConfig(0.5, 3, min_lr=0.1).build(),
        "exponential": lambda: lrs.ExponentialLrSchedulerConfig(0.5, 0.9).build(),
        "step": lambda: lrs.StepLrSchedulerConfig(0.5, 2, gamma=0.5).build(),
        "noam": lambda: lrs.NoamLrSchedulerConfig(0.5, warmup_steps=3, model_size=4).build(),
        "composed": lambda: lrs.ComposedLrSchedulerConfig(
            [lrs.LinearLrSchedulerConfig(0.5, 0.1, 7), lrs.ExponentialLrSchedulerConfig(0.5, 0.9)]
        ).build(),
        "sequential": lambda: lrs.SequentialLrSchedulerConfig(
            [lrs.LinearLrSchedulerConfig(0.5, 0.1, 3), lrs.StepLrSchedulerConfig(0.1, 2)], [3]
        ).build(),
        "init": lambda: lrs.CosineAnnealingLrSchedulerConfig(0.5, 3, min_lr=0.1).init(),
        "groups": lambda: (
            lrs.ModuleLrSchedulerConfig(lrs.LinearLrSchedulerConfig(0.5, 0.1, 7))
            .with_group(ParamGroup.from_path("fc1.weight"), lrs.StepLrSchedulerConfig(0.5, 2))
            .init()
        ),
    }


def rates(scheduler, n: int) -> list[float]:
    """`n` steps' rates: the float of a built scheduler, every group's of a module one."""
    out = []
    for _ in range(n):
        lr = scheduler.step()
        out.append(lr if isinstance(lr, float) else [r for _, r in lr.groups])
    return out


@pytest.mark.parametrize("name", sorted(schedulers()))
def test_scheduler_resumes_exactly(name, tmp_path):
    make = schedulers()[name]
    straight = make()
    want = rates(straight, 8)
    first = make()
    got = rates(first, 4)
    path = save_scheduler(first, tmp_path / name)
    resumed = load_scheduler(make(), path)
    got += rates(resumed, 4)
    assert got == want  # float64 values, bit for bit
    assert resumed.to_record() == straight.to_record()


def test_scheduler_scalars_have_burns_types(tmp_path):
    from harness.engine.optim.records import scheduler_pack

    seq = schedulers()["sequential"]()
    seq.step()
    scalars = scheduler_pack(seq).scalars
    assert scalars == {
        "step": burnpack.Scalar("UInt", 1),
        "0.remaining_iters": burnpack.Scalar("UInt", seq.schedulers[0].remaining_iters),
        "1.iter_idx": burnpack.Scalar("Int", -1),
    }
    noam = schedulers()["noam"]()
    noam.step()
    assert scheduler_pack(noam).scalars == {"step": burnpack.Scalar("Float", 1.0)}


def test_scheduler_missing_key_is_named(tmp_path):
    path = Path(save_scheduler(schedulers()["cosine"](), tmp_path / "lr.bpk"))
    with pytest.raises(RecordError, match=r"lr\.bpk: 0\.remaining_iters: missing scalar"):
        load_scheduler(schedulers()["composed"](), path)


# ---- optimizer groups ---------------------------------------------------------------------


def _muon_weights_adamw_rest():
    """burn's Muon use: Muon for the 2-D weights (a group), AdamW (the base) for the rest."""
    group = ParamGroup.from_predicate("weight")
    return AdamWConfig().init().with_group(group, MuonConfig().build(), None)


def test_grouped_optimizer_resumes_from_a_file_bit_for_bit(tmp_path):
    """A record of two optimizer kinds: each state is rebuilt in its group's layout (burn's
    `optim_from_param(id, path)`), so a stopped run continues exactly as the straight one."""
    model, x, y = a1_engine(AD)
    straight = train(_muon_weights_adamw_rest(), model.clone(), x, y, 0.01, STEPS)
    first = _muon_weights_adamw_rest()
    model = train(first, model, x, y, 0.01, HALF)
    path = save_optimizer(first, tmp_path / "groups.bpk")
    resumed = load_optimizer(_muon_weights_adamw_rest(), path)
    assert {type(s).__name__ for s in resumed.records.values()} == {
        type(s).__name__ for s in first.records.values()
    }
    model = train(resumed, model, x, y, 0.01, STEPS - HALF)
    for name, array in engine_params(straight).items():
        np.testing.assert_array_equal(engine_params(model)[name].numpy(), array.numpy())


def test_a_state_loaded_into_another_group_kind_is_named(tmp_path):
    model, x, y = a1_engine(AD)
    optim = _muon_weights_adamw_rest()
    train(optim, model, x, y, 0.01, 1)
    path = save_optimizer(optim, tmp_path / "groups.bpk")
    with pytest.raises(RecordError) as info:
        load_optimizer(AdamWConfig().init(), path)  # no Muon group: weights resolve to AdamW
    message = str(info.value)
    assert "groups.bpk: optimizer." in message
    assert "holds optimizer kind 'Muon', the optimizer is 'AdamW'" in message


# ---- LBFGS (one module-level state) -------------------------------------------------------


def test_lbfgs_state_round_trips_through_a_file_exactly(tmp_path):
    """burn's `LBFGSState` flattened at the root: `history_s.len`, `history_s.0`, ..., the
    optional `d`, `t`, `prev_flat_grad`, `prev_loss`, and `g_iter`; every leaf comes back with
    its bytes, dtype and value."""
    from harness.engine import LBFGSConfig

    model, x, y = a1_engine(AD)
    loss_fn = CrossEntropyLossConfig().init(AD)

    def closure(module):
        loss = loss_fn.forward(module.forward(x), y)
        return float(loss.numpy().reshape(())), GradientsParams.from_grads(loss.backward(), module)

    optim = LBFGSConfig(max_iter=3).init()
    model, _ = optim.step(0.1, model, closure)
    optim.step(0.1, model, closure)
    state = optim.to_record()
    assert len(state.history_s) >= 2 and state.d is not None and state.g_iter >= 2
    path = save_optimizer(optim, tmp_path / "lbfgs.bpk")
    names = {t.name for t in burnpack.read_pack(path).tensors}
    assert {"history_s.0", "history_y.0", "d", "prev_flat_grad"} <= names
    loaded = load_optimizer(LBFGSConfig(max_iter=3).init(), path).to_record()
    for field in ("history_s", "history_y"):
        for a, b in zip(getattr(state, field), getattr(loaded, field), strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    for field in ("d", "prev_flat_grad"):
        a, b = getattr(state, field), getattr(loaded, field)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert (loaded.t, loaded.prev_loss, loaded.g_iter) == (state.t, state.prev_loss, state.g_iter)
    with pytest.raises(RecordError, match="holds optimizer kind 'LBFGS', the optimizer is 'Adam'"):
        load_optimizer(AdamConfig().init(), path)


def test_a_scheduler_key_without_a_record_type_is_refused(tmp_path):
    """A scheduler whose `to_record` has a key its `_state` does not type (a custom one) is
    refused rather than saved without it."""

    class Warmup(lrs.LrScheduler):
        def step(self) -> float:
            return 0.1

        def to_record(self) -> dict:
            return {"warm": 3}

    with pytest.raises(RecordError, match=r"^<record>: warm: no record type for this key"):
        save_scheduler(Warmup(), tmp_path / "lr.bpk")
    assert not (tmp_path / "lr.bpk").exists()
