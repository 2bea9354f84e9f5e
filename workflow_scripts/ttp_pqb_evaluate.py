"""Rule ttp_pqb_evaluate: PQB's robustness metrics of personalised retrievers on PQB's query
pairs, with and without the user's history; the table's rows and the history effects."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.names import parse_set_name
from personalir.ttp.evaluation.on_pqb import evaluate
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--runs", nargs="+", required=True, help="SET:METHOD:PATH per run")
    ap.add_argument("--examples", nargs="+", required=True, help="the history sets' examples")
    ap.add_argument("--reports", nargs="+", required=True, help="every set's examples report")
    ap.add_argument("--methods", nargs="+", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--metrics", type=json_arg, required=True, help="`retrieval.metrics`")
    ap.add_argument("--samples", type=int, required=True, help="bootstrap resamples")
    ap.add_argument("--permutations", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    for name in ("summary", "table", "effects", "effects-md", "facts"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_pqb_evaluate")
    classes = {m: PERSONAL_RETRIEVERS.get(m) for m in args.methods}
    uses_history = {m: bool(c.uses_history) for m, c in classes.items()}
    runs = {}
    for spec in args.runs:
        set_name, method, path = spec.split(":", 2)
        domain, mode = parse_set_name(set_name)
        runs[(domain, method, mode if uses_history[method] else None)] = path
    examples = {}
    for path in args.examples:
        domain, _ = parse_set_name(path.rstrip("/").split("/")[-2])
        examples[domain] = path
    evaluate(
        runs=runs,
        examples=examples,
        set_reports=args.reports,
        methods=args.methods,
        labels={m: c.label for m, c in classes.items()},
        uses_history=uses_history,
        retrieval_metrics=args.metrics,
        ttp=args.params,
        seed=args.seed,
        samples=args.samples,
        permutations=args.permutations,
        out={
            "summary": args.summary,
            "table": args.table,
            "effects": args.effects,
            "effects_md": args.effects_md,
            "facts": args.facts,
        },
        log=log.info,
    )


if __name__ == "__main__":
    main()
