"""Rule retrieval_summary: every metric with bootstrap intervals, and paired tests."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.summary import (
    SummarySettings,
    load_frames,
    significance,
    summarize,
    write_csv,
)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--names", nargs="+", required=True)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument(
        "--metrics",
        nargs="+",
        required=True,
        help="per-query metric files, retriever-major (all domains of the first "
        "retriever, then the next)",
    )
    ap.add_argument(
        "--params",
        type=json_arg,
        required=True,
        help="{metrics, bootstrap, significance} of retrieval",
    )
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--significance", required=True)
    args = ap.parse_args()
    log = setup_logging("retrieval_summary")
    keys = [(n, d) for n in args.names for d in args.domains]
    if len(keys) != len(args.metrics):
        raise SystemExit(f"expected {len(keys)} metric files, got {len(args.metrics)}")
    frames = load_frames(dict(zip(keys, args.metrics, strict=True)))
    metrics = MetricSettings.from_config(args.params["metrics"])
    settings = SummarySettings.from_config(args.params, seed=args.seed)
    summary = summarize(frames, args.names, args.domains, metrics, settings)
    tests = significance(frames, args.names, args.domains, metrics, settings)
    write_csv(args.summary, summary)
    write_csv(args.significance, tests)
    log.info(
        "%d summary rows, %d tests (%d significant after Holm)",
        len(summary),
        len(tests),
        int(tests["significant"].sum()),
    )


if __name__ == "__main__":
    main()
