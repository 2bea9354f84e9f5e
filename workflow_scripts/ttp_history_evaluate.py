"""Rule ttp_history_evaluate: Recall@20 per test set and history length (Figure 6's values)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.history_sweep import evaluate_sweep


def _run_spec(text: str) -> tuple[int, str, str]:
    n, ex_set, path = text.split(":", 2)
    return int(n), ex_set, path


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--examples", nargs="+", required=True, help="the sets' main examples")
    ap.add_argument("--runs", nargs="+", type=_run_spec, required=True, help="N:SET:PATH")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="{evaluation} of ttp")
    ap.add_argument("--per-query", required=True)
    ap.add_argument("--figure6", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_history_evaluate")
    evaluate_sweep(
        examples_paths=args.examples,
        runs=args.runs,
        ttp_eval=args.params["evaluation"],
        seed=args.seed,
        per_query_out=args.per_query,
        figure6_out=args.figure6,
        log=log.info,
    )


if __name__ == "__main__":
    main()
