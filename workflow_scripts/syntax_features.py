"""Rule syntax_features: parsed rules -> splits, rule vocabulary, sparse sentence vectors."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.syntax.features import run_features


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--parsed", required=True)
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--seed", type=int, required=True)
    for name in ("vectors", "index", "vocab", "report"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    setup_logging("syntax_features")
    out = {k: getattr(args, k) for k in ("vectors", "index", "vocab", "report")}
    run_features(args.parsed, args.sentences, out, args.params, args.seed)


if __name__ == "__main__":
    main()
