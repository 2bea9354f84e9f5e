"""Rule queries_tables: datasheet (Table 1 columns), filter report, identifiability; CSV + LaTeX.

Exits non-zero when the identifiability check is on and the share is below its minimum.
"""

import sys

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.queries.tables import IdentifiabilityCheckError, run_tables

INPUTS = ("benchmarks", "select_reports", "filter_reports", "syntax_profiles", "syntax_embeddings")
OUTPUTS = (
    "datasheet_csv",
    "datasheet_tex",
    "filters_csv",
    "filters_tex",
    "identifiability_csv",
    "identifiability_tex",
)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    for name in INPUTS:
        ap.add_argument("--" + name.replace("_", "-"), nargs="+", required=True)
    for name in OUTPUTS:
        ap.add_argument("--" + name.replace("_", "-"), required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--label", required=True)
    args = ap.parse_args()
    log = setup_logging("queries_tables")
    try:
        run_tables(
            args.domains,
            {k: getattr(args, k) for k in INPUTS},
            {k: getattr(args, k) for k in OUTPUTS},
            args.params,
            args.label,
        )
    except IdentifiabilityCheckError as exc:
        log.error("%s", exc)
        sys.exit(1)


if __name__ == "__main__":
    main()
