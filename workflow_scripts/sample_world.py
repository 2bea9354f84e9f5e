"""Rule sample_world: write the synthetic embedded world of one domain and its search log."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.data.sample_world import (
    ConfusabilityParams,
    SearchLogParams,
    build_world,
    write_search_log,
    write_world,
)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `sample` config section")
    ap.add_argument("--reviews", required=True, help="<Domain>.jsonl")
    ap.add_argument("--meta", required=True, help="meta_<Domain>.jsonl")
    ap.add_argument("--truth", required=True, help="planted_truth.json")
    ap.add_argument("--search-log", required=True, help="search_log.jsonl")
    ap.add_argument("--search-log-report", required=True, help="search_log.report.json")
    args = ap.parse_args()
    log = setup_logging("sample_world")
    p = args.params
    world = build_world(
        args.domain,
        seed=args.seed,
        scale=p["scale"],
        n_products=p["n_products"],
        n_users=p["n_users"],
        min_sentences_per_user=p["min_sentences_per_user"],
        confusability=ConfusabilityParams.from_config(p["confusability"]),
    )
    counts = write_world(world, reviews=args.reviews, meta=args.meta, truth=args.truth)
    log.info("%s: %s", args.domain, counts)
    report = write_search_log(
        world,
        SearchLogParams.from_config(p["search_log"]),
        args.seed,
        log_path=args.search_log,
        report_path=args.search_log_report,
    )
    log.info("search log: %s", report)


if __name__ == "__main__":
    main()
