"""Rule queries_select: user matching, syntactic and writing-error pairs, the release."""

import os

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.queries.select import run_select

os.environ.setdefault("TQDM_DISABLE", "1")

INPUTS = (
    "candidates",
    "candidates_report",
    "products",
    "reviewers",
    "encoder_weights",
    "encoder_meta",
    "profiles",
    "embeddings",
    "error_profiles",
    "lm_report",
)
OUTPUTS = ("benchmark", "released", "pairs", "report", "filter_report")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    for name in INPUTS + OUTPUTS:
        ap.add_argument("--" + name.replace("_", "-"), required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--syntax-parse", type=json_arg, required=True)
    ap.add_argument("--errors", type=json_arg, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model-cache", default="", help="dequantised-model cache ('' = none)")
    args = ap.parse_args()
    setup_logging("queries_select")
    run_select(
        args.domain,
        {k: getattr(args, k) for k in INPUTS},
        args.params,
        args.syntax_parse,
        args.errors,
        args.seed,
        {k: getattr(args, k) for k in OUTPUTS},
        threads=args.threads,
        model_cache=args.model_cache or None,
    )


if __name__ == "__main__":
    main()
