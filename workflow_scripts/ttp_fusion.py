"""Rule ttp_fusion: a history-fusion baseline (UIA or MAPs-style) trained on the frozen
query-only bi-encoder, its epoch chosen on the validation split."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, require_written, setup_logging
from personalir.ttp.training.fusion import KINDS, fit_fusion


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--kind", required=True, choices=KINDS)
    ap.add_argument("--examples", nargs="+", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--dense-model", required=True, help="the query-only bi-encoder (folder)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--model", required=True, help="output: <folder>/fusion.json")
    ap.add_argument("--weights", required=True, help="output: <folder>/fusion.safetensors")
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_fusion")
    from pathlib import Path

    folder = Path(args.model).parent
    if Path(args.weights).parent != folder:
        ap.error("--model and --weights must name files of the same folder")
    fit_fusion(
        kind=args.kind,
        examples_paths=args.examples,
        items_paths=args.items,
        dense_model=args.dense_model,
        ttp=args.params,
        seed=args.seed,
        threads=args.threads,
        out_dir=folder,
        report_out=args.report,
        log=log.info,
    )
    require_written({"model": args.model, "weights": args.weights})


if __name__ == "__main__":
    main()
