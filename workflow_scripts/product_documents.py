"""Rule product_documents: meta Parquet -> product documents with core terms."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_parquet
from personalir.data.products import ProductRules, build_product_table


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("product_documents")
    table, report = build_product_table(
        read_parquet_table(args.meta), ProductRules.from_config(args.params)
    )
    write_parquet(args.output, table)
    write_json(args.report, report)
    log.info(
        "%d products, %d with core terms, %d excluded (too few attributes)",
        report["products"],
        report["eligible"],
        report["excluded_too_few_attributes"],
    )


if __name__ == "__main__":
    main()
