"""Rule errors_sampling_eval: five samplers' errors attributed to users (Top-1, MRR)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_text
from personalir.errors.stage import run_sampling_eval


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--edits", required=True)
    ap.add_argument("--words", required=True)
    ap.add_argument("--corrections", required=True)
    ap.add_argument("--products", default=None)
    ap.add_argument("--params", type=json_arg, required=True, help="the errors section")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--users", required=True, help="per-user outcomes (CSV)")
    args = ap.parse_args()
    log = setup_logging("errors_sampling_eval")
    products = read_parquet_table(args.products).to_pandas() if args.products else None
    table, users, info = run_sampling_eval(
        read_parquet_table(args.edits).to_pandas(),
        read_parquet_table(args.words).to_pandas(),
        read_parquet_table(args.corrections).to_pandas(),
        products,
        args.params,
        seed=args.seed,
        domain=args.domain,
    )
    write_text(args.csv, table.to_csv(index=False, lineterminator="\n", float_format="%.6f"))
    # Full precision: the tables resample these and must reproduce the per-sampler means.
    write_text(args.users, users.to_csv(index=False, lineterminator="\n"))
    write_json(args.json, info)
    log.info("\n%s", table.to_string(index=False))


if __name__ == "__main__":
    main()
