"""Rule retrieval_queries: a domain's PQB queries (ours or released), checked against the corpus."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.retrieval.pipeline import prepare_queries


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--source", choices=["benchmark", "released", "released-v0"], required=True)
    ap.add_argument("--source-path", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--unknown-products", choices=["error", "drop"], default="error")
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("retrieval_queries")
    report = prepare_queries(
        domain=args.domain,
        source=args.source,
        source_path=args.source_path,
        corpus_path=args.corpus,
        unknown_products=args.unknown_products,
        out_path=args.output,
        report_path=args.report,
    )
    log.info(
        "%s: %d queries in %d pairs (%d dropped)",
        args.domain,
        report["queries"],
        report["pairs"],
        report["queries_dropped"],
    )


if __name__ == "__main__":
    main()
