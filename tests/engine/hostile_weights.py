"""Hostile weight files, built byte by byte, and the loader a child process runs on them.

`hostile_files()` lists `Hostile(name, reader, data, expect)`: what each file is, which importer
reads it (`pt`: PytorchStore; `safetensors`: SafetensorsStore; `bpk`: burnpack's read_pack;
`optim`: load_optimizer into an Adam optimizer), its bytes, and a fragment its one-line error
must contain (None: it loads). Nothing here uses the code under test to build a file: pickles,
zip archives and CBOR are assembled by the small writers below.

Run as a script (`python hostile_weights.py manifest.json`), it loads every file the manifest
lists and prints one JSON object: each file's outcome (`ok`, `error` with the importer's own
exception, or `crash` with any other exception), and the process's peak RSS after its imports
and at the end.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple

CANARY_NAME = "canary"  # what a malicious global would create, next to the files
# BZIP2 of 2**30 zero bytes, 785 bytes (made once: bz2.BZ2Compressor(9) fed 64 x 16 MiB of
# zeros, ~20 s; too slow to make on every run, and the format has no repeatable block).
BZIP2_ZEROS = Path(__file__).parent / "data" / "zeros_1gib.bz2"
LEGACY_HEADER = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"."
GIB = 1 << 30


class Hostile(NamedTuple):
    name: str
    reader: str
    data: bytes
    expect: str | None


# ---- pickles, opcode by opcode (pickle protocol 2; STACK_GLOBAL is protocol 4) ---------------


def p_int(n: int) -> bytes:
    raw = pickle.encode_long(n)
    return (
        b"\x8a" + bytes([len(raw)]) if len(raw) < 256 else b"\x8b" + struct.pack("<I", len(raw))
    ) + raw


def p_str(s: str) -> bytes:
    raw = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def p_global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def p_call(callable_: bytes, *args: bytes) -> bytes:
    return callable_ + p_tuple(*args) + b"R"


def p_dict(entries: dict[bytes, bytes]) -> bytes:
    return b"}(" + b"".join(k + v for k, v in entries.items()) + b"u"


def pickle_of(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def storage(key: bytes, numel: bytes, kind: str = "FloatStorage") -> bytes:
    pid = p_tuple(p_str("storage"), p_global("torch", kind), key, p_str("cpu"), numel)
    return pid + b"Q"  # BINPERSID


def tensor(numel=1, offset=0, size=(1,), stride=(1,), key="0", raw_size=None) -> bytes:
    """`_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())`, every part
    replaceable by raw opcodes (bytes) to make it hostile."""

    def part(v):
        return v if isinstance(v, bytes) else p_int(v) if isinstance(v, int) else p_str(v)

    def ints(vs):
        return vs if isinstance(vs, bytes) else p_tuple(*(p_int(v) for v in vs))

    hooks = p_call(p_global("collections", "OrderedDict"))
    return p_call(
        p_global("torch._utils", "_rebuild_tensor_v2"),
        storage(part(key), part(numel)),
        part(offset),
        ints(size),
        ints(stride),
        b"\x89",  # False
        hooks,
    )


def state_dict(**tensors: bytes) -> bytes:
    return pickle_of(p_dict({p_str(k): v for k, v in tensors.items()}))


def shared_lists(levels: int) -> bytes:
    """`x = []; x = [x, x]` `levels` times: a few bytes a level (memo refs), a repr of 2**levels."""
    out = b"]q\x00"  # EMPTY_LIST, BINPUT 0
    for i in range(levels):  # POP the last (it stays in the memo), then [memo[i], memo[i]]
        out += b"0]" + b"(h" + bytes([i]) + b"h" + bytes([i]) + b"e" + b"q" + bytes([i + 1])
    return out


# ---- zip archives, written by hand (so a member can claim what it likes) -----------------------


def zip_archive(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """`members`: (name, method, payload as stored, uncompressed size, crc32)."""
    out, central = bytearray(), bytearray()
    for name, method, payload, size, crc in members:
        raw = name.encode()
        header = (20, 0, method, 0, 0x21, crc, len(payload), size, len(raw), 0)
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *header, 0, 0, 0, 0, len(out))
        central += raw
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", *header) + raw + payload
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0
    )
    return bytes(out + central + end)


def stored(name: str, data: bytes) -> tuple[str, int, bytes, int, int]:
    return name, 0, data, len(data), zlib.crc32(data)


def checkpoint(pkl: bytes, records: dict[str, bytes] | None = None, extra=()) -> bytes:
    """A torch.save-shaped archive: archive/data.pkl, archive/byteorder, archive/data/<key>."""
    members = [stored("archive/data.pkl", pkl), stored("archive/byteorder", b"little")]
    members += [stored(f"archive/data/{k}", v) for k, v in (records or {}).items()]
    return zip_archive([*members, *extra])


def deflated_zeros(size: int) -> bytes:
    """Raw DEFLATE of `size` zero bytes (a multiple of 1 MiB), built in milliseconds: one
    sync-flushed 1 MiB block repeated (its back-references only ever reach zeros)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
    return block * (size >> 20) + c.flush()


def zeros_crc(size: int) -> int:
    crc, chunk = 0, bytes(1 << 20)
    for _ in range(size >> 20):
        crc = zlib.crc32(chunk, crc)
    return crc


# ---- CBOR and burnpack containers ------------------------------------------------------------


class Raw(bytes):
    """CBOR bytes written as they are (a hostile item inside a normal structure)."""


def cbor(value) -> bytes:
    def head(major: int, n: int) -> bytes:
        if n < 24:
            return bytes([major << 5 | n])
        for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
            if n < 1 << (8 * struct.calcsize(fmt)):
                return bytes([major << 5 | info]) + struct.pack(fmt, n)
        raise ValueError(n)

    if isinstance(value, Raw):
        return bytes(value)
    if isinstance(value, bool):
        return b"\xf5" if value else b"\xf4"
    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, str):
        return head(3, len(value.encode())) + value.encode()
    if isinstance(value, list):
        return head(4, len(value)) + b"".join(map(cbor, value))
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(value)


def burnpack(metadata: bytes, data: bytes = b"", version: int = 1) -> bytes:
    header = struct.pack("<IHI", 0x4255524E, version, len(metadata))
    pad = -(len(header) + len(metadata)) % 256
    return header + metadata + bytes(pad) + data


def descriptor(shape, offsets, dtype="F32") -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


def one_tensor_pack(d: dict, data: bytes = b"", version: int = 1) -> bytes:
    return burnpack(cbor({"tensors": {"0.momentum.moment_1": d}}), data, version)


# ---- the files ---------------------------------------------------------------------------------

DANGEROUS = [
    ("os", "system"),
    ("posix", "system"),
    ("nt", "system"),
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("builtins", "__import__"),
    ("builtins", "getattr"),
    ("subprocess", "Popen"),
    ("subprocess", "check_call"),
    ("copyreg", "_reconstructor"),
    ("pickle", "loads"),
    ("_codecs", "encode"),
    ("torch", "load"),
]


def _code_execution(canary: str) -> list[Hostile]:
    cmd = p_str(f"touch {canary}")
    code = p_str(f"open({canary!r}, 'w')")
    argv = b"]" + b"(" + p_str("touch") + p_str(canary) + b"e"  # a list ['touch', canary]
    out = []
    for module, name in DANGEROUS:
        arg = {"eval": code, "exec": code, "Popen": argv, "check_call": argv}.get(name, cmd)
        evil = p_call(p_global(module, name), arg)
        refused = f"refused global '{module}.{name}'"
        out.append(Hostile(f"reduce_{module}_{name}.pkl", "pt", pickle_of(evil), refused))
        wrapped = state_dict(w=evil)
        out.append(Hostile(f"reduce_{module}_{name}.pt", "pt", checkpoint(wrapped), refused))
    stack_global = b"\x8c\x02os\x8c\x06system\x93" + p_tuple(cmd) + b"R"
    inst = b"(" + cmd + b"ios\nsystem\n"
    obj = b"(" + p_global("os", "system") + cmd + b"o"
    as_storage_type = (
        p_tuple(p_str("storage"), p_global("os", "system"), p_str("0"), p_str("cpu"), p_int(1))
        + b"Q"
    )
    for name, body in [
        ("stack_global.pkl", b"\x80\x04" + stack_global + b"."),
        ("inst.pkl", pickle_of(inst)),
        ("obj.pkl", pickle_of(obj)),
        ("storage_type_os_system.pt", checkpoint(state_dict(w=as_storage_type))),
        (
            "legacy_second_pickle.pt",
            LEGACY_HEADER + pickle_of(p_call(p_global("os", "system"), cmd)),
        ),
        (
            "eval_in_tensor_args.pt",
            checkpoint(state_dict(w=tensor(offset=p_call(p_global("builtins", "eval"), code)))),
        ),
    ]:
        out.append(Hostile(name, "pt", body, "refused global"))
    return out


def _zip_bombs() -> list[Hostile]:
    crc = zeros_crc(GIB)
    bomb = deflated_zeros(GIB)  # 1 MiB that inflates to 1 GiB
    one_gib_tensor = state_dict(w=tensor(numel=GIB // 4, size=(GIB // 4,)))
    pkl = state_dict(w=tensor())
    cases = [
        (
            "deflate_record_1gib.pt",
            checkpoint(one_gib_tensor, extra=[("archive/data/0", 8, bomb, GIB, crc)]),
            "inflates past 16 times",
        ),
        (
            "deflate_data_pkl_1gib.pt",
            zip_archive(
                [("archive/data.pkl", 8, bomb, GIB, crc), stored("archive/byteorder", b"little")]
            ),
            "compressed record 'archive/data.pkl' inflates past",
        ),
        (
            "deflate_numel_2_61.pt",
            checkpoint(
                state_dict(w=tensor(numel=1 << 61)),
                extra=[
                    ("archive/data/0", 8, zlib.compress(bytes(64))[2:-4], 64, zlib.crc32(bytes(64)))
                ],
            ),
            "elements need 9223372036854775808 (truncated file?)",
        ),
        (
            "stored_numel_2_62.pt",
            checkpoint(state_dict(w=tensor(numel=1 << 62)), {"0": bytes(16)}),
            "(truncated file?)",
        ),
        (
            "stored_claims_4gib.pt",
            checkpoint(
                pkl, extra=[("archive/data/0", 0, bytes(4), (1 << 32) - 1, zlib.crc32(bytes(4)))]
            ),
            None,
        ),
        (
            "lzma_record.pt",
            _lzma_checkpoint(1 << 12),
            "record 'archive/data/0' is compressed with LZMA, which is not read",
        ),
        (
            "unknown_method.pt",
            checkpoint(pkl, extra=[("archive/data/0", 99, bytes(4), 4, 0)]),
            "is compressed with method 99",
        ),
    ]
    cases.append(
        (
            "bzip2_record_1gib.pt",
            checkpoint(
                one_gib_tensor,
                extra=[("archive/data/0", 12, BZIP2_ZEROS.read_bytes(), GIB, crc)],
            ),
            "is compressed with BZIP2, which is not read",
        )
    )
    return [Hostile(name, "pt", data, expect) for name, data, expect in cases]


def _lzma_checkpoint(size: int) -> bytes:
    """A checkpoint whose one record is `size` zero bytes, LZMA-compressed by zipfile."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "archive/data.pkl", state_dict(w=tensor(numel=size // 4, size=(size // 4,)))
        )
        archive.writestr("archive/byteorder", b"little")
        archive.writestr("archive/data/0", bytes(size), compress_type=zipfile.ZIP_LZMA)
    return buffer.getvalue()


def _shapes() -> list[Hostile]:
    big = 10**5000
    nested = shared_lists(40)
    cases = [
        (
            "size_2_70_by_0.pt",
            tensor(numel=0, size=(1 << 70, 0), stride=(1, 1)),
            "tensor size must be an int in [0, 2**63)",
        ),
        (
            "size_2_62_by_0.pt",
            tensor(numel=0, size=(1 << 62, 0), stride=(1, 1)),
            "holds more than 9223372036854775807 bytes",
        ),
        ("stride_2_64.pt", tensor(stride=(1 << 64,)), "tensor stride must be an int in [0, 2**63)"),
        ("stride_2_62.pt", tensor(stride=(1 << 62,)), "stride [4611686018427387904] is more than"),
        (
            "rank_65.pt",
            tensor(size=(1,) * 65, stride=(1,) * 65),
            "tensor size has rank 65, more than 64",
        ),
        (
            "offset_2_62.pt",
            tensor(offset=1 << 62),
            "reads element 4611686018427387904 of a storage of 1",
        ),
        ("rank_mismatch.pt", tensor(size=(1, 1), stride=(1,)), "differ in rank"),
        ("negative_size.pt", tensor(size=(-1,)), "tensor size must be an int"),
        (
            "size_is_nested_memo_lists.pt",
            tensor(size=nested),
            "tensor size must be an int in [0, 2**63), got [[",
        ),
        (
            "numel_5000_digits.pt",
            tensor(numel=big),
            "storage size must be an int in [0, 2**63), got <integer of 16610 bits>",
        ),
        (
            "storage_key_5000_digits.pt",
            tensor(key=p_int(big)),
            "storage key <integer of 16610 bits> is not a string",
        ),
        ("storage_key_nested_lists.pt", tensor(key=nested), "storage key [["),
        ("expanded_2_40_stride_0.pt", tensor(size=(1 << 40,), stride=(0,)), None),
        ("control.pt", tensor(), None),
    ]
    out = [Hostile(n, "pt", checkpoint(state_dict(w=t), {"0": bytes(4)}), e) for n, t, e in cases]
    key_big = pickle_of(p_dict({p_int(big): tensor()}))
    out.append(
        Hostile(
            "dict_key_5000_digits.pt",
            "pt",
            checkpoint(key_big, {"0": bytes(4)}),
            "dict key <integer of 16610 bits> at '' is not a string or an int64",
        )
    )
    param = p_call(
        p_global("torch._utils", "_rebuild_parameter"),
        nested,
        b"\x89",
        p_call(p_global("collections", "OrderedDict")),
    )
    out.append(
        Hostile(
            "parameter_of_nested_lists.pt",
            "pt",
            checkpoint(state_dict(w=param)),
            "_rebuild_parameter expects a tensor, got [[",
        )
    )
    pid = nested + b"Q"
    out.append(
        Hostile(
            "persistent_id_nested_lists.pt", "pt", checkpoint(state_dict(w=pid)), "persistent id [["
        )
    )
    legacy = LEGACY_HEADER + pickle_of(p_int(big)) + pickle_of(p_dict({}))
    out.append(
        Hostile("legacy_protocol_5000_digits.pt", "pt", legacy, "protocol <integer of 16610 bits>")
    )
    shared = b"}q\x00"
    for i in range(40):  # {"a": d, "b": d} 40 times: 2**40 paths
        shared += (
            b"0}("
            + p_str("a")
            + b"h"
            + bytes([i])
            + p_str("b")
            + b"h"
            + bytes([i])
            + b"uq"
            + bytes([i + 1])
        )
    out.append(
        Hostile("shared_dicts_2_40.pkl", "pt", pickle_of(shared), "more than 1000000 dict entries")
    )
    out.append(
        Hostile(
            "big_int_value_is_skipped.pt",
            "pt",
            checkpoint(
                pickle_of(p_dict({p_str("epoch"): p_int(big), p_str("w"): tensor()})),
                {"0": bytes(4)},
            ),
            None,
        )
    )
    for name, data, expect in [
        ("empty.pt", b"", "the file is empty"),
        ("random.pt", bytes(range(256)) * 4, "not a PyTorch checkpoint"),
        (
            "truncated_zip.pt",
            checkpoint(state_dict(w=tensor()), {"0": bytes(4)})[:150],
            "corrupt or truncated zip archive",
        ),
        ("no_data_pkl.pt", zip_archive([stored("x/y", b"")]), "no data.pkl in the zip archive"),
        (
            "big_endian.pt",
            zip_archive([stored("a/data.pkl", state_dict()), stored("a/byteorder", b"big")]),
            "big-endian checkpoints are not supported",
        ),
        ("tar_header.pt", bytes(257) + b"ustar" + bytes(250), "TAR checkpoints"),
    ]:
        out.append(Hostile(name, "pt", data, expect))
    return out


def _safetensors() -> list[Hostile]:
    def st(header, data: bytes = b"") -> bytes:
        raw = header if isinstance(header, bytes) else json.dumps(header).encode()
        return struct.pack("<Q", len(raw)) + raw + data

    cases = [
        (
            "header_length_2_60.safetensors",
            struct.pack("<Q", 1 << 60) + b"{}",
            "not a safetensors file",
        ),
        (
            "shape_2_62_by_0.safetensors",
            st({"w": {"dtype": "F32", "shape": [1 << 62, 0], "data_offsets": [0, 0]}}),
            "tensor 'w': shape [4611686018427387904, 0] holds more than",
        ),
        (
            "rank_65.safetensors",
            st({"w": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}}, bytes(4)),
            "tensor 'w': rank 65 is more than 64",
        ),
        (
            "offsets_past_end.safetensors",
            st({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(4)),
            "not a safetensors file",
        ),
        ("deep_json.safetensors", st(b"[" * 100_000 + b"]" * 100_000), "not a safetensors file"),
        (
            "int_5000_digits.safetensors",
            st(
                b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}',
                bytes(4),
            ),
            "not a safetensors file",
        ),
        (
            "unsupported_dtype.safetensors",
            st({"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
            "unsupported dtype F8_E4M3",
        ),
        (
            "name_1mb.safetensors",
            st({"w" * (1 << 20): {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
            None,
        ),
        ("empty.safetensors", b"", "not a safetensors file"),
        (
            "control.safetensors",
            st({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
            None,
        ),
    ]
    return [Hostile(n, "safetensors", d, e) for n, d, e in cases]


def _cbor_tricks() -> list[Hostile]:
    nest = b"\x81" * 120 + b"\x80"  # 121 one-element arrays, inside the depth limit
    arrays = b"\x9f" + nest * ((8 << 20) // len(nest)) + b"\xff"  # 8 MiB: ~8.3M lists
    nest_maps = b"\xa1\x00" * 60 + b"\x00"
    maps = b"\x9f" + nest_maps * ((4 << 20) // len(nest_maps)) + b"\xff"

    def meta(x: bytes) -> bytes:
        return burnpack(cbor({"tensors": {}, "x": Raw(x)}))

    text_chunk_of = lambda chunk: b"\x7f" + b"\x61a" + chunk + b"\xff"  # noqa: E731
    cases = [
        ("nested_arrays_8mib.bpk", meta(arrays), "a CBOR bomb"),
        ("nested_maps_4mib.bpk", meta(maps), "a CBOR bomb"),
        ("depth_200.bpk", meta(b"\x81" * 200 + b"\x80"), "nesting deeper than 128"),
        (
            "text_with_byte_chunk.bpk",
            meta(text_chunk_of(b"\x41b")),
            "indefinite text string holds a chunk of another type",
        ),
        ("text_with_int_chunk.bpk", meta(text_chunk_of(b"\x05")), "holds a chunk of another type"),
        (
            "text_with_indefinite_chunk.bpk",
            meta(text_chunk_of(b"\x7f\xff")),
            "holds a chunk of another type",
        ),
        (
            "bytes_with_text_chunk.bpk",
            meta(b"\x5f\x61a\xff"),
            "indefinite byte string holds a chunk",
        ),
        ("array_claims_2_64.bpk", meta(b"\x9b" + b"\xff" * 8), "truncated"),
        ("string_claims_2_63.bpk", meta(b"\x7b\x80" + bytes(7)), "truncated"),
        (
            "truncated_float.bpk",
            burnpack(cbor({"tensors": {}, "x": Raw(b"\xfb\x00")})),
            "truncated",
        ),
        ("cut_mid_item.bpk", burnpack(cbor({"tensors": {}})[:-1]), "truncated"),
        ("bignum_tag.bpk", meta(b"\xc2\x41\x01"), "tags"),
        ("map_key_is_array.bpk", meta(b"\xa1\x80\x00"), "a map key that is an array or a map"),
        ("bad_utf8.bpk", meta(b"\x62\xff\xfe"), "unreadable metadata"),
        (
            "version_0.bpk",
            one_tensor_pack(descriptor([1], [0, 4]), bytes(4), version=0),
            "unsupported burnpack version 0",
        ),
        (
            "misaligned_offset.bpk",
            one_tensor_pack(descriptor([1], [4, 8]), bytes(8)),
            "data offset 4 is not a multiple of 256",
        ),
        (
            "shape_2_63_by_0.bpk",
            one_tensor_pack(descriptor([1 << 63, 0], [0, 0])),
            "holds more than",
        ),
        (
            "shape_2_64_minus_1.bpk",
            one_tensor_pack(descriptor([(1 << 64) - 1], [0, 4]), bytes(4)),
            "holds more than",
        ),
        (
            "rank_65.bpk",
            one_tensor_pack(descriptor([1] * 65, [0, 4]), bytes(4)),
            "rank 65 is more than 64",
        ),
        (
            "tensor_name_int.bpk",
            burnpack(cbor({"tensors": {1: descriptor([1], [0, 4])}}), bytes(4)),
            "tensors key 1 is not a string",
        ),
        (
            "metadata_past_eof.bpk",
            struct.pack("<IHI", 0x4255524E, 1, 1 << 20) + b"\xa0",
            "truncated file",
        ),
    ]
    return [Hostile(n, "bpk", d, e) for n, d, e in cases]


def _record_keys() -> list[Hostile]:
    def record(scalars: dict, metadata: dict | None = None) -> bytes:
        meta = {"tensors": {}, "metadata": metadata or {"optimizer": "Adam"}, "scalars": scalars}
        return burnpack(cbor(meta))

    uint = {"UInt": 1}
    cases = [
        ("scalar_key_int.bpk", record({5: uint}), "scalars key 5 is not a string"),
        ("scalar_key_bool.bpk", record({True: uint}), "scalars key True is not a string"),
        ("rank_key_superscript.bpk", record({"².__rank": uint}), "².__rank: not a param id's rank"),
        (
            "rank_key_arabic_indic.bpk",
            record({"٣.__rank": uint}),
            "٣.__rank: not a param id's rank",
        ),
        (
            "rank_key_5000_digits.bpk",
            record({"9" * 5000 + ".__rank": uint}),
            "not a param id's rank",
        ),
        (
            "rank_key_over_u64.bpk",
            record({"99999999999999999999.__rank": uint}),
            "not a param id's rank",
        ),
        ("metadata_key_int.bpk", record({}, {7: "x"}), "metadata key 7 is not a string"),
        (
            "kind_1mb.bpk",
            record({}, {"optimizer": "A" * (1 << 20)}),
            "the file holds unknown optimizer kind 'AAAA",
        ),
        ("control_empty_adam.bpk", record({}), None),
    ]
    return [Hostile(n, "optim", d, e) for n, d, e in cases]


def hostile_files(canary: str) -> list[Hostile]:
    """Every hostile file; `canary` is the path a malicious global would create."""
    return [
        *_code_execution(canary),
        *_zip_bombs(),
        *_shapes(),
        *_safetensors(),
        *_cbor_tricks(),
        *_record_keys(),
    ]


# ---- the child: load each file, report each outcome --------------------------------------------


def _touch(array) -> None:
    """Read a few elements (a strided view of 2**40 elements must not be copied whole)."""
    array.flat[:64].copy()


def _load(reader: str, path: str) -> type[Exception]:
    """Load `path` with `reader`; returns the importer's error type (what a failure must be)."""
    from harness.engine import Device, LinearConfig
    from harness.engine.optim import AdamConfig, load_optimizer
    from harness.engine.optim.burnpack import BurnpackError, read_pack
    from harness.engine.optim.records import RecordError
    from harness.engine.store import PytorchStore, SafetensorsStore, StoreError

    if reader in ("pt", "safetensors"):
        store = (PytorchStore if reader == "pt" else SafetensorsStore).from_file(path)
        for snapshot in store.get_all_snapshots().values():
            _touch(snapshot.to_data())
        store.allow_partial(True).apply_to(LinearConfig(2, 2).init(Device.flex()))
        return StoreError
    if reader == "bpk":
        for t in read_pack(path).tensors:
            _touch(t.array)
        return BurnpackError
    load_optimizer(AdamConfig().init(), path)
    return RecordError


def _error_type(reader: str) -> type[Exception]:
    from harness.engine.optim.burnpack import BurnpackError
    from harness.engine.optim.records import RecordError
    from harness.engine.store import StoreError

    return {
        "pt": StoreError,
        "safetensors": StoreError,
        "bpk": BurnpackError,
        "optim": RecordError,
    }[reader]


def main(manifest: str) -> None:
    import resource

    import safetensors  # noqa: F401

    import harness.engine
    import harness.engine.optim.records  # noqa: F401

    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes = {}
    for name, reader, path in json.loads(Path(manifest).read_text()):
        expected = _error_type(reader)
        try:
            _load(reader, path)
            outcomes[name] = {"outcome": "ok"}
        except expected as exc:
            outcomes[name] = {"outcome": "error", "message": str(exc)}
        except BaseException as exc:
            outcomes[name] = {
                "outcome": "crash",
                "message": f"{type(exc).__name__}: {str(exc)[:300]}",
            }
        outcomes[name]["peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # so far
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    json.dump({"baseline_kib": baseline, "peak_kib": peak, "outcomes": outcomes}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
