"""Artifact readers shared by stages: column checks that name the file.

Each reader checks that its Parquet file has the columns a consumer needs, of an accepted type
and without nulls, and raises :class:`StageInputError` naming the file (and row) otherwise, so
a malformed upstream artifact fails at the step that reads it, not deep inside a computation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from personalir.common.io import read_parquet_table


class StageInputError(ValueError):
    """An input file is missing a column, has a null or a wrong value (file and row named)."""


def _require(table: pa.Table, path: str | Path, columns: dict[str, tuple]) -> None:
    """Check columns exist, have an accepted type and hold no nulls."""
    for name, types in columns.items():
        if name not in table.column_names:
            raise StageInputError(
                f"{path}: missing column {name!r} (has: {', '.join(table.column_names)})"
            )
        col = table.column(name)
        if not any(t(col.type) if callable(t) else col.type == t for t in types):
            raise StageInputError(f"{path}: column {name!r} has type {col.type}")
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise StageInputError(f"{path}: row {row}: column {name!r} is null")


_STR = (pa.types.is_string, pa.types.is_large_string)
_INT = (pa.types.is_integer,)
_BOOL = (pa.types.is_boolean,)


def read_user_sentences(path: str | Path) -> pd.DataFrame:
    """The data stage's user sentences; ``sentence_id`` must be unique."""
    table = read_parquet_table(path)
    _require(
        table,
        path,
        {"sentence_id": _STR, "user_id": _STR, "position": _INT, "parent_asin": _STR, "text": _STR},
    )
    df = table.select(["sentence_id", "user_id", "position", "parent_asin", "text"]).to_pandas()
    dup = df["sentence_id"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise StageInputError(f"{path}: row {row}: duplicate sentence_id {df.sentence_id[row]!r}")
    return df


def read_reviewers(path: str | Path) -> pd.DataFrame:
    """The data stage's product reviewers (who reviewed which product)."""
    table = read_parquet_table(path)
    _require(table, path, {"parent_asin": _STR, "user_id": _STR, "selected_user": _BOOL})
    return table.select(["parent_asin", "user_id", "selected_user"]).to_pandas()


def read_embeddings(path) -> tuple[pd.DataFrame, np.ndarray]:
    """The syntax encoder's sentence embeddings: metadata columns and a float64 matrix."""
    table = read_parquet_table(path)
    _require(
        table,
        path,
        {
            "sentence_id": _STR,
            "user_id": _STR,
            "split": _STR,
            "embedding": (pa.types.is_fixed_size_list,),
        },
    )
    col = table.column("embedding").combine_chunks()
    z = col.values.to_numpy().reshape(len(col), col.type.list_size).astype(np.float64)
    return table.drop(["embedding"]).to_pandas(), z
