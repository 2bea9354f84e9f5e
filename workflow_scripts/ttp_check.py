"""Rule ttp_check: print OK / FAIL for each acceptance check; exit 1 on FAIL."""

import sys

import _bootstrap  # noqa: F401
from personalir.common.cli import parser
from personalir.common.io import read_json, write_text


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--acceptance", required=True)
    ap.add_argument("--enforce", choices=["true", "false"], required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    acc = read_json(args.acceptance)
    lines = []
    for c in acc["checks"]:
        status = "OK" if c["passed"] else "FAIL"
        detail = (
            f"{c['measure']}: {c['value_a']:.4f} vs {c['value_b']:.4f}, difference "
            f"{c['difference']:.4f} (paired 95% CI {c['diff_ci_low']:.4f}..{c['diff_ci_high']:.4f};"
            f" CI half-widths {c['ci_half_width_a']:.4f} / {c['ci_half_width_b']:.4f})"
            if "difference" in c
            else f"{c['measure']}: history {c['history_methods']} vs query-only "
            f"{c['query_only_methods']}"
        )
        lines.append(f"{status}  {c['check']}\n    {detail}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.enforce == "true" and not acc["passed"]:
        sys.exit(1)
    write_text(args.output, text)


if __name__ == "__main__":
    main()
