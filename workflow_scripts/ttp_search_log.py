"""Rule ttp_search_log: the sample world's search log (each search ends in a purchase)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_json
from personalir.ttp.search_log import SearchLogParams, generate_search_log


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--sample", type=json_arg, required=True, help="the `sample` config section")
    ap.add_argument("--params", type=json_arg, required=True, help="ttp.search_log")
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_search_log")
    report = generate_search_log(
        args.output,
        args.domain,
        seed=args.seed,
        params=SearchLogParams.from_config(args.params),
        scale=args.sample["scale"],
        n_products=args.sample["n_products"],
        n_users=args.sample["n_users"],
        min_sentences_per_user=args.sample["min_sentences_per_user"],
    )
    write_json(args.report, report)
    log.info("%s", report)


if __name__ == "__main__":
    main()
