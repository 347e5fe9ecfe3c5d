"""Reading `torch.save` and safetensors files without torch: values against `torch.load`, the
restricted unpickler's refusals, and one-line errors for broken files.

torch writes the files here; the reader under test never imports it (checked in a subprocess).
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from harness.engine.store import (
    FloatCastAdapter,
    PytorchError,
    PytorchReader,
    SafetensorsStore,
    SafetensorsStoreError,
)

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def save(tmp_path, obj, name="ckpt.pt", legacy=False):
    path = tmp_path / name
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    return path


def sample(dtype: torch.dtype) -> torch.Tensor:
    values = torch.arange(-6, 6).reshape(3, 4)
    return values > 0 if dtype == torch.bool else values.to(dtype)


def read_arrays(path, key=None) -> dict[str, np.ndarray]:
    return {name: snap.to_data() for name, snap in PytorchReader(path, key).tensors().items()}


def assert_same(array: np.ndarray, tensor: torch.Tensor) -> None:
    want = tensor.numpy()
    assert array.dtype == want.dtype and array.shape == want.shape
    assert array.tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_reads_bit_identical_to_torch(tmp_path, dtype, legacy):
    tensor = sample(dtype)
    path = save(tmp_path, OrderedDict(t=tensor), legacy=legacy)
    reader = PytorchReader(path)
    assert reader.format == ("legacy" if legacy else "zip")
    assert reader.get("t").dtype == str(dtype).removeprefix("torch.")
    assert_same(reader.get("t").to_data(), tensor)


def test_bfloat16_comes_out_as_bits_and_widens_exactly(tmp_path):
    tensor = torch.tensor([1.0, -2.5, 3.140625, 1e30]).to(torch.bfloat16)
    snapshot = PytorchReader(save(tmp_path, {"t": tensor})).get("t")
    assert snapshot.dtype == "bfloat16"
    assert_same(snapshot.to_data(), tensor.view(torch.uint16))
    widened = FloatCastAdapter.to("float32").adapt(snapshot)
    assert widened.dtype == "float32"
    assert_same(widened.to_data(), tensor.float())


def test_strides_offsets_and_shared_storage_read_as_torch_load(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    state = {
        "base": base,
        "transposed": base.t(),  # non-contiguous view of the same storage
        "rows": base[1:3],  # storage offset 6
        "column": base[:, 4],  # stride 6, offset 4
        "scalar": torch.tensor(7.5),
        "empty": torch.zeros(0, 3),
    }
    loaded = torch.load(save(tmp_path, state), weights_only=True)
    arrays = read_arrays(tmp_path / "ckpt.pt")
    assert list(arrays) == list(state)
    for name, tensor in loaded.items():
        assert_same(arrays[name], tensor.contiguous())
    assert not arrays["transposed"].flags.writeable  # a view of the file's storage


def test_parameters_and_nested_checkpoints(tmp_path):
    weight = torch.nn.Parameter(torch.ones(2, 3))
    checkpoint = {
        "model": {"fc.weight": weight, "fc.bias": torch.zeros(2)},
        "optimizer": {"state": {0: {"exp_avg": torch.full((2,), 0.5)}}, "lr": 0.1},
        "epoch": 3,
        "name": "run",
        "history": [torch.ones(1)],  # tensors inside lists are not read (as in burn)
    }
    path = save(tmp_path, checkpoint)
    assert PytorchReader(path).keys() == [
        "model.fc.weight",
        "model.fc.bias",
        "optimizer.state.0.exp_avg",
    ]
    arrays = read_arrays(path, "model")
    assert list(arrays) == ["fc.weight", "fc.bias"]
    assert_same(arrays["fc.weight"], weight.detach())


def test_missing_top_level_key_lists_the_keys(tmp_path):
    path = save(tmp_path, {"model": {"w": torch.ones(1)}, "epoch": 1})
    with pytest.raises(PytorchError) as err:
        PytorchReader(path, "state_dict")
    assert str(err.value) == (
        f"{path}: top-level key 'state_dict' not found or not a dict; "
        "top-level keys in the file: ['model', 'epoch']"
    )


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _zip_with_pickle(path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("evil/data.pkl", payload)
        archive.writestr("evil/byteorder", "little")


@pytest.mark.parametrize("container", ["zip", "plain pickle"])
def test_a_pickle_calling_os_system_is_refused_and_nothing_runs(tmp_path, container):
    marker = tmp_path / "ran"
    payload = pickle.dumps({"w": _Evil(marker)}, protocol=2)
    path = tmp_path / "evil.pt"
    if container == "zip":
        _zip_with_pickle(path, payload)
    else:
        path.write_bytes(payload)
    with pytest.raises(PytorchError) as err:
        PytorchReader(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert f"refused global '{os.system.__module__}.system'" in message
    assert "\n" not in message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("obj", "refused"),
    [
        ({"a": np.ones(3)}, "numpy"),
        ({"s": {1, 2}}, "__builtin__.set"),  # protocol 2 spells builtins the Python 2 way
        ({"m": torch.nn.Linear(2, 2)}, "torch.nn.modules.linear.Linear"),
        ({"d": torch.device("cpu")}, "torch.device"),
    ],
    ids=["numpy array", "set", "module", "device"],
)
def test_non_tensor_objects_are_refused(tmp_path, obj, refused):
    with pytest.raises(PytorchError, match=f"refused global '{refused}"):
        PytorchReader(save(tmp_path, obj))


def test_a_full_model_save_is_refused_with_advice(tmp_path):
    with pytest.raises(PytorchError, match=r"save model\.state_dict\(\) instead"):
        PytorchReader(save(tmp_path, torch.nn.Sequential(torch.nn.Linear(2, 2))))


@pytest.mark.parametrize(
    "state",
    [b"}X\x02\x00\x00\x00fnK\x01s", b"N}X\x02\x00\x00\x00fnK\x01s\x86"],
    ids=["dict state", "slot state"],
)
def test_build_cannot_alter_the_allowed_stand_ins(tmp_path, state):
    # GLOBAL _rebuild_tensor_v2, then BUILD with a state that would rebind its `fn`.
    payload = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n" + state + b"b."
    path = tmp_path / "build.pt"
    _zip_with_pickle(path, payload)
    with pytest.raises(PytorchError, match="corrupt pickle"):
        PytorchReader(path)
    good = save(tmp_path, {"t": torch.ones(2)}, name="good.pt")
    assert_same(PytorchReader(good).get("t").to_data(), torch.ones(2))


def test_a_dict_that_contains_itself_is_an_error(tmp_path):
    cyclic = {}
    cyclic["self"] = cyclic
    path = tmp_path / "cyclic.pkl"
    path.write_bytes(pickle.dumps(cyclic, protocol=2))
    with pytest.raises(PytorchError, match="the dict at 'self' contains itself"):
        PytorchReader(path)


def test_shared_and_deeply_nested_dicts_are_bounded(tmp_path):
    shared = {"t": 1}
    for _ in range(40):  # 2**40 paths in a pickle of a few hundred bytes
        shared = {"a": shared, "b": shared}
    deep = {}
    for _ in range(200):
        deep = {"x": deep}
    for name, obj, problem in [
        ("bomb.pkl", shared, "more than 1000000 dict entries"),
        ("deep.pkl", deep, "dicts nested deeper than 100 levels"),
    ]:
        path = tmp_path / name
        path.write_bytes(pickle.dumps(obj, protocol=2))
        with pytest.raises(PytorchError, match=problem):
            PytorchReader(path)


def test_a_plain_pickle_without_tensors_has_no_tensors(tmp_path):
    path = tmp_path / "config.pkl"
    path.write_bytes(pickle.dumps({"lr": 0.1, "layers": [2, 3]}, protocol=2))
    reader = PytorchReader(path)
    assert (reader.format, len(reader)) == ("pickle", 0)


def _rewrite(path, drop=None, shorten=None, lengthen=None) -> None:
    with zipfile.ZipFile(path) as archive:
        records = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in records.items():
            if name == shorten:
                data = data[:-4]
            elif name == lengthen:
                data = data + b"\xff" * 64
            if name != drop:
                archive.writestr(name, data)


def test_broken_files_give_one_line_errors_naming_the_file(tmp_path):
    good = save(tmp_path, {"t": torch.ones(4)})
    data = good.read_bytes()
    cases = {
        "truncated.pt": (data[: len(data) // 2], "corrupt or truncated zip archive"),
        "random.pt": (b"\x00\x01 not a checkpoint at all", "not a PyTorch checkpoint"),
        "empty.pt": (b"", "the file is empty"),
        "text.pt": (b"hello\n", "not a PyTorch checkpoint"),
    }
    for name, (content, problem) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(PytorchError) as err:
            PytorchReader(path)
        message = str(err.value)
        assert message.startswith(f"{path}: ") and problem in message, message
        assert "\n" not in message
    with pytest.raises(PytorchError, match=r"absent\.pt: no such file"):
        PytorchReader(tmp_path / "absent.pt")


def test_missing_or_short_storage_records_are_errors_not_zeros(tmp_path):
    path = save(tmp_path, {"t": torch.ones(4)})
    _rewrite(path, drop="ckpt/data/0")
    with pytest.raises(PytorchError, match="storage record 'ckpt/data/0' is missing"):
        PytorchReader(path)
    path = save(tmp_path, {"t": torch.ones(4)})
    _rewrite(path, shorten="ckpt/data/0")
    with pytest.raises(PytorchError, match="storage '0' holds 12 bytes, its 4 float32 elements"):
        PytorchReader(path)
    path = save(tmp_path, {"t": torch.ones(4)})
    _rewrite(path, lengthen="ckpt/data/0")  # bytes past the storage's elements are not read
    assert_same(PytorchReader(path).get("t").to_data(), torch.ones(4))


def _recompress(path, method) -> None:
    with zipfile.ZipFile(path) as archive:
        records = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in records.items():
            archive.writestr(name, data)


def test_a_deflated_checkpoint_reads_as_torch_load_and_bzip2_is_refused(tmp_path):
    """Another zip tool may recompress a checkpoint: DEFLATE reads (within the inflation cap),
    BZIP2 and LZMA are refused, as zipfile cannot inflate them in bounded steps."""
    want = {"t": torch.arange(1000.0), "z": torch.zeros(4096)}  # zeros deflate ~100x
    path = save(tmp_path, want)
    _recompress(path, zipfile.ZIP_DEFLATED)
    arrays = read_arrays(path)
    for name, tensor in want.items():
        assert_same(arrays[name], tensor)
    for method, text in [(zipfile.ZIP_BZIP2, "BZIP2"), (zipfile.ZIP_LZMA, "LZMA")]:
        _recompress(path, method)
        with pytest.raises(PytorchError) as err:
            PytorchReader(path)
        assert str(err.value) == (
            f"{path}: record 'ckpt/byteorder' is compressed with {text}, which is not read (only "
            "stored records, as torch.save writes them, and DEFLATE)"
        )


def test_truncated_legacy_file_is_an_error(tmp_path):
    path = save(tmp_path, {"t": torch.ones(4)}, legacy=True)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(PytorchError, match="truncated file"):
        PytorchReader(path)


def test_the_reader_never_imports_torch(tmp_path):
    path = save(tmp_path, {"t": torch.ones(3)})
    code = (
        "import sys; from harness.engine.store import PytorchReader; "
        f"r = PytorchReader({str(path)!r}); r.get('t').to_data(); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- safetensors ----------------------------------------------------------------------------


def test_safetensors_every_dtype_reads_bit_identical(tmp_path):
    tensors = {str(d).removeprefix("torch."): sample(d) for d in DTYPES}
    tensors["bfloat16"] = sample(torch.bfloat16)
    path = tmp_path / "all.safetensors"
    save_file(tensors, path)
    snapshots = SafetensorsStore.from_file(path).get_all_snapshots()
    assert list(snapshots) == sorted(tensors)
    for name, tensor in tensors.items():
        assert snapshots[name].dtype == name
        want = tensor.view(torch.uint16) if name == "bfloat16" else tensor
        assert_same(snapshots[name].to_data(), want)


def test_safetensors_from_bytes_and_broken_buffers(tmp_path):
    path = tmp_path / "one.safetensors"
    save_file({"w": torch.ones(2, 2)}, path)
    data = path.read_bytes()
    assert SafetensorsStore.from_bytes(data).keys() == ["w"]
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(data[:-5])
    with pytest.raises(SafetensorsStoreError) as err:
        SafetensorsStore.from_file(broken).keys()
    assert str(err.value).startswith(f"{broken}: not a safetensors file: ")
    with pytest.raises(SafetensorsStoreError, match="<safetensors bytes>: not a safetensors"):
        SafetensorsStore.from_bytes(b"\x00" * 3).keys()
    with pytest.raises(SafetensorsStoreError, match=r"absent\.safetensors: no such file"):
        SafetensorsStore.from_file(tmp_path / "absent.safetensors").keys()


def test_safetensors_unsupported_dtype_names_the_tensor():
    header = b'{"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}'
    buffer = len(header).to_bytes(8, "little") + header + b"\x00\x00"
    with pytest.raises(SafetensorsStoreError, match="tensor 'x': unsupported dtype F8_E4M3"):
        SafetensorsStore.from_bytes(io.BytesIO(buffer).getvalue()).keys()
