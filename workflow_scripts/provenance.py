"""Rule provenance: write <folder>/provenance.json (what produced the folder, artifact hashes)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import CorruptArtifact, write_json
from personalir.common.provenance import provenance_record


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--folder", required=True)
    ap.add_argument("--artifacts", type=json_arg, required=True, help="file name -> rule")
    ap.add_argument("--config-sha256", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--models", type=json_arg, required=True)
    ap.add_argument(
        "--code", nargs="*", default=[], help="the code files that produced the artifacts"
    )
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    log = setup_logging("provenance")
    try:
        record = provenance_record(
            args.folder,
            args.artifacts,
            config_hash=args.config_sha256,
            label=args.label,
            models=args.models,
            code=args.code,
        )
    except CorruptArtifact as exc:
        raise SystemExit(f"provenance: {exc}") from None
    write_json(args.output, record)
    log.info("%s: %d artifacts, code %s", args.folder, len(record["artifacts"]), record["code"])


if __name__ == "__main__":
    main()
