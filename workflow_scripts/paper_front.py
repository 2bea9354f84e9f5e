"""Rule paper_front: the contents table and the front matter (configuration, commit, data
fingerprints) that open one of the two documents."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import atomic_open
from personalir.report.contents import contents_tex, front_matter_tex, git_commit


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--doc", required=True, help="pqb or ttp")
    ap.add_argument("--label", required=True)
    ap.add_argument("--config-sha256", required=True)
    ap.add_argument("--config-files", nargs="*", default=[])
    ap.add_argument("--repo", required=True, help="the workflow's checkout (its commit)")
    ap.add_argument("--data", nargs="*", default=[], help="NAME=PATH of each raw data file")
    ap.add_argument("--inputs", nargs="*", default=[], help="the document's generated inputs")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--contents", required=True)
    ap.add_argument("--front", required=True)
    args = ap.parse_args()
    log = setup_logging("paper_front")
    data = dict(item.split("=", 1) for item in args.data)
    commit = git_commit(args.repo)
    with atomic_open(args.contents) as fh:
        fh.write(contents_tex(args.doc))
    with atomic_open(args.front) as fh:
        fh.write(
            front_matter_tex(
                label=args.label,
                config_sha256=args.config_sha256,
                config_files=args.config_files,
                commit=commit,
                data=data,
                inputs=args.inputs,
                synthetic=args.synthetic,
            )
        )
    log.info(
        "%s: commit %s, %d data files, %d inputs", args.doc, commit, len(data), len(args.inputs)
    )


if __name__ == "__main__":
    main()
