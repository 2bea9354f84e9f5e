"""Rule sample_world: write the synthetic embedded world of one domain."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.data.sample_world import generate_domain


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    log = setup_logging("sample_world")
    p = args.params
    counts = generate_domain(
        args.out_dir,
        args.domain,
        seed=args.seed,
        scale=p["scale"],
        n_products=p["n_products"],
        n_users=p["n_users"],
        min_sentences_per_user=p["min_sentences_per_user"],
    )
    log.info("%s: %s", args.domain, counts)


if __name__ == "__main__":
    main()
