"""Rule user_sentences: reviews Parquet -> user sentences, users, product reviewers."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_parquet
from personalir.data.sentences import SentenceRules, build_user_sentences


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--reviews", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    for name in ("sentences", "users", "reviewers", "report"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    log = setup_logging("user_sentences")
    out = build_user_sentences(
        read_parquet_table(args.reviews), SentenceRules.from_config(args.params)
    )
    write_parquet(args.sentences, out["sentences"])
    write_parquet(args.users, out["users"])
    write_parquet(args.reviewers, out["reviewers"])
    write_json(args.report, out["report"])
    r = out["report"]
    log.info(
        "%d users, %d selected, %d sentences kept (%d too short, %d of excluded users)",
        r["users"],
        r["users_selected"],
        r["sentences_kept"],
        r.get("sentences_too_short", 0),
        r.get("sentences_of_excluded_users", 0),
    )


if __name__ == "__main__":
    main()
