"""Rule errors_profiles: edits and word contexts -> per-user error profiles (JSON + CSV)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_text
from personalir.errors.stage import profile_summary_frame, run_profiles


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--edits", required=True)
    ap.add_argument("--words", required=True)
    ap.add_argument("--corrections", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the errors.profiles section")
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--summary", required=True)
    args = ap.parse_args()
    log = setup_logging("errors_profiles")
    profiles = run_profiles(
        read_parquet_table(args.edits).to_pandas(),
        read_parquet_table(args.words).to_pandas(),
        read_parquet_table(args.corrections, columns=["user_id", "position"]).to_pandas(),
        args.params,
    )
    write_json(args.profiles, profiles.to_json())
    frame = profile_summary_frame(profiles)
    write_text(args.summary, frame.to_csv(index=False, lineterminator="\n"))
    s = profiles.summary()
    log.info(
        "%d users: %d with character-level edits, %d on the fallback (%s)",
        s["users"],
        s["users_observed"],
        s["users_fallback_global"],
        s["fallback_policy"],
    )


if __name__ == "__main__":
    main()
