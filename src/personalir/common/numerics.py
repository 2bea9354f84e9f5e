"""The same float arithmetic on any x86-64 machine: CPU kernels pinned to AVX2.

torch, Intel MKL (torch's BLAS on x86-64), oneDNN and OpenBLAS (numpy's BLAS) each pick their
vector kernels by the CPU they run on. An AVX512 machine then rounds a matrix product, a
softmax or an attention differently from an AVX2 one, and everything trained or ranked
downstream moves a little: the recorded results of one machine are not those of another.
Each library has a switch that caps its choice; :data:`ISA_PINS` sets all four to AVX2, which
every x86-64 server CPU of the last decade has (Haswell, 2013; Zen, 2017).

Measured: float32 matrix products (``mm``, ``bmm``, ``linear``), ``scaled_dot_product_attention``,
``layer_norm``, ``softmax``, ``gelu``, ``silu``, sums and norms gave bit-identical results on an
AMD EPYC (AVX2) and an Intel Xeon (AVX512) with these pins, and different ones without them
(``benchmarks/probe_cpu_kernels.py``). Not covered: onnxruntime's MLAS kernels (the packaged
grammar corrector) have no such switch.

The Snakefile applies the pins before any job starts, so every job inherits them; the test
suite applies them before it imports torch. A variable already set is left as it is, and
``PERSONALIR_CPU_ISA=native`` leaves all four unset (each library then takes the fastest
kernels of the machine, and results may differ between machines).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

#: Environment switches, read by each library when it loads or first dispatches.
ISA_PINS = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    "MKL_CBWR": "AVX2,STRICT",  # MKL's conditional numerical reproducibility (BLAS, VML)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's mkldnn kernels)
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's OpenBLAS
}
OPT_OUT = "PERSONALIR_CPU_ISA"


def cpu_has_avx2(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> bool | None:
    """Whether the CPU lists the ``avx2`` flag (None where /proc/cpuinfo is not readable)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return "avx2" in line.split(":", 1)[-1].split()
    return None


def pin_cpu_isa(
    environ: MutableMapping[str, str] | None = None, *, has_avx2: bool | None = None
) -> dict[str, str]:
    """Set :data:`ISA_PINS` in ``environ`` (default: this process's environment) where unset.

    Returns the pins in force afterwards (empty when opted out or the CPU lacks AVX2: a pin
    above what the CPU has would ask some libraries for kernels it cannot run).
    """
    env = os.environ if environ is None else environ
    if env.get(OPT_OUT, "").strip().lower() == "native":
        return {}
    if has_avx2 is None:
        has_avx2 = cpu_has_avx2()
    if has_avx2 is False:
        return {}
    for name, value in ISA_PINS.items():
        env.setdefault(name, value)
    return {name: env[name] for name in ISA_PINS}
