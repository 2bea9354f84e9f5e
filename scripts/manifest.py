"""Manifests of a workflow tree (sha256 per artifact) and integrity checks.

    python scripts/manifest.py write [ROOT] [-o FILE]     # sha256 of every artifact
    python scripts/manifest.py verify FILE [ROOT] [--strict]
    python scripts/manifest.py check [ROOT]               # each results folder vs provenance.json

Artifacts are every file under the results root (`--results-dir`, default results/: the
paper's generated tables and figures and the PDF included; its logs/, hidden temporary files
and README.md excluded). The manifest is in sha256sum's format, so
`sha256sum -c FILE` checks it as well. `verify` names every missing or changed file (and with
--strict every file not in the manifest) and exits 1 if there is any; `check` recomputes the
hashes each folder's provenance.json recorded and names missing, truncated or changed files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from personalir.common.io import write_text  # noqa: E402
from personalir.common.provenance import (  # noqa: E402
    build_manifest,
    default_artifacts,
    format_manifest,
    parse_manifest,
    provenance_folders,
    verify_folder,
    verify_manifest,
)


def cmd_write(args) -> int:
    paths = default_artifacts(args.root, args.results_dir)
    text = format_manifest(build_manifest(args.root, paths))
    if args.output:
        write_text(args.output, text, record=False)
        print(f"wrote {len(paths)} entries to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _report(problems, n_checked: int) -> int:
    for p in problems:
        print(f"FAIL {p}")
    print(f"{n_checked - sum(p.kind != 'extra' for p in problems)} OK, {len(problems)} FAIL")
    return 1 if problems else 0


def cmd_verify(args) -> int:
    manifest = parse_manifest(Path(args.manifest).read_text(encoding="utf-8"))
    present = default_artifacts(args.root, args.results_dir) if args.strict else None
    return _report(verify_manifest(args.root, manifest, present), len(manifest))


def cmd_check(args) -> int:
    folders = provenance_folders(Path(args.root) / args.results_dir)
    if not folders:
        print(f"FAIL no provenance.json under {Path(args.root) / args.results_dir}")
        return 1
    problems, n = [], 0
    for folder in folders:
        found, checked = verify_folder(folder, relative_to=args.root)
        problems.extend(found)
        n += checked
    return _report(problems, n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the manifest of a tree")
    w.add_argument("root", nargs="?", default=".")
    w.add_argument("-o", "--output")
    w.add_argument("--results-dir", default="results")
    v = sub.add_parser("verify", help="verify a tree against a manifest")
    v.add_argument("manifest")
    v.add_argument("root", nargs="?", default=".")
    v.add_argument("--strict", action="store_true", help="files not in the manifest fail too")
    v.add_argument("--results-dir", default="results")
    c = sub.add_parser("check", help="verify results folders against their provenance.json")
    c.add_argument("root", nargs="?", default=".")
    c.add_argument("--results-dir", default="results")
    args = ap.parse_args(argv)
    return {"write": cmd_write, "verify": cmd_verify, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
