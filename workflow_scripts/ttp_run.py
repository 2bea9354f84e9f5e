"""Rule ttp_run: one method's TREC run on one example set's test queries."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.runs import run_method


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--method", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--models", type=json_arg, required=True, help="role -> model")
    ap.add_argument("--rewrites", default=None, help="the ttp run's info JSON (decoupled)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--run", required=True)
    ap.add_argument("--info", required=True)
    ap.add_argument("--model-cache", default="", help="dequantised GGUF models ('': none)")
    ap.add_argument("--encoding-cache", default="", help="shared item encodings ('': none)")
    args = ap.parse_args()
    log = setup_logging("ttp_run")
    run_method(
        method=args.method,
        examples_path=args.examples,
        items_path=args.items,
        ttp=args.params,
        models=args.models,
        rewrites_path=args.rewrites or None,
        seed=args.seed,
        threads=args.threads,
        run_out=args.run,
        info_out=args.info,
        model_cache=args.model_cache or None,
        encoding_cache=args.encoding_cache or None,
        log=log.info,
    )


if __name__ == "__main__":
    main()
