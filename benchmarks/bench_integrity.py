"""What the integrity checks cost: Parquet page checksums (written and verified), the record
each write leaves, and the pre-run guard's hashing, against the same operations without them.

Every operation is timed in this process on the same data, the checked and the unchecked
variant interleaved, ``--repeats`` times each; the figures are medians of CPU seconds (which
other jobs on a shared machine disturb less than wall time) and their ratio.

- **ingest**: ``ingest_reviews`` of one sample-world domain (x``--scale``), whose output is
  written with page checksums and a write record, against the same ingest with both switched
  off (its Parquet writer without checksums, no record): the ratio is the step's slowdown;
- **read**: ``read_parquet_table`` (page checksums verified) against ``pyarrow.parquet.read_table``
  without verification, on the ingest output;
- **guard**: sha256 of a file, the pre-run guard's work per artifact a run reads, in MB/s.

    python benchmarks/bench_integrity.py --scale 1 --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import pyarrow.parquet as pq

from personalir.common import io
from personalir.data import ingest as ingest_mod
from personalir.data.sample_world import generate_domain

LIMIT = 1.05  # the bound: nothing slower by more than 5%


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


class _PlainWriter(pq.ParquetWriter):
    """ingest's Parquet writer as it was before page checksums."""

    def __init__(self, *args, **kwargs):
        kwargs["write_page_checksum"] = False
        super().__init__(*args, **kwargs)


def _paired(checked, plain, repeats: int) -> dict:
    a, b = [], []
    for _ in range(repeats):
        a.append(_cpu(checked))
        b.append(_cpu(plain))
    ma, mb = statistics.median(a), statistics.median(b)
    return {"checked_cpu_s": ma, "plain_cpu_s": mb, "ratio": ma / mb if mb else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="Musical_Instruments")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_integrity_") as name:
        tmp = Path(name)
        generate_domain(tmp / "world", args.domain, seed=7, scale=args.scale)
        src = tmp / "world" / f"{args.domain}.jsonl"
        out = tmp / "reviews.parquet"
        ingest_mod.ingest_reviews(src, out, policy="quarantine")  # warm-up, imports

        def checked_ingest():
            ingest_mod.ingest_reviews(src, out, policy="quarantine")

        def plain_ingest():
            # No page checksums, no write record: ingest as it was.
            with (
                mock.patch.object(ingest_mod.pq, "ParquetWriter", _PlainWriter),
                mock.patch.object(io, "record_written", lambda path: None),
            ):
                ingest_mod.ingest_reviews(src, out, policy="quarantine")

        rows = {"ingest": _paired(checked_ingest, plain_ingest, args.repeats)}
        rows["ingest"]["records"] = pq.read_metadata(out).num_rows
        rows["read"] = _paired(
            lambda: io.read_parquet_table(out),
            lambda: pq.read_table(out, page_checksum_verification=False),
            args.repeats * 3,
        )
        size = out.stat().st_size
        big = tmp / "big.bin"
        big.write_bytes(out.read_bytes() * max(1, (64 << 20) // size))
        seconds = statistics.median(_cpu(lambda: io.sha256_file(big)) for _ in range(3))
        rows["guard"] = {"sha256_mb_per_s": big.stat().st_size / 1e6 / seconds}
    print(f"{'step':8} {'checked CPU s':>14} {'plain CPU s':>12} {'ratio':>7}")
    worst = 1.0
    for step in ("ingest", "read"):
        r = rows[step]
        worst = max(worst, r["ratio"] or 1.0)
        print(f"{step:8} {r['checked_cpu_s']:14.4f} {r['plain_cpu_s']:12.4f} {r['ratio']:7.3f}")
    print(f"ingest: {rows['ingest']['records']} reviews")
    print(f"guard: sha256 at {rows['guard']['sha256_mb_per_s']:.0f} MB/s per artifact read")
    verdict = "OK" if worst <= LIMIT else "FAIL"
    print(f"{verdict}: worst ratio {worst:.3f} (bound {LIMIT})")
    if args.json:
        io.write_json(
            args.json, {"scale": args.scale, "repeats": args.repeats, **rows}, keep_timings=True
        )
    return 0 if verdict == "OK" else 1


if __name__ == "__main__":
    raise SystemExit(main())
