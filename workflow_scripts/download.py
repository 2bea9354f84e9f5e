"""Rule download: fetch one domain's official review and meta files, verified by sha256."""

import sys
from pathlib import Path

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.data.download import DownloadError, download_domain


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    log = setup_logging("download")
    p = args.params
    try:
        files = download_domain(
            args.domain,
            args.out_dir,
            checksums_path=p["checksums"],
            observed_checksums_path=Path(args.out_dir) / "observed.sha256",
            base_url=p["base_url"],
            on_missing_checksum=p["on_missing_checksum"],
            retries=p["retries"],
            timeout_s=p["timeout_s"],
        )
    except DownloadError as exc:
        sys.exit(f"download failed: {exc}")
    log.info("%s: %s", args.domain, {k: str(v) for k, v in files.items()})


if __name__ == "__main__":
    main()
