"""Rule ttp_evaluate: measures per query, means with bootstrap CIs, the methods' labels."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.evaluate import evaluate


def _run_spec(text: str) -> tuple[str, str, str]:
    ex_set, method, path = text.split(":", 2)
    return ex_set, method, path


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--examples", nargs="+", required=True)
    ap.add_argument("--runs", nargs="+", type=_run_spec, required=True, help="SET:METHOD:PATH")
    ap.add_argument("--infos", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--per-query", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--labels", required=True, help="output: method -> display label")
    args = ap.parse_args()
    log = setup_logging("ttp_evaluate")
    evaluate(
        examples_paths=args.examples,
        runs=args.runs,
        infos=args.infos,
        ttp=args.params,
        seed=args.seed,
        per_query_out=args.per_query,
        summary_out=args.summary,
        labels_out=args.labels,
        log=log.info,
    )


if __name__ == "__main__":
    main()
