"""Helpers of rules/ttp.smk (kept out of the Snakefile, which stays glue).

An *example set* is what one ``ttp_examples`` job builds: one per configured domain for the
sample world, one named ``PersonalWAB`` for PersonalWAB's files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from personalir.ttp.evaluation.names import point_ttp, sweep_values
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS


def method_class(method: str):
    """The registered TTP method (its class states the models, keys and threads it needs)."""

    return PERSONAL_RETRIEVERS.get(method)


# The one example set of a public source used for training (``ttp.source``).
SOURCE_SETS = {"personalwab": "PersonalWAB", "kuaisearch": "KuaiSearch"}


def example_sets(config: Mapping) -> list[str]:
    """``ttp.domains`` (a subset of ``domains``, in that order) or every configured domain."""
    if config["ttp"]["source"] in SOURCE_SETS:
        return [SOURCE_SETS[config["ttp"]["source"]]]
    chosen = config["ttp"].get("domains")
    if chosen is None:
        return list(config["domains"])
    unknown = sorted(set(chosen) - set(config["domains"]))
    if unknown and config["ttp"].get("enabled", True):
        raise ValueError(
            f"ttp.domains {unknown} are not among the configured domains {config['domains']}:"
            " set ttp.domains to some of them (null: all), or ttp.enabled to false"
        )
    return [d for d in config["domains"] if d in chosen]


def trained_by(rule: str) -> list[str]:
    """The registered methods whose own model ``rule`` trains (their ``trained_model``)."""
    return [
        name
        for name in sorted(PERSONAL_RETRIEVERS.names())
        if (model := method_class(name).trained_model) is not None and model.rule == rule
    ]


def _setting(ttp: Mapping, dotted: str):
    section, key = dotted.split(".")
    return ttp[section][key]


def trained_folder(config: Mapping, role: str, method: str | None = None) -> str | None:
    """The folder of the model that method ``role`` trains (its class's ``trained_model``,
    the pattern filled with ``role`` as ``{name}`` and the other fields from the class of
    ``method``, the method that loads it: a student variant names its own folder), or None
    when the configuration uses an untrained model instead (``enabled_key`` false)."""
    owner = method_class(role)
    model = owner.trained_model
    if model.enabled_key and not _setting(config["ttp"], model.enabled_key):
        return None
    reader = method_class(method or role)
    fields = {k: getattr(reader, k, getattr(owner, k, None)) for k in ("variant", "adapter")}
    return f"{config['results_dir']}/{model.folder.format(name=role, **fields)}"


def dense_model(config: Mapping, variant: str) -> str:
    """The bi-encoder a dense baseline uses: the fine-tuned folder, or the base model."""
    folder = trained_folder(config, variant)
    if folder is None:
        return _setting(config["ttp"], method_class(variant).trained_model.base_model_key)
    return folder


def _is_trained_role(role: str) -> bool:
    return role in PERSONAL_RETRIEVERS and method_class(role).trained_model is not None


# Roles that are no method's trained model: role -> (folder, the files of it that a run
# depends on when the workflow builds it).
def _builtin_role(config: Mapping, role: str, method: str, example_set: str | None):
    res = config["results_dir"]
    backbone = (f"{res}/ttp/backbone", ("config.json", "model.safetensors"))
    if role == "generator":
        generator = config["ttp"]["hyde"]["generator"]
        return backbone if generator == "backbone" else (generator, None)
    if role == "ttp_backbone":
        return backbone
    if role == "ttp_adapter":
        return (
            adapter_dir(res, method_adapter(config, method)),
            ("adapter_config.json", "adapter_model.safetensors"),
        )
    if role == "ttp_store":
        return cache_dir(res, example_set or "{ttp_set}"), ("store.json", "embeddings.parquet")
    raise ValueError(f"{method}: unknown model role {role!r}")


def role_model(config: Mapping, method: str, role: str, example_set: str | None = None):
    """``(folder or model name, (config file, weights file) or None)`` of one of ``method``'s
    model roles: a role named after a method with a trained model is that model (the files
    when the workflow trains it), else one of the TTP model's roles (backbone, adapter,
    HyDE's generator, the serving cache's store)."""
    if _is_trained_role(role):
        folder = trained_folder(config, role, method)
        if folder is None:
            return dense_model(config, role), None
        return folder, method_class(role).trained_model.files
    return _builtin_role(config, role, method, example_set)


def run_inputs(config: Mapping, method: str, example_set: str) -> dict[str, str]:
    """Files the ``ttp_run`` job of ``method`` needs besides its examples and items.

    For each model role the method loads that the workflow builds, its config file (kept)
    and its weights (a temporary output); the TTP run's rewrites when the method reads them;
    the run whose item encodings it reuses.
    """
    res = config["results_dir"]
    cls = method_class(method)
    out: dict[str, str] = {}
    for role in cls.model_roles:
        folder, files = role_model(config, method, role, example_set)
        if files is not None:
            out[role] = f"{folder}/{files[0]}"
            out[f"{role}_weights"] = f"{folder}/{files[1]}"
    if cls.needs_rewrites:
        out["rewrites"] = rewrites_file(res, example_set)
    donor = encoding_donor(config, method)
    if donor:  # runs after the donor, whose item encodings it reads from the cache
        out["encodings_from"] = f"{res}/ttp/{example_set}/runs/{donor}.info.json"
    return out


# The methods whose bi-encoder ttp_dense_ft fine-tunes, and the history-fusion baselines
# (personalir.ttp.training.fusion), one trained module each: the rules' wildcards.
DENSE_VARIANTS = tuple(trained_by("ttp_dense_ft"))
FUSION_KINDS = tuple(trained_by("ttp_fusion"))


def fusion_inputs(config: Mapping) -> dict[str, str]:
    """Inputs of ``ttp_fusion`` beyond the examples and items: the query-only dense
    bi-encoder's files when the workflow fine-tunes it (else a named model is read)."""
    folder, files = role_model(config, "dense", "dense")
    if files is None:
        return {}
    return {"dense": f"{folder}/{files[0]}", "dense_weights": f"{folder}/{files[1]}"}


def rewrites_file(results_dir: str, example_set: str) -> str:
    """The frozen Decoupled-Stage rewriter's rewrites of one set's examples."""
    return f"{results_dir}/ttp/{example_set}/rewrites.json"


def dense_ft_inputs(config: Mapping, variant: str) -> dict[str, list[str]]:
    """Inputs of ``ttp_dense_ft`` beyond the examples and items: a method that reads the
    rewriter's rewrites (Decoupled-Stage) trains on the rewrites of every set."""
    if not method_class(variant).needs_rewrites:
        return {}
    res = config["results_dir"]
    return {"rewrites": [rewrites_file(res, s) for s in example_sets(config)]}


def method_adapter(config: Mapping, method: str) -> str:
    """The TTP adapter a method loads (``sft``, ``rl:<variant>``); ``teacher`` (the cached
    serving method) resolves to the adapter of ``ttp.student.teacher``."""
    adapter = getattr(method_class(method), "adapter", "sft")
    if adapter == "teacher":
        adapter = getattr(method_class(config["ttp"]["student"]["teacher"]), "adapter", "sft")
    return adapter


def encoding_donor(config: Mapping, method: str) -> str | None:
    """The configured method whose item encodings ``method`` reuses: a TTP retrieval
    without the rewrite (w/o Intent-Q) reads those of the method with the same adapter that
    generates it, when both are configured; the cached serving method reads the teacher's."""
    cls = method_class(method)
    if getattr(cls, "adapter", None) == "teacher":
        teacher = config["ttp"]["student"]["teacher"]
        return teacher if teacher in config["ttp"]["methods"] else None
    if getattr(cls, "intent_q", True) or not hasattr(cls, "adapter"):
        return None
    for other in config["ttp"]["methods"]:
        o = method_class(other)
        if (
            other != method
            and getattr(o, "intent_q", False)
            and getattr(o, "adapter", None) == (cls.adapter)
        ):
            return other
    return None


def adapter_dir(results_dir: str, adapter: str) -> str:
    """The folder of a TTP adapter: ``sft``, ``embedder`` (the LLM-embedding baseline's), or
    ``rl:<variant>`` (an RL variant's)."""
    if adapter in ("sft", "embedder"):
        return f"{results_dir}/ttp/{adapter}/adapter"
    kind, _, variant = adapter.partition(":")
    if kind != "rl" or not variant:
        raise ValueError(f"unknown TTP adapter {adapter!r} (sft, embedder or rl:<variant>)")
    return f"{results_dir}/ttp/rl/{variant}/adapter"


def rl_variants(config: Mapping) -> list[str]:
    """The RL variants the workflow trains: those the configured methods evaluate (none when
    ``ttp.rl.enabled`` is false; a method needing one then stops the workflow)."""
    rl = config["ttp"]["rl"]
    needed = []
    for method in config["ttp"]["methods"]:
        adapter = method_adapter(config, method)
        if adapter.startswith("rl:"):
            needed.append(adapter.split(":", 1)[1])
    needed = list(dict.fromkeys(needed))
    if needed and not rl["enabled"] and config["ttp"].get("enabled", True):
        raise ValueError(
            f"ttp.methods need RL variants {needed} but ttp.rl.enabled is false: remove the "
            "ttp_rl* methods or enable RL"
        )
    unknown = [v for v in needed if v not in (rl.get("variants") or {})]
    if unknown and config["ttp"].get("enabled", True):
        raise ValueError(
            f"ttp.methods need RL variants {unknown} that ttp.rl.variants does not define"
        )
    return needed if rl["enabled"] else []


# The RL variant that chooses the GRPO step count on the validation split; the others train
# for the count it chose (the same budget for every ablation).
SELECTING_RL_VARIANT = "full"


def rl_selection_input(config: Mapping, variant: str) -> dict[str, str]:
    """``{"selection": report}`` of the selecting variant for every other variant when the
    workflow trains it; empty for the selecting variant (or when it is not trained)."""
    if variant == SELECTING_RL_VARIANT or SELECTING_RL_VARIANT not in rl_variants(config):
        return {}
    return {"selection": f"{config['results_dir']}/ttp/rl/{SELECTING_RL_VARIANT}.report.json"}


def rl_threads(config: Mapping) -> int:
    return int(config["ttp"]["rl"]["threads"] or sft_threads(config))


def run_models(config: Mapping, method: str, example_set: str | None = None) -> dict[str, str]:
    """Role -> model folder (or name) of a method's run; ``ttp_store`` (the cached serving
    method's embedding store) is per example set."""
    return {
        role: role_model(config, method, role, example_set)[0]
        for role in method_class(method).model_roles
    }


def example_inputs(config: Mapping, example_set: str) -> dict[str, str]:
    """Inputs of ``ttp_examples``: the search log and product tables (sample world only)."""
    if config["ttp"]["source"] != "sample_world":
        return {}
    res = config["results_dir"]
    return {
        "search_log": f"{res}/sample_world/{example_set}/search_log.jsonl",
        "products": f"{res}/data/{example_set}/products.parquet",
        "meta": f"{res}/data/{example_set}/meta.parquet",
    }


def example_source_args(config: Mapping, inputs: Mapping[str, str]) -> list[str]:
    """Command-line options naming where ``ttp_examples`` reads its source (argv words, for
    a shell command that quotes each: ``{params.sources:q}``)."""
    args = [a for key, path in inputs.items() for a in (f"--{key.replace('_', '-')}", path)]
    for key in ("personalwab_dir", "kuaisearch_dir"):
        if config["ttp"].get(key):
            args += [f"--{key.replace('_', '-')}", config["ttp"][key]]
    return args


def run_specs(config: Mapping) -> list[str]:
    """``SET:METHOD:PATH`` of every run, for ``ttp_evaluate`` (argv words)."""
    res = config["results_dir"]
    return [
        f"{s}:{m}:{res}/ttp/{s}/runs/{m}.trec"
        for s in example_sets(config)
        for m in config["ttp"]["methods"]
    ]


def rewrites_option(inputs: Mapping) -> list[str]:
    """``--rewrites PATH...`` (argv words) for the decoupled baseline and its retriever's
    fine-tuning (the rewriter's rewrites), else nothing."""
    if "rewrites" not in inputs:
        return []
    paths = inputs["rewrites"]
    return ["--rewrites", *([paths] if isinstance(paths, str) else list(paths))]


def run_params(config: Mapping, method: str, extra: tuple[str, ...] = ()) -> str:
    """The ``ttp`` sections a method's job reads: items, depth, ``device`` (where its models
    run), its ``config_keys`` and ``extra`` (the Relevance job adds ``evaluation`` for its
    bootstrap)."""
    ttp = config["ttp"]
    return json.dumps(
        {k: ttp[k] for k in run_keys(method, extra)}, sort_keys=True, separators=(",", ":")
    )


def run_keys(method: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The ``ttp`` keys a method's run reads (:func:`run_params`, :func:`history_run_params`)."""
    return ("items", "depth", "device", *method_class(method).config_keys, *extra)


def ttp_gpu(config: Mapping, method: str | None = None) -> int:
    """GPUs a TTP job that loads a model asks the scheduler for (its ``gpu`` resource): 1 when
    ``ttp.device`` names CUDA (``cuda``, ``cuda:<n>``), else 0 (``auto`` uses a GPU only
    where a job happens to have one). A method's run asks only when the method loads a model
    (BM25 does not)."""
    if not str(config["ttp"].get("device", "cpu")).startswith("cuda"):
        return 0
    if method is not None and not method_class(method).model_roles:
        return 0
    return 1


def sft_threads(config: Mapping) -> int:
    """CPU threads of SFT: ``ttp.sft.threads``, else the workflow's ``threads``."""
    return int(config["ttp"]["sft"]["threads"] or config["threads"])


def run_threads(config: Mapping, method: str) -> int:
    """CPU threads of a method's run: SFT's for the generating methods, one for the others."""
    return sft_threads(config) if method_class(method).generates_text else 1


# --------------------------------------------------------------------------- Relevance
def relevance_methods(config: Mapping) -> list[str]:
    """The methods of Table 4's Relevance column (``ttp.relevance_test.methods``), each of
    which must be an evaluated method (``ttp.methods``)."""
    ttp = config["ttp"]
    methods = list(ttp["relevance_test"]["methods"])
    unknown = [m for m in methods if m not in ttp["methods"]]
    if unknown:
        raise ValueError(
            f"ttp.relevance_test.methods {unknown} are not in ttp.methods; add them there"
        )
    return methods


def relevance_pair_inputs(config: Mapping, example_set: str) -> dict[str, str]:
    """Inputs of ``ttp_relevance_pairs``: a configured Relevance file, else what the sample
    world's set is built from (its examples and planted product types)."""
    res = config["results_dir"]
    configured = config["ttp"]["relevance_test"]["file"]
    if configured:
        return {"file": configured}
    if config["ttp"]["source"] != "sample_world":
        raise ValueError(
            "ttp.relevance_test.file is null: a Relevance set is built only from the sample "
            f"world (ttp.source is {config['ttp']['source']!r}); configure a file"
        )
    return {
        "examples": f"{res}/ttp/{example_set}/examples.jsonl",
        "truth": f"{res}/sample_world/{example_set}/planted_truth.json",
    }


# --------------------------------------------------------------------------- student
def student_dir(results_dir: str, variant: str) -> str:
    """The folder of one Table 8 variant's distilled student (the student's trained model)."""
    return f"{results_dir}/" + method_class("student").trained_model.folder.format(
        name="student", variant=variant
    )


def student_variants(config: Mapping) -> list[str]:
    """The student variants the configured methods evaluate (``student``: ``full``)."""
    found = []
    for method in config["ttp"]["methods"]:
        cls = method_class(method)
        if "student" in cls.model_roles:
            found.append(cls.variant)
    return list(dict.fromkeys(found))


def teacher_adapter(config: Mapping) -> str:
    """The adapter folder of ``ttp.student.teacher`` (a TTP method: ``ttp`` or ``ttp_rl``)."""
    teacher = config["ttp"]["student"]["teacher"]
    adapter = getattr(method_class(teacher), "adapter", None)
    if adapter is None or not getattr(method_class(teacher), "intent_q", False):
        raise ValueError(
            f"ttp.student.teacher {teacher!r} is not a TTP method that writes rewrites"
        )
    if adapter.startswith("rl:") and adapter.split(":", 1)[1] not in rl_variants(config):
        raise ValueError(
            f"ttp.student.teacher {teacher!r} needs RL variant {adapter.split(':', 1)[1]!r},"
            " which the workflow does not train (add the method to ttp.methods)"
        )
    return adapter_dir(config["results_dir"], adapter)


def teacher_rewrites_file(results_dir: str, example_set: str) -> str:
    return f"{results_dir}/ttp/{example_set}/teacher_rewrites.json"


# --------------------------------------------------------------------------- serving
def cache_dir(results_dir: str, example_set: str) -> str:
    """One example set's embedding store (:mod:`personalir.ttp.methods.serving`)."""
    return f"{results_dir}/ttp/{example_set}/cache"


def serving_methods(config: Mapping) -> list[str]:
    """The configured methods that serve from an embedding store (``ttp_cached``)."""
    return [m for m in config["ttp"]["methods"] if "ttp_store" in method_class(m).model_roles]


def teacher_inputs(config: Mapping, example_set: str) -> dict[str, str]:
    """The model files of the student's teacher (backbone and adapter), which
    ``ttp_teacher_rewrites`` generates and ``ttp_cache_store`` embeds with."""
    teacher = config["ttp"]["student"]["teacher"]
    teacher_adapter(config)  # a TTP method that writes rewrites, its adapter trained
    names = {"ttp_backbone": "backbone", "ttp_adapter": "adapter"}  # the rules' input names
    out = {}
    for role, name in names.items():
        for suffix in ("", "_weights"):
            if (path := run_inputs(config, teacher, example_set).get(role + suffix)) is not None:
                out[name + suffix] = path
    return out


def cache_store_models(config: Mapping) -> str:
    teacher = config["ttp"]["student"]["teacher"]
    return json.dumps(run_models(config, teacher), sort_keys=True, separators=(",", ":"))


def cache_store_params(config: Mapping) -> str:
    """The ``ttp`` sections the store's job reads: the teacher's, history selection, serving."""
    teacher = config["ttp"]["student"]["teacher"]
    return run_params(config, teacher, ("history", "serving", "student"))


# --------------------------------------------------------------------------- history sweep
def history_values(config: Mapping) -> list[int]:
    """The history-length sweep's N values (Figure 6); [] when TTP or the sweep is off."""

    return sweep_values(config["ttp"]) if config["ttp"].get("enabled", True) else []


def history_dir(results_dir: str, n) -> str:
    """The folder of one sweep point (its examples, targets, adapter and runs)."""
    return f"{results_dir}/ttp/history/n{n}"


def history_params(config: Mapping, n, keys: tuple[str, ...]) -> str:
    """The ``keys`` of the ``ttp`` section as sweep point ``n`` runs with it (JSON)."""

    ttp = point_ttp(config["ttp"], int(n))
    return json.dumps({k: ttp[k] for k in keys}, sort_keys=True, separators=(",", ":"))


def history_run_params(config: Mapping, n) -> str:
    """The TTP run's ``ttp`` sections (:func:`run_params`' keys for ``ttp``) at point ``n``."""
    return history_params(config, n, run_keys("ttp"))


def history_run_models(config: Mapping, n) -> str:
    """The TTP run's models at sweep point ``n``: the backbone and the point's adapter."""
    res = config["results_dir"]
    models = {
        "ttp_backbone": f"{res}/ttp/backbone",
        "ttp_adapter": f"{history_dir(res, n)}/adapter",
    }
    return json.dumps(models, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------- Table 5
def figure3_method(config: Mapping) -> str:
    """``ttp.figure3.method``, checked: an evaluated method whose run writes rewrites (for
    the rule module, so a wrong name stops the workflow at start, not as a missing input)."""
    ttp = config["ttp"]
    method = ttp["figure3"]["method"]
    if not ttp.get("enabled", True):
        return method
    writes = False
    if method in ttp["methods"]:
        cls = method_class(method)
        writes = getattr(cls, "intent_q", False) or getattr(cls, "needs_rewrites", False)
    if not writes:
        raise ValueError(
            f"ttp.figure3.method {method!r} must be in ttp.methods and write rewrites "
            "(a TTP method with Intent-Q, or decoupled): add it there or name another"
        )
    return method
