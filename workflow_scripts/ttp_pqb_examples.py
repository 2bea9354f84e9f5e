"""Rule ttp_pqb_examples: one TTP-on-PQB example set (PQB's chosen query pairs with the user's
review history, or without it), and the domain's items."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.on_pqb import build_set


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--set", required=True, help="PQB-<domain> or PQB-<domain>-nohistory")
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--reviews", required=True)
    ap.add_argument("--products", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--train-examples", default=None, help="TTP's examples of the same domain")
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_pqb_examples")
    build_set(
        benchmark=args.benchmark,
        reviews=args.reviews,
        products=args.products,
        meta=args.meta,
        name=args.set,
        ttp=args.params,
        seed=args.seed,
        train_examples=args.train_examples,
        examples_out=args.examples,
        items_out=args.items,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
