"""Rules ttp_sft, ttp_rewriter and ttp_embedder: LoRA SFT on every example set's teacher
targets (the TTP model; with --rewriter, Decoupled-Stage's rewriter, token loss only; with
--embedder, the LLM-embedding baseline: no history, no generation, InfoNCE only)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import (
    json_arg,
    output_folder,
    parser,
    require_written,
    setup_logging,
)
from personalir.ttp.training.jobs import run_sft

# The files of the training folder that the rule tracks (checkpoints/ stays untracked).
OUTPUTS = {
    "adapter": "adapter/adapter_config.json",
    "adapter_weights": "adapter/adapter_model.safetensors",
    "loss": "loss.json",
}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--sft", nargs="+", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--examples", nargs="+", required=True, help="validation examples' sets")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    for name in OUTPUTS:
        option = name.replace("_", "-")
        ap.add_argument(f"--{option}", required=True, help=f"output: {OUTPUTS[name]}")
    ap.add_argument("--report", required=True)
    ap.add_argument(
        "--rewriter", action="store_true", help="Decoupled-Stage's rewriter (token loss only)"
    )
    ap.add_argument(
        "--embedder",
        action="store_true",
        help="the LLM-embedding baseline (no history, no generation, InfoNCE only)",
    )
    args = ap.parse_args()
    log = setup_logging(
        "ttp_rewriter" if args.rewriter else "ttp_embedder" if args.embedder else "ttp_sft"
    )
    named = {name: getattr(args, name) for name in OUTPUTS}
    run_sft(
        backbone=args.backbone,
        sft_paths=args.sft,
        items_paths=args.items,
        examples_paths=args.examples,
        ttp=args.params,
        seed=args.seed,
        out_dir=output_folder(named, OUTPUTS),
        report_out=args.report,
        threads=args.threads,
        rewriter=args.rewriter,
        embedder=args.embedder,
        log=log.info,
    )
    require_written(named)


if __name__ == "__main__":
    main()
