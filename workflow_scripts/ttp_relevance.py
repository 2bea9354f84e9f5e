"""Rule ttp_relevance: one method's history-free Spearman on one set's Relevance pairs."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.runs import relevance_method


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--method", required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--models", type=json_arg, required=True, help="role -> model folder")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the method's ttp sections")
    ap.add_argument("--model-cache", default="")
    ap.add_argument("--encoding-cache", default="")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_relevance")
    try:
        relevance_method(
            method=args.method,
            pairs_path=args.pairs,
            items_path=args.items,
            ttp=args.params,
            models=args.models,
            seed=args.seed,
            threads=args.threads,
            out=args.output,
            model_cache=args.model_cache or None,
            encoding_cache=args.encoding_cache or None,
            log=log.info,
        )
    except ValueError as exc:
        raise SystemExit(f"ttp_relevance: {exc}") from None


if __name__ == "__main__":
    main()
