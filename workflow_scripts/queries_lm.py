"""Rule queries_lm: LoRA adapter on the seed set + the fluency bound from the seed queries."""

import os

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.queries.generator import run_lm

os.environ.setdefault("TQDM_DISABLE", "1")  # no GGUF-conversion progress bars in the log


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model-cache", default="", help="dequantised-model cache ('' = none)")
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--adapter-config", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    setup_logging("queries_lm")
    run_lm(
        args.seeds,
        args.params,
        args.seed,
        {"adapter": args.adapter, "adapter_config": args.adapter_config, "report": args.report},
        threads=args.threads,
        model_cache=args.model_cache or None,
    )


if __name__ == "__main__":
    main()
