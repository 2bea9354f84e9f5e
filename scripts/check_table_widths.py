"""Is every table of the paper PDFs legible at 100% zoom? Measure them and say.

    python scripts/check_table_widths.py                       # results/ of this checkout
    python scripts/check_table_widths.py --results /other/results --min-scale 0.85

Compiles each manuscript (paper/pqb/main.tex, paper/ttp/main.tex) against the results
folder's ``paper/generated/`` inputs with a width probe
(:mod:`personalir.report.table_widths`) and prints, per table, its natural width, the line
width and the scale it is printed at, then every breach of the criterion: a table shrunk
below ``--min-scale`` of its natural size, a table or a text line running past the margin.
Exit 1 when there is one. Needs only pdflatex; writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from personalir.report.table_widths import MIN_SCALE, measure, problems  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "results"), help="results folder")
    ap.add_argument("--min-scale", type=float, default=MIN_SCALE)
    ap.add_argument("--tex", nargs="+", default=["paper/pqb/main.tex", "paper/ttp/main.tex"])
    args = ap.parse_args()
    generated_root = Path(args.results) / "paper"
    if not (generated_root / "generated").is_dir():
        print(f"no paper/generated/ under {args.results}", file=sys.stderr)
        return 2
    failed = False
    for tex in args.tex:
        main_tex = ROOT / tex
        readings, overfull = measure(
            main_tex, [generated_root, main_tex.parent, main_tex.parent.parent]
        )
        print(f"== {tex}")
        for r in readings:
            print(
                f"  {r.file:32s} table {r.table:5s} natural {r.natural:6.1f}pt "
                f"line {r.line:5.1f}pt scale {r.scale:4.2f}"
            )
        found = problems(readings, overfull, min_scale=args.min_scale)
        for line in found:
            print(f"  PROBLEM {line}")
        failed |= bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
