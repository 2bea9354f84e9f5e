"""Rule ttp_dense_ft: contrastive fine-tuning of a dense baseline's bi-encoder."""

import _bootstrap  # noqa: F401
from personalir.common.cli import (
    json_arg,
    output_folder,
    parser,
    require_written,
    setup_logging,
)
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.training.dense_ft import fine_tune_dense

# The files of the fine-tuned model folder that the rule tracks.
OUTPUTS = {"model": "config.json", "weights": "model.safetensors"}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument(
        "--variant",
        required=True,
        choices=[
            n
            for n in PERSONAL_RETRIEVERS.names()
            if (m := PERSONAL_RETRIEVERS.get(n).trained_model) and m.rule == "ttp_dense_ft"
        ],
        help="the method whose bi-encoder is trained (its class gives the training text)",
    )
    ap.add_argument("--examples", nargs="+", required=True)
    ap.add_argument(
        "--rewrites", nargs="*", default=[], help="decoupled: the rewriter's rewrites per set"
    )
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    for name in OUTPUTS:
        ap.add_argument(f"--{name}", required=True, help=f"output: {OUTPUTS[name]}")
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_dense_ft")
    named = {name: getattr(args, name) for name in OUTPUTS}
    method = PERSONAL_RETRIEVERS.get(args.variant)
    fine_tune_dense(
        variant=args.variant,
        query_text=method.query_text,
        uses_history=method.uses_history,
        needs_rewrites=method.needs_rewrites,
        examples_paths=args.examples,
        items_paths=args.items,
        ttp=args.params,
        seed=args.seed,
        out_dir=output_folder(named, OUTPUTS),
        report_out=args.report,
        threads=args.threads,
        rewrites_paths=args.rewrites,
        log=log.info,
    )
    require_written(named)


if __name__ == "__main__":
    main()
