"""Rule ttp_backbone: load, truncate, add <think> </think> <emb> (mean init), save."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.training import prepare


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--model-cache", default="", help="dequantised GGUF models ('': none)")
    args = ap.parse_args()
    log = setup_logging("ttp_backbone")
    prepare(
        ttp=args.params,
        seed=args.seed,
        out_dir=args.out_dir,
        model_cache=args.model_cache or None,
        log=log.info,
    )


if __name__ == "__main__":
    main()
