"""The numerics profile: which SIMD, BLAS and math-library code paths a run uses, pinned so
that the same case gives the same bits on every CPU of a class, not only on the CPU where its
goldens were written.

What decides the last bits of a float result on a CPU, besides the code and the versions:

- numpy's SIMD dispatch (``NPY_DISABLE_CPU_FEATURES``; read when numpy is imported). An AVX-512
  CPU runs other float32 ``exp``/``log``/``tanh`` kernels than an AVX2 one, and float64
  transcendentals fall back to libm below AVX-512. numpy 2.4 does not disable a feature's
  successors with it: ``X86_V4`` alone leaves ``AVX512_ICL`` and ``AVX512_SPR`` enabled (seen
  in ``__cpu_features__``), so the profile names all three.
- torch's ATen kernels (``ATEN_CPU_CAPABILITY``; ``torch.backends.cpu.get_cpu_capability()``).
- MKL, torch's BLAS and its vector math: ``torch.sqrt``, ``exp``, ``log``, ``tanh`` and ``erf``
  of contiguous float tensors are MKL VML calls (``aten/src/ATen/cpu/vml.h``), and their bits
  change with MKL's code branch (``MKL_CBWR``). Intel documents every branch but ``AUTO`` and
  ``COMPATIBLE`` as available on Intel processors only: on an AMD CPU ``MKL_CBWR=AVX2``
  silently runs ``AUTO`` (oneMKL developer guide, "Getting Started with Conditional Numerical
  Reproducibility"), so ``COMPATIBLE`` is the one branch Intel documents for both vendors. It
  is not the same code on both: measured on an AMD EPYC (Zen 3, family 25 model 1),
  ``torch.sqrt``/``exp`` of 1e6 float32 give the same bits under COMPATIBLE, AVX2, AUTO and
  unset (VML ignores the branch there), and the Adam cases' torch sides written on an Intel
  CPU (family 6 model 143) under COMPATIBLE differ there by up to a few thousand ULP after
  20 steps (decoder_lm, optimizer_state, optimizer_trajectories, param_groups, seq2seq,
  transformer_train; the other 29 cases and every engine side bit-identical). So the record
  names the CPU vendor (``cpu_vendor``) even under a profile. On Intel COMPATIBLE costs
  accuracy: ``torch.sqrt`` is then off by one ULP on 15% of float32 inputs (``AVX2``: 0%).
- oneDNN, torch's convolutions (``ONEDNN_MAX_CPU_ISA``), and OpenBLAS, numpy's BLAS
  (``OPENBLAS_CORETYPE``; read when numpy loads it). Both dispatch on the ISA, not the vendor.
- glibc's libm picks FMA variants of ``exp``, ``log``, ``sin``, ``pow`` on a CPU with FMA and
  AVX2 (ifuncs; ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA`` turns them off), and not AVX-512
  ones: every x86-64-v3 CPU runs the same libm code for a given glibc version.

A profile sets these variables before numpy and torch load (``enter``; a program that has not
parsed its options yet calls ``harness.project.enter_numerics``); a process that imported
either already cannot change them, and then runs as it is (``in_force`` records what held).
``portable`` chooses the profile of this machine's class: ``x86-64-v3`` on an x86-64 CPU with
AVX2 and FMA, ``x86-64-v2`` below that; other machines (arm64) have none yet and run native.
``native`` sets nothing. The record of what held goes into every side file's ``env``
(``harness.environment``) and is part of the golden fingerprint.

This module imports nothing beyond the standard library: it runs before numpy is imported.
"""

from __future__ import annotations

import functools
import os
import platform
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CHOICES = ("portable", "native")
DEFAULT = "portable"
# Set with a profile's variables, so that a child process (or a later check in this one) can
# tell a profile's settings from the same values set by hand.
MARKER = "CONFORMANCE_NUMERICS"


@dataclass(frozen=True)
class Profile:
    """A named set of environment variables, each pinning one library's code path."""

    name: str
    about: str
    env: Mapping[str, str]
    torch_capability: str  # what torch.backends.cpu.get_cpu_capability() reports under it

    @property
    def numpy_off(self) -> tuple[str, ...]:
        """numpy dispatch targets that are off once the profile is in force."""
        return tuple(self.env["NPY_DISABLE_CPU_FEATURES"].split())


X86_64_V3 = Profile(
    name="x86-64-v3",
    about="x86-64 with AVX2 and FMA (Haswell and Zen or newer): AVX2 code paths everywhere, "
    "MKL's vendor-neutral COMPATIBLE branch",
    env={
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
    },
    torch_capability="AVX2",
)

X86_64_V2 = Profile(
    name="x86-64-v2",
    about="x86-64 below AVX2 (SSE4.2): baseline code paths, libm without FMA",
    env={
        "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OPENBLAS_CORETYPE": "Nehalem",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA",
    },
    torch_capability="DEFAULT",
)

PROFILES = {p.name: p for p in (X86_64_V3, X86_64_V2)}

# The CPUs emulated on this one, as a CPU of each class runs natively: `make emulated-cpus`
# compares every case under both, and `make bench` times every target under "avx2" too (its
# column "AVX2"). The Makefile reads them from `python -m harness.numerics NAME`. An AVX2 CPU
# runs the profile's kernels but MKL's AVX2 branch, as Intel's AVX2 CPUs do under AUTO (the
# portable profile pins the vendor-neutral COMPATIBLE branch for the bits, not for speed);
# the baseline CPU is the x86-64-v2 profile itself.
EMULATED_CPUS: dict[str, Mapping[str, str]] = {
    "avx2": {**X86_64_V3.env, "MKL_CBWR": "AVX2"},
    "baseline": X86_64_V2.env,
}
AVX512 = ("X86_V4", "AVX512_ICL", "AVX512_SPR")  # numpy's AVX-512 targets, all off in "avx2"
# Every variable some profile sets: what the record reports, and what `native` clears when a
# parent process's profile left them behind.
VARIABLES = tuple(dict.fromkeys(k for p in PROFILES.values() for k in p.env))
# The CPU flags (Linux /proc/cpuinfo names) that x86-64-v3 code needs.
_V3_FLAGS = ("avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm")


class NumericsError(ValueError):
    """An unknown profile choice; ``str()`` names where it came from."""


def portable_profile(flags: frozenset[str] | None = None) -> Profile | None:
    """The profile ``portable`` means on this machine (None: there is none, run native)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    flags = cpu_flags() if flags is None else flags
    return X86_64_V3 if all(f in flags for f in _V3_FLAGS) else X86_64_V2


def resolve(choice: str, *, where: str = "--numerics") -> Profile | None:
    """The profile for ``portable``, ``native`` (None) or a profile's own name."""
    if choice == "native":
        return None
    if choice == "portable":
        return portable_profile()
    if choice in PROFILES:
        return PROFILES[choice]
    known = ", ".join((*CHOICES, *PROFILES))
    raise NumericsError(f"{where}: unknown numerics {choice!r} (known: {known})")


@dataclass(frozen=True)
class Entry:
    """What ``enter`` did: the profile asked for, and a sentence when it could not be set."""

    choice: str
    profile: Profile | None
    problem: str | None = None


def enter(choice: str, *, where: str = "--numerics") -> Entry:
    """Put the profile of ``choice`` in force for this process and its children.

    Before numpy and torch are imported, the variables are set (``native`` removes those a
    parent process's profile left, keeping any set by hand). Afterwards nothing can change:
    the returned ``problem`` says so unless the profile is already in force.
    """
    profile = resolve(choice, where=where)
    wanted = dict(profile.env) if profile else {}
    inherited = _inherited_profile()
    remove = [k for k in (inherited.env if inherited else ()) if k not in wanted]
    already = all(os.environ.get(k) == v for k, v in wanted.items()) and not remove
    name = profile.name if profile else "native"
    if already and os.environ.get(MARKER, "native") == name:
        os.environ[MARKER] = name  # for the children (xdist's workers): they follow this choice
        return Entry(choice, profile)
    loaded = [m for m in ("numpy", "torch") if m in sys.modules]
    if loaded:
        problem = (
            f"numerics {name} requested, but {' and '.join(loaded)}"
            f" {'was' if len(loaded) == 1 else 'were'} imported before it could be set:"
            " this run keeps the settings it started with"
        )
        return Entry(choice, profile, problem)
    for key in remove:
        os.environ.pop(key, None)
    os.environ.update(wanted)
    os.environ[MARKER] = name
    return Entry(choice, profile)


def choose(given: str | None, configured: str) -> str:
    """The numerics to enter: the command line's, else what a parent process entered (its
    children, xdist's workers among them, run as it does), else the project's setting."""
    return given or os.environ.get(MARKER) or configured


def choice_in(args: Sequence[str]) -> str | None:
    """The value of ``--numerics X`` / ``--numerics=X`` in a command line (None: not given)."""
    for i, arg in enumerate(args):
        if arg == "--numerics" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--numerics="):
            return arg.split("=", 1)[1]
    return None


def in_force() -> dict:
    """What decides the bits in this process now: the profile (if every part of it holds),
    numpy's enabled dispatch targets, torch's CPU capability, MKL's branch, oneDNN's ISA
    limit, libm, the CPU vendor (MKL's code differs by vendor under any branch); and the CPU
    model where no profile holds (native dispatch follows it).

    OpenBLAS's kernel is in the environment's ``blas`` entry (threadpoolctl reports it).
    Imports numpy (and reads torch's capability only if torch is imported already).
    """
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    numpy_on = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    torch_cap = _torch_capability()
    marked = PROFILES.get(os.environ.get(MARKER, ""))
    holds = (
        marked is not None
        and all(os.environ.get(k) == v for k, v in marked.env.items())
        and not set(marked.numpy_off) & set(numpy_on)
        and torch_cap in (None, marked.torch_capability)
    )
    record = {
        "profile": marked.name if holds else "native",
        "numpy_dispatch": numpy_on,
        "torch_cpu_capability": torch_cap,
        "mkl_cbwr": os.environ.get("MKL_CBWR", "AUTO"),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL"),
        "libm": _libm(),
        "cpu_vendor": _cpu_vendor(),
    }
    if not holds:
        record["cpu"] = _cpu_model()
    return record


def describe(record: Mapping | None) -> str:
    """One phrase for a ``numerics`` record, for messages: 'x86-64-v3 (numpy X86_V3, ...)'."""
    if not isinstance(record, Mapping):
        return "unrecorded (written before numerics were recorded)"
    numpy_on = " ".join(record.get("numpy_dispatch") or []) or "baseline"
    parts = [
        f"numpy {numpy_on}",
        f"torch {record.get('torch_cpu_capability')}",
        f"MKL {record.get('mkl_cbwr')}"
        + (f" on {record['cpu_vendor']}" if record.get("cpu_vendor") else ""),
        f"oneDNN {record.get('onednn_max_cpu_isa')}",
        str(record.get("libm")),
    ]
    if record.get("cpu"):
        parts.append(str(record["cpu"]))
    return f"{record.get('profile')} ({', '.join(parts)})"


def _inherited_profile() -> Profile | None:
    """The profile a parent process set here (its marker, and every one of its values)."""
    marked = PROFILES.get(os.environ.get(MARKER, ""))
    if marked and all(os.environ.get(k) == v for k, v in marked.env.items()):
        return marked
    return None


def _torch_capability() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return str(torch.backends.cpu.get_cpu_capability())


def _libm() -> str:
    lib, version = platform.libc_ver()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    hwcaps = [t for t in tunables.split(":") if t.startswith("glibc.cpu.hwcaps=")]
    text = f"{lib or 'libc'} {version or 'unknown'}"
    return f"{text} {hwcaps[0]}" if hwcaps else text


@functools.cache  # read once per process: every side file's env asks (native runs)
def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        found[key.strip()] = value.strip()
    return found


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux names them (empty where /proc/cpuinfo is absent)."""
    return frozenset(_cpuinfo().get("flags", "").split())


def _cpu_model() -> str:
    """Vendor, family and model: what native dispatch (MKL's AUTO branch above all) follows."""
    info = _cpuinfo()
    if not info:
        return platform.machine() or "unknown"
    return f"{_cpu_vendor()} family {info.get('cpu family', '?')} model {info.get('model', '?')}"


def _cpu_vendor() -> str:
    """The CPU's vendor (``AuthenticAMD``, ``GenuineIntel``), or the machine where Linux names
    none: MKL chooses its code by it under any ``MKL_CBWR`` branch."""
    return _cpuinfo().get("vendor_id") or platform.machine() or "unknown"


def shell_assignments(env: Mapping[str, str]) -> str:
    """``K=V`` words for ``env`` on a shell command line, each value quoted."""
    return " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())


if __name__ == "__main__":  # `python -m harness.numerics avx2`: the Makefile's emulated CPUs
    if len(sys.argv) != 2 or sys.argv[1] not in EMULATED_CPUS:
        sys.exit(f"usage: python -m harness.numerics {'|'.join(EMULATED_CPUS)}")
    print(shell_assignments(EMULATED_CPUS[sys.argv[1]]))
