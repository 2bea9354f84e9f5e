"""Rule ttp_backbone: load, truncate, add <think> </think> <embed> (mean init), save."""

import _bootstrap  # noqa: F401
from personalir.common.cli import (
    json_arg,
    output_folder,
    parser,
    require_written,
    setup_logging,
)
from personalir.ttp.training.jobs import prepare

# The files of the saved backbone folder that the rule tracks.
OUTPUTS = {"config": "config.json", "info": "ttp_backbone.json", "weights": "model.safetensors"}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    for name in OUTPUTS:
        ap.add_argument(f"--{name}", required=True, help=f"output: {OUTPUTS[name]}")
    ap.add_argument("--model-cache", default="", help="dequantised GGUF models ('': none)")
    args = ap.parse_args()
    log = setup_logging("ttp_backbone")
    named = {name: getattr(args, name) for name in OUTPUTS}
    prepare(
        ttp=args.params,
        seed=args.seed,
        out_dir=output_folder(named, OUTPUTS),
        model_cache=args.model_cache or None,
        log=log.info,
    )
    require_written(named)


if __name__ == "__main__":
    main()
