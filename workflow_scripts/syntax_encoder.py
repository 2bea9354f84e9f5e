"""Rule syntax_encoder: rule vectors -> trained contrastive encoder and sentence embeddings."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_json
from personalir.syntax.encoder import run_encoder


def main() -> None:
    ap = parser(__doc__)
    for name in ("vectors", "index", "vocab", "reviewers"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    for name in ("weights", "meta", "embeddings", "curve", "report"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    setup_logging("syntax_encoder")
    out = {k: getattr(args, k) for k in ("weights", "meta", "embeddings", "curve")}
    report = run_encoder(
        args.vectors,
        args.index,
        args.vocab,
        args.reviewers,
        out,
        args.params,
        args.seed,
        threads=args.threads,
    )
    write_json(args.report, report)


if __name__ == "__main__":
    main()
