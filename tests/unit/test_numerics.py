"""CPU kernel pins (personalir.common.numerics): which variables, when, and that torch obeys."""

from __future__ import annotations

import subprocess
import sys

from personalir.common.numerics import ISA_PINS, OPT_OUT, cpu_has_avx2, pin_cpu_isa


def test_pins_are_set_where_unset_and_kept_where_set():
    env = {"MKL_CBWR": "COMPATIBLE"}
    pins = pin_cpu_isa(env, has_avx2=True)
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["OPENBLAS_CORETYPE"] == "Haswell"
    assert env["MKL_CBWR"] == "COMPATIBLE"  # the user's own setting wins
    assert pins == {k: env[k] for k in ISA_PINS}


def test_native_opts_out_and_a_cpu_without_avx2_is_not_pinned():
    env = {OPT_OUT: "native"}
    assert pin_cpu_isa(env, has_avx2=True) == {} and set(env) == {OPT_OUT}
    env = {}
    assert pin_cpu_isa(env, has_avx2=False) == {} and env == {}


def test_avx2_flag_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    assert cpu_has_avx2(info) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx\n")
    assert cpu_has_avx2(info) is False
    assert cpu_has_avx2(tmp_path / "absent") is None


def test_a_pinned_process_runs_torch_on_avx2_kernels():
    """The pins reach torch's dispatcher (on an AVX512 machine this is the cap at work)."""
    env = {}
    if not pin_cpu_isa(env):
        return  # no AVX2 here: nothing is pinned
    import os

    proc = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env={**{k: v for k, v in os.environ.items() if k not in ISA_PINS}, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == "AVX2"
