"""Rule retrieval_metrics: per-query ranks and measures of one retriever (Parquet per domain)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.pipeline import evaluate_runs


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="retrieval.metrics")
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--queries", nargs="+", required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--outputs", nargs="+", required=True)
    args = ap.parse_args()
    log = setup_logging("retrieval_metrics")
    frames = evaluate_runs(
        name=args.name,
        domains=args.domains,
        corpus_paths=args.corpus,
        query_paths=args.queries,
        run_paths=args.runs,
        meta_path=args.meta,
        settings=MetricSettings.from_config(args.params),
        out_paths=args.outputs,
    )
    for domain, frame in zip(args.domains, frames, strict=True):
        log.info("%s %s: %d queries evaluated", args.name, domain, len(frame))


if __name__ == "__main__":
    main()
