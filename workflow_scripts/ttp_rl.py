"""Rule ttp_rl: GRPO alignment of the TTP model (one RL variant) from the SFT adapter."""

import _bootstrap  # noqa: F401
from personalir.common.cli import (
    json_arg,
    output_folder,
    parser,
    require_written,
    setup_logging,
)
from personalir.ttp.training.jobs import run_grpo

# The files of the variant's folder that the rule tracks (checkpoints/ stays untracked).
OUTPUTS = {
    "adapter": "adapter/adapter_config.json",
    "adapter_weights": "adapter/adapter_model.safetensors",
    "log": "log.json",
}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--sft-adapter", required=True, help="the SFT adapter folder")
    ap.add_argument("--sft", nargs="+", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--examples", nargs="+", required=True, help="validation examples' sets")
    ap.add_argument("--selection-from", help="the report of the variant whose step count to use")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    for name in OUTPUTS:
        option = name.replace("_", "-")
        ap.add_argument(f"--{option}", required=True, help=f"output: {OUTPUTS[name]}")
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_rl")
    named = {name: getattr(args, name) for name in OUTPUTS}
    run_grpo(
        backbone=args.backbone,
        sft_adapter=args.sft_adapter,
        sft_paths=args.sft,
        items_paths=args.items,
        examples_paths=args.examples,
        selection_from=args.selection_from,
        ttp=args.params,
        variant=args.variant,
        seed=args.seed,
        out_dir=output_folder(named, OUTPUTS),
        report_out=args.report,
        log_out=args.log,
        threads=args.threads,
        log=log.info,
    )
    require_written(named)


if __name__ == "__main__":
    main()
