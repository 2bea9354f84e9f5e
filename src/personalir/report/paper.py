"""Build the paper PDF with a TeX engine; the manuscript decides what it depends on.

``paper_inputs`` lists the generated files that ``main.tex`` inputs, so the workflow makes the
PDF depend on exactly what it prints (the showyourwork habit).

The manuscript names them ``generated/<file>``; each configuration writes them into its own
``<results_dir>/paper/generated/``, and the build puts the parent of that folder first on
TeX's search path, so one manuscript serves every configuration and none reads another's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess  # nosec B404  # runs the TeX engine with an argv list, no shell
import tempfile
from pathlib import Path

from personalir.common.io import atomic_path

_INPUT = re.compile(
    r"^[^%\n]*?\\(?:input|includegraphics(?:\[[^\]]*\])?)\{(generated/[^}]+)\}", re.M
)


def paper_inputs(main_tex: str | Path, generated: str | Path) -> list[str]:
    """Files of the folder ``generated`` that the manuscript inputs as ``generated/<file>``."""
    main_tex = Path(main_tex)
    found = []
    for rel in _INPUT.findall(main_tex.read_text(encoding="utf-8")):
        path = Path(generated) / Path(rel).relative_to("generated")
        if path.suffix == "":
            path = path.with_suffix(".tex")
        found.append(path.as_posix())
    return list(dict.fromkeys(found))


class PaperBuildError(RuntimeError):
    pass


def build_pdf(
    main_tex: str | Path, pdf: str | Path, generated: str | Path, engine: str = "pdflatex"
) -> None:
    """Run the engine twice (references) in a scratch folder; move the PDF into place.

    ``generated`` is the folder holding what the manuscript inputs as ``generated/<file>``."""
    main_tex = Path(main_tex).resolve()
    generated = Path(generated).resolve()
    if generated.name != "generated":
        raise PaperBuildError(
            f"{main_tex} inputs generated/<file>: the folder holding them must be named "
            f"generated, got {generated}"
        )
    missing = [p for p in paper_inputs(main_tex, generated) if not Path(p).exists()]
    if missing:
        raise PaperBuildError(f"{main_tex} inputs files that do not exist: {missing}")
    if shutil.which(engine) is None:
        raise PaperBuildError(
            f"TeX engine {engine!r} not found; install Debian's texlive-latex-base "
            "(the Quickstart setup does) or set paper.build_pdf: false"
        )
    env = dict(
        os.environ,
        SOURCE_DATE_EPOCH="0",
        FORCE_SOURCE_DATE="1",
        # The results root's paper/ folder first, so `generated/...` resolves there, then
        # the manuscript's folder and its parent (the documents' shared preamble); the
        # trailing empty entry keeps TeX's default path (which includes ".").
        TEXINPUTS=os.pathsep.join(
            [str(generated.parent), str(main_tex.parent), str(main_tex.parent.parent), ""]
        ),
    )
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            proc = subprocess.run(  # nosec B603  # engine found by shutil.which, no shell
                [
                    engine,
                    "-interaction=nonstopmode",
                    "-halt-on-error",
                    f"-output-directory={tmp}",
                    f"-jobname={main_tex.stem}",
                    # No trailer /ID (pdfTeX hashes the scratch path into it) and no
                    # /PTEX.FileName of included figures (their absolute paths): same
                    # inputs, same bytes, in any checkout.
                    r"\ifdefined\pdftrailerid\pdftrailerid{}\fi"
                    r"\ifdefined\pdfsuppressptexinfo\pdfsuppressptexinfo=-1\fi"
                    r"\input{" + main_tex.name + "}",
                ],
                cwd=main_tex.parent,
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tail = "\n".join(proc.stdout.splitlines()[-40:])
                raise PaperBuildError(f"{engine} failed on {main_tex}:\n{tail}")
        built = Path(tmp) / (main_tex.stem + ".pdf")
        with atomic_path(pdf, suffix=".pdf") as out:
            shutil.copyfile(built, out)
