"""Do two machines compute the same floats? Hashes of common float32 CPU kernels' results.

Runs a fixed set of torch (and numpy) kernels on fixed inputs, once with this project's CPU
pins (``personalir.common.numerics.ISA_PINS``) and once without (``PERSONALIR_CPU_ISA=native``),
each in a fresh process (the libraries read the switches when they load), and prints one
JSON line per setting: a short sha256 of each kernel's output bytes, the kernel level torch
chose, and the CPU. Run it on two machines and compare the lines: equal hashes mean
bit-identical results.

    python benchmarks/probe_cpu_kernels.py [--threads 1 4]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess  # nosec B404  # runs this file with an argv list, no shell
import sys


def probe(threads: int) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)

    def randn(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    a_np, b_np = randn(257, 384), randn(384, 385)
    a, b = torch.from_numpy(a_np), torch.from_numpy(b_np)
    x = torch.from_numpy(randn(4, 64, 384))
    w = torch.from_numpy(randn(1536, 384)) * 0.05
    q = torch.from_numpy(randn(4, 6, 64, 64))
    ops = {
        "mm": lambda: a @ b,
        "linear": lambda: F.linear(x, w),
        "bmm": lambda: torch.bmm(x, x.transpose(1, 2)),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q),
        "layer_norm": lambda: F.layer_norm(x, (384,)),
        "softmax": lambda: torch.softmax(x * 3, -1),
        "gelu": lambda: F.gelu(x),
        "silu": lambda: F.silu(x),
        "exp": lambda: torch.exp(x),
        "sum": lambda: x.sum(-1),
        "normalize": lambda: F.normalize(x, dim=-1),
        "numpy_matmul": lambda: torch.from_numpy(a_np @ b_np),
    }
    out = {}
    with torch.no_grad():
        for name, fn in ops.items():
            data = fn().contiguous().numpy().tobytes()
            out[name] = hashlib.sha256(data).hexdigest()[:12]
    return {
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "threads": threads,
        "hashes": out,
    }


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(probe(args.child)))
        return 0
    from personalir.common.numerics import ISA_PINS, OPT_OUT, pin_cpu_isa

    print(f"cpu: {cpu_name()}")
    for setting in ("pinned", "native"):
        env = {k: v for k, v in os.environ.items() if k not in ISA_PINS and k != OPT_OUT}
        if setting == "pinned":
            pins = pin_cpu_isa(env)
        else:
            env[OPT_OUT] = "native"
            pins = {}
        for threads in args.threads:
            proc = subprocess.run(  # nosec B603  # this interpreter and file, no shell
                [sys.executable, __file__, "--child", str(threads)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            print(json.dumps({"setting": setting, "pins": pins, **row}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
