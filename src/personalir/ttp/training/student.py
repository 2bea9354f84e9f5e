"""The distilled student (TTP paper, section 5.1, Table 8): its training rule and retriever.

An encoder-only bi-encoder (``ttp.student.model``: the packaged MiniLM on the sample; a
~300M encoder such as bge-base or gte-base at paper scale) learns to embed a search from
the instruction + history + query template alone, so serving needs no generation. Each
training search gives three texts (:func:`personalir.ttp.training.distill.student_views`): the
original view ``q`` (the user's query in the template), the intent-enhanced view ``q_r``
(the teacher's rewrite in the template; the teacher is ``ttp.student.teacher``, TTP (SFT+RL)
by default, whose rewrites of every example the rule ``ttp_teacher_rewrites`` writes) and the
purchased item ``p+``. Training is the dense baselines' recipe
(:func:`personalir.ttp.training.dense_ft.fine_tune`: in-batch negatives, seeded batches, the epoch
best on the validation split kept) with the loss of
:mod:`personalir.ttp.training.distill`: the three
InfoNCE terms <q,p+>, <q_r,p+>, <q,q_r> with equal weights, or the subset of Table 8's
ablation (``ttp.student.variants``). Serving and evaluation embed the original view only.

:func:`train_student` is the rule ``ttp_student``; :class:`Student` and its variants are the
methods ``student`` and ``student_<variant>`` (rows of Table 8, not of Table 4).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from personalir.common.device import ttp_device
from personalir.common.io import write_json
from personalir.ttp.inputs.data import item_fields, merge_corpora, read_examples
from personalir.ttp.training.decoupled import read_rewrites
from personalir.ttp.training.dense_ft import DenseFTSettings, fine_tune, validation_pool
from personalir.ttp.training.distill import student_views, variant_terms
from personalir.ttp.training.selection import SelectionSettings


def method_name(variant: str) -> str:
    """The method that evaluates a student variant: ``student`` (full) or ``student_<v>``."""
    return "student" if variant == "full" else f"student_{variant}"


def student_texts(ex, corpus, fields, maxf, rewrite: str) -> tuple[str, str]:
    """The original and intent-enhanced views of one example (its selected history)."""
    history = [corpus[i].text(fields, maxf) for i in ex.selected_history or []]
    return student_views(history, ex.query, rewrite)


def train_student(
    *,
    variant: str,
    examples_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    rewrites_paths: Sequence[str | Path],
    ttp: Mapping,
    seed: int,
    out_dir: str | Path,
    report_out: str | Path,
    threads: int,
    log=print,
) -> dict:
    """One Table 8 variant's student: trained on every set's training examples with the
    teacher's rewrites (one rewrites file per examples file), the epoch kept on validation."""
    import torch

    terms = variant_terms(variant)
    if len(rewrites_paths) != len(examples_paths):
        raise ValueError("one teacher rewrites file per examples file is needed")
    torch.set_num_threads(threads)
    section = ttp["student"]
    corpus = merge_corpora(items_paths)
    fields, maxf = item_fields(ttp), int(ttp["items"]["max_features"])
    selection = SelectionSettings.from_config(ttp)
    queries, views, items, ids, validation = [], [], [], [], []
    fallback = 0
    for ex_path, items_path, rw_path in zip(
        examples_paths, items_paths, rewrites_paths, strict=True
    ):
        examples = read_examples(ex_path)
        rewrites = read_rewrites(rw_path)
        for ex in examples:
            if ex.split != "train":
                continue
            if ex.example_id not in rewrites:
                raise ValueError(f"{rw_path}: no teacher rewrite of example {ex.example_id!r}")
            rewrite = rewrites[ex.example_id]
            fallback += not rewrite.strip()
            q, q_r = student_texts(ex, corpus, fields, maxf, rewrite)
            queries.append(q)
            views.append(q_r)
            items.append(corpus[ex.target].text(fields, maxf))
            ids.append(ex.target)
        validation.extend(
            validation_pool(
                examples,
                items_path,
                lambda ex: student_texts(ex, corpus, fields, maxf, "")[0],
                selection.pool_size,
                seed,
                fields,
                maxf,
            )
        )
    report = fine_tune(
        section["model"],
        queries,
        items,
        ids,
        DenseFTSettings.from_config(section),
        out_dir,
        seed=seed,
        variant=method_name(variant),
        validation=validation,
        measure=selection.measure,
        rewrites=views,
        terms=terms,
        device=ttp_device(ttp),
        log=log,
    )
    report.update(
        role="distilled student (Table 8)",
        student_variant=variant,
        terms=list(terms),
        teacher=section["teacher"],
        empty_teacher_rewrites=fallback,
    )
    write_json(report_out, report)
    log(json.dumps(report))
    return report
