# TTP stage (part 1): search log (written by the data stage's `sample_world` rule) -> examples
# with selected histories -> teacher targets -> SFT of the TTP model; dense baselines'
# fine-tuning; Decoupled-Stage's rewriter and its rewrites; GRPO per RL variant; one run per
# (example set, method); evaluation with bootstrap CIs; Tables 4, 6, 7, Figure 5, the paper's
# claims; loss and reward curves. SFT, the rewriter and the generating jobs (TTP, HyDE,
# rewrites) take the workflow's `threads` (they scale on two cores); the other jobs take one
# core each and fill the gaps of the other stages' jobs.

from personalir.workflow import ttp as ttp_wf
from personalir.workflow import ttp_pqb as ttp_pqb_wf

TTP = config["ttp"]
TTP_SETS = ttp_wf.example_sets(config)
TTP_METHODS = TTP["methods"]
TTP_RL_VARIANTS = ttp_wf.rl_variants(config)
TTP_RELEVANCE_METHODS = ttp_wf.relevance_methods(config)
TTP_HISTORY_VALUES = ttp_wf.history_values(config)
TTP_PUBLIC = ttp_wf.public_sets(config)
TTP_PQB_SETS = ttp_pqb_wf.pqb_sets(config)


wildcard_constraints:
    ttp_set="|".join([*TTP_SETS, *TTP_PUBLIC, *TTP_PQB_SETS]),
    public="|".join(TTP_PUBLIC) or "(?!)",
    method="|".join(TTP_METHODS),
    variant="dense|history_aware|decoupled",
    rl_variant="|".join(TTP_RL_VARIANTS) or "(?!)",
    student_variant="|".join(ttp_wf.student_variants(config)) or "(?!)",
    hist_n="|".join(map(str, TTP_HISTORY_VALUES)) or "(?!)",
    fusion="|".join(ttp_wf.FUSION_KINDS),


rule ttp_examples:
    """Examples of one set with their top-N history (relevance model), and the set's items."""
    wildcard_constraints:
        ttp_set="|".join(TTP_SETS),
    input:
        unpack(lambda w: ttp_wf.example_inputs(config, w.ttp_set)),
    output:
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
        report=results("ttp", "{ttp_set}", "examples.report.json"),
    params:
        ttp=params_json("ttp", keys=("split", "history", "items", "device")),
        seed=config["seed"],
        source=TTP["source"],
        sources=lambda w, input: ttp_wf.example_source_args(config, dict(input)),
    benchmark:
        bench("ttp", "ttp_examples", "ttp_set")
    log:
        logs("ttp", "examples_{ttp_set}.log"),
    resources:
        mem_mb=3000,
        runtime=20,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_examples.py --set {wildcards.ttp_set}"
        " --source {params.source} {params.sources} --seed {params.seed} --params {params.ttp:q}"
        " --examples {output.examples} --items {output.corpus} --report {output.report}"
        " > {log} 2>&1"


rule ttp_teacher:
    """K teacher rewrites per training example; rewrite gains; one SFT target each."""
    input:
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        sft=results("ttp", "{ttp_set}", "sft.jsonl"),
        report=results("ttp", "{ttp_set}", "teacher.report.json"),
    params:
        ttp=params_json("ttp", keys=("teacher", "history", "items", "device")),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_teacher", "ttp_set")
    log:
        logs("ttp", "teacher_{ttp_set}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_teacher.py --examples {input.examples}"
        " --items {input.corpus} --seed {params.seed} --params {params.ttp:q}"
        " --output {output.sft} --report {output.report} > {log} 2>&1"


rule ttp_backbone:
    """The backbone with <think>, </think>, <emb> (mean-initialised rows), saved once."""
    output:
        config=results("ttp", "backbone", "config.json"),
        info=results("ttp", "backbone", "ttp_backbone.json"),
        # Hundreds of MB of float32 weights: kept until SFT and the runs are done, never
        # recorded by DVC (a missing temporary file does not make Snakemake rerun anything).
        weights=temp(results("ttp", "backbone", "model.safetensors")),
    params:
        ttp=params_json("ttp", keys=("backbone",)),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
    benchmark:
        bench("ttp", "ttp_backbone")
    log:
        logs("ttp", "backbone.log"),
    resources:
        mem_mb=4000,
        runtime=20,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_backbone.py --seed {params.seed} --params {params.ttp:q}"
        " --config {output.config} --info {output.info} --weights {output.weights}"
        " --model-cache {params.model_cache:q} > {log} 2>&1"


rule ttp_sft:
    """LoRA SFT (0.5 x token CE + InfoNCE) on every set's targets; resumable checkpoints."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        sft=expand(results("ttp", "{ttp_set}", "sft.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
    output:
        adapter=results("ttp", "sft", "adapter", "adapter_config.json"),
        # ~20 MB: kept until the TTP run is done, not recorded by DVC (`--notemp` keeps it).
        adapter_weights=temp(results("ttp", "sft", "adapter", "adapter_model.safetensors")),
        loss=results("ttp", "sft", "loss.json"),
        report=results("ttp", "sft", "train.report.json"),
    params:
        ttp=params_json(
            "ttp", keys=("backbone", "lora", "sft", "items", "inference", "selection", "device")
        ),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_sft")
    log:
        logs("ttp", "sft.log"),
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_sft.py --backbone $(dirname {input.backbone})"
        " --sft {input.sft} --items {input.corpus} --examples {input.examples}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter}"
        " --adapter-weights {output.adapter_weights} --loss {output.loss}"
        " --report {output.report} > {log} 2>&1"


rule ttp_rewriter:
    """Decoupled-Stage's rewriter: the SFT recipe on the same targets, token loss only; the
    epoch kept is the one whose validation rewrites the base dense model retrieves best."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        sft=expand(results("ttp", "{ttp_set}", "sft.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
    output:
        adapter=results("ttp", "rewriter", "adapter", "adapter_config.json"),
        # ~20 MB like the SFT adapter's: temporary, not recorded by DVC.
        adapter_weights=temp(results("ttp", "rewriter", "adapter", "adapter_model.safetensors")),
        loss=results("ttp", "rewriter", "loss.json"),
        report=results("ttp", "rewriter", "train.report.json"),
    params:
        ttp=params_json(
            "ttp",
            keys=(
                "backbone", "lora", "sft", "items", "inference", "selection", "decoupled", "dense",
                "device",
            ),
        ),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_rewriter")
    log:
        logs("ttp", "rewriter.log"),
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_sft.py --rewriter --backbone $(dirname {input.backbone})"
        " --sft {input.sft} --items {input.corpus} --examples {input.examples}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter}"
        " --adapter-weights {output.adapter_weights} --loss {output.loss}"
        " --report {output.report} > {log} 2>&1"


rule ttp_embedder:
    """The LLM-embedding baseline (the paper's Qwen-Embedding row): the SFT recipe on the
    same examples without history or generation, InfoNCE only; epoch chosen on validation."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        sft=expand(results("ttp", "{ttp_set}", "sft.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
    output:
        adapter=results("ttp", "embedder", "adapter", "adapter_config.json"),
        # ~20 MB like the SFT adapter's: temporary, not recorded by DVC.
        adapter_weights=temp(results("ttp", "embedder", "adapter", "adapter_model.safetensors")),
        loss=results("ttp", "embedder", "loss.json"),
        report=results("ttp", "embedder", "train.report.json"),
    params:
        ttp=params_json(
            "ttp", keys=("backbone", "lora", "sft", "items", "inference", "selection", "device")
        ),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_embedder")
    log:
        logs("ttp", "embedder.log"),
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_sft.py --embedder --backbone $(dirname {input.backbone})"
        " --sft {input.sft} --items {input.corpus} --examples {input.examples}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter}"
        " --adapter-weights {output.adapter_weights} --loss {output.loss}"
        " --report {output.report} > {log} 2>&1"


rule ttp_rewrites:
    """The frozen rewriter's rewrite of every example of one set (train, valid, test)."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        adapter=results("ttp", "rewriter", "adapter", "adapter_config.json"),
        adapter_weights=results("ttp", "rewriter", "adapter", "adapter_model.safetensors"),
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        rewrites=results("ttp", "{ttp_set}", "rewrites.json"),
    params:
        ttp=params_json("ttp", keys=("backbone", "sft", "items", "inference", "device")),
    benchmark:
        bench("ttp", "ttp_rewrites", "ttp_set")
    log:
        logs("ttp", "rewrites_{ttp_set}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_rewrites.py --backbone $(dirname {input.backbone})"
        " --adapter $(dirname {input.adapter}) --examples {input.examples}"
        " --items {input.corpus} --threads {threads} --params {params.ttp:q}"
        " --output {output.rewrites} > {log} 2>&1"


rule ttp_rl:
    """GRPO (TRL) of one RL variant from the SFT adapter: rewards, KL, dynamic positives;
    `full` chooses the step count on the validation split, the other variants train as many."""
    input:
        unpack(lambda w: ttp_wf.rl_selection_input(config, w.rl_variant)),
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        adapter=results("ttp", "sft", "adapter", "adapter_config.json"),
        adapter_weights=results("ttp", "sft", "adapter", "adapter_model.safetensors"),
        sft=expand(results("ttp", "{ttp_set}", "sft.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
    output:
        adapter=results("ttp", "rl", "{rl_variant}", "adapter", "adapter_config.json"),
        # ~20 MB like the SFT adapter's: temporary, not recorded by DVC.
        adapter_weights=temp(
            results("ttp", "rl", "{rl_variant}", "adapter", "adapter_model.safetensors")
        ),
        log=results("ttp", "rl", "{rl_variant}", "log.json"),
        report=results("ttp", "rl", "{rl_variant}.report.json"),
    params:
        ttp=params_json(
            "ttp", keys=("backbone", "rl", "sft", "items", "inference", "selection", "device")
        ),
        seed=config["seed"],
        selection=lambda w, input: (
            f"--selection-from {input.selection}" if "selection" in input.keys() else ""
        ),
    benchmark:
        bench("ttp", "ttp_rl", "rl_variant")
    log:
        logs("ttp", "rl_{rl_variant}.log"),
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.rl_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_rl.py --variant {wildcards.rl_variant}"
        " --backbone $(dirname {input.backbone}) --sft-adapter $(dirname {input.adapter})"
        " --sft {input.sft} --items {input.corpus} --examples {input.examples}"
        " {params.selection} --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter}"
        " --adapter-weights {output.adapter_weights} --log {output.log}"
        " --report {output.report} > {log} 2>&1"


rule ttp_rl_figure:
    """Reward components and KL per GRPO step of every RL variant (plotting only)."""
    input:
        logs=expand(results("ttp", "rl", "{rl_variant}", "log.json"), rl_variant=TTP_RL_VARIANTS),
    output:
        pdf=shown(generated("ttp_rl_curves.pdf"), "ttp_rl", "TTP", "Figures"),
    params:
        label=config["label"],
        variants=TTP_RL_VARIANTS,
    benchmark:
        bench("ttp", "ttp_rl_figure")
    log:
        logs("ttp", "rl_figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_rl_figure.py --logs {input.logs}"
        " --variants {params.variants} --label {params.label:q} --output {output.pdf} > {log} 2>&1"


rule ttp_dense_ft:
    """Contrastive fine-tuning of a dense baseline's bi-encoder on the training pairs
    (the query, the query with its history, or the rewriter's rewrite: `{variant}`)."""
    input:
        unpack(lambda w: ttp_wf.dense_ft_inputs(config, w.variant)),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
    output:
        model=results("ttp", "dense", "{variant}", "config.json"),
        weights=temp(results("ttp", "dense", "{variant}", "model.safetensors")),
        report=results("ttp", "dense", "{variant}.report.json"),
    params:
        ttp=params_json("ttp", keys=("dense", "items", "selection", "device")),
        seed=config["seed"],
        rewrites=lambda w, input: ttp_wf.rewrites_option(dict(input)),
    benchmark:
        bench("ttp", "ttp_dense_ft", "variant")
    log:
        logs("ttp", "dense_ft_{variant}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_dense_ft.py --variant {wildcards.variant}"
        " --examples {input.examples} --items {input.corpus} {params.rewrites}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q} --model {output.model}"
        " --weights {output.weights}"
        " --report {output.report} > {log} 2>&1"


rule ttp_fusion:
    """A history-fusion baseline (`{fusion}`: UIA's attention over the history, or the
    MAPs-style mixture of attention experts) on the frozen query-only bi-encoder, InfoNCE;
    epoch chosen on validation."""
    input:
        unpack(lambda w: ttp_wf.fusion_inputs(config)),
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
    output:
        model=results("ttp", "fusion", "{fusion}", "fusion.json"),
        # Megabytes of float32 projections: temporary like the bi-encoders' weights.
        weights=temp(results("ttp", "fusion", "{fusion}", "fusion.safetensors")),
        report=results("ttp", "fusion", "{fusion}.report.json"),
    params:
        ttp=params_json("ttp", keys=("fusion", "items", "selection", "device")),
        dense=ttp_wf.dense_model(config, "dense"),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_fusion", "fusion")
    log:
        logs("ttp", "fusion_{fusion}.log"),
    resources:
        mem_mb=3000,
        runtime=30,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_fusion.py --kind {wildcards.fusion}"
        " --examples {input.examples} --items {input.corpus} --dense-model {params.dense:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model {output.model} --weights {output.weights} --report {output.report}"
        " > {log} 2>&1"


rule ttp_teacher_rewrites:
    """The student's teacher (`ttp.student.teacher`) rewrites every example of one set."""
    input:
        # the teacher's backbone and adapter files (those the store's job embeds with too)
        unpack(lambda w: ttp_wf.teacher_inputs(config, w.ttp_set)),
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        rewrites=results("ttp", "{ttp_set}", "teacher_rewrites.json"),
    params:
        ttp=params_json("ttp", keys=("backbone", "sft", "items", "inference", "device")),
    benchmark:
        bench("ttp", "ttp_teacher_rewrites", "ttp_set")
    log:
        logs("ttp", "teacher_rewrites_{ttp_set}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_rewrites.py --backbone $(dirname {input.backbone})"
        " --adapter $(dirname {input.adapter}) --examples {input.examples}"
        " --items {input.corpus} --threads {threads} --params {params.ttp:q}"
        " --output {output.rewrites} > {log} 2>&1"


rule ttp_student:
    """One Table 8 variant of the distilled student: a bi-encoder trained on the original
    view, the teacher's intent-enhanced view and the purchased item (`{student_variant}`)."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        rewrites=expand(results("ttp", "{ttp_set}", "teacher_rewrites.json"), ttp_set=TTP_SETS),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
    output:
        model=results("ttp", "student", "{student_variant}", "config.json"),
        weights=temp(results("ttp", "student", "{student_variant}", "model.safetensors")),
        report=results("ttp", "student", "{student_variant}.report.json"),
    params:
        ttp=params_json("ttp", keys=("student", "items", "selection", "device")),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_student", "student_variant")
    log:
        logs("ttp", "student_{student_variant}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_student.py --variant {wildcards.student_variant}"
        " --examples {input.examples} --rewrites {input.rewrites} --items {input.corpus}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model {output.model} --weights {output.weights}"
        " --report {output.report} > {log} 2>&1"


rule ttp_run:
    """One method's run (TREC) on one example set's test queries, and what it produced."""
    input:
        unpack(lambda w: ttp_wf.run_inputs(config, w.method, w.ttp_set)),
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        run=results("ttp", "{ttp_set}", "runs", "{method}.trec"),
        info=results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
    params:
        ttp=lambda w: ttp_wf.run_params(config, w.method),
        models=lambda w: compact_json(ttp_wf.run_models(config, w.method, w.ttp_set)),
        rewrites=lambda w, input: ttp_wf.rewrites_option(dict(input)),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        # item encodings shared by a TTP method and its w/o-Intent-Q retrieval (untracked)
        encoding_cache=results("ttp", "encodings"),
    benchmark:
        bench("ttp", "ttp_run", "ttp_set", "method")
    log:
        logs("ttp", "run_{ttp_set}_{method}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=lambda w: ttp_wf.ttp_gpu(config, w.method),
    threads: lambda w: ttp_wf.run_threads(config, w.method)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_run.py --method {wildcards.method}"
        " --examples {input.examples} --items {input.corpus} --models {params.models:q}"
        " {params.rewrites} --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --run {output.run} --info {output.info}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " > {log} 2>&1"


rule ttp_cache_store:
    """One set's offline embedding store: the teacher's TTP embeddings of the test users'
    frequent broad queries (serving's cache tier)."""
    input:
        unpack(lambda w: ttp_wf.teacher_inputs(config, w.ttp_set)),
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        store=results("ttp", "{ttp_set}", "cache", "store.json"),
        embeddings=results("ttp", "{ttp_set}", "cache", "embeddings.parquet"),
        report=results("ttp", "{ttp_set}", "cache.report.json"),
    params:
        ttp=ttp_wf.cache_store_params(config),
        models=ttp_wf.cache_store_models(config),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_cache_store", "ttp_set")
    log:
        logs("ttp", "cache_store_{ttp_set}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_cache_store.py --examples {input.examples}"
        " --items {input.corpus} --models {params.models:q} --params {params.ttp:q}"
        " --seed {params.seed} --threads {threads} --out-dir $(dirname {output.store})"
        " --report {output.report} > {log} 2>&1"


rule ttp_relevance_pairs:
    """One set's Relevance set: graded (query, item) pairs, built or read from a file."""
    input:
        unpack(lambda w: ttp_wf.relevance_pair_inputs(config, w.ttp_set)),
    output:
        pairs=results("ttp", "{ttp_set}", "relevance", "pairs.jsonl"),
        report=results("ttp", "{ttp_set}", "relevance", "pairs.report.json"),
    params:
        ttp=params_json("ttp", keys=("relevance_test",)),
        sources=lambda w, input: " ".join(f"--{k} {v}" for k, v in dict(input).items()),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_relevance_pairs", "ttp_set")
    log:
        logs("ttp", "relevance_pairs_{ttp_set}.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_relevance_pairs.py {params.sources}"
        " --params {params.ttp:q} --seed {params.seed}"
        " --pairs {output.pairs} --report {output.report} > {log} 2>&1"


rule ttp_relevance:
    """One method's history-free scores of the Relevance pairs and their Spearman."""
    input:
        unpack(lambda w: ttp_wf.run_inputs(config, w.method, w.ttp_set)),
        pairs=results("ttp", "{ttp_set}", "relevance", "pairs.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
        # after the method's run, whose item encodings it reads from the cache
        run_info=results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
    output:
        results("ttp", "{ttp_set}", "relevance", "{method}.json"),
    params:
        ttp=lambda w: ttp_wf.run_params(config, w.method, ("evaluation",)),
        models=lambda w: compact_json(ttp_wf.run_models(config, w.method, w.ttp_set)),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        encoding_cache=results("ttp", "encodings"),
    benchmark:
        bench("ttp", "ttp_relevance", "ttp_set", "method")
    log:
        logs("ttp", "relevance_{ttp_set}_{method}.log"),
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=lambda w: ttp_wf.ttp_gpu(config, w.method),
    threads: lambda w: ttp_wf.run_threads(config, w.method)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_relevance.py --method {wildcards.method}"
        " --pairs {input.pairs} --items {input.corpus} --models {params.models:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " --output {output} > {log} 2>&1"


rule ttp_evaluate:
    """Measures per query (ir_measures), means with bootstrap CIs, the methods' labels."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        runs=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.trec"),
            ttp_set=TTP_SETS,
            method=TTP_METHODS,
        ),
        # The first set's run infos name each method's models (no set when TTP is off).
        infos=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
            ttp_set=TTP_SETS[:1],
            method=TTP_METHODS,
        ),
    output:
        per_query=results("ttp", "per_query.parquet"),
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
        runs=ttp_wf.run_specs(config),
    benchmark:
        bench("ttp", "ttp_evaluate")
    log:
        logs("ttp", "evaluate.log"),
    resources:
        mem_mb=2000,
        runtime=20,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_evaluate.py --examples {input.examples}"
        " --runs {params.runs} --infos {input.infos} --seed {params.seed}"
        " --params {params.ttp:q} --per-query {output.per_query} --summary {output.summary}"
        " --labels {output.labels} > {log} 2>&1"


rule ttp_table:
    """The paper's Table 4 layout (methods x General/Broad/LongTail) as CSV and LaTeX."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        paper=TTP["paper_reference"] or [],
        relevance=expand(
            results("ttp", "{ttp_set}", "relevance", "{method}.json"),
            ttp_set=TTP_SETS,
            method=TTP_RELEVANCE_METHODS,
        ),
    output:
        csv=shown(results("ttp", "table4.csv"), "ttp_table4", "TTP", "Tables"),
        tex=generated("ttp_table4.tex"),
    params:
        ttp=params_json("ttp", keys=("methods", "paper_reference")),
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_table")
    log:
        logs("ttp", "table.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table.py --summary {input.summary}"
        " --labels {input.labels} --params {params.ttp:q} --label {params.label:q}"
        " --relevance {input.relevance} --csv {output.csv} --tex {output.tex} > {log} 2>&1"


rule ttp_table8:
    """The distilled student's Table 8 (teacher and student variants, Recall@20)."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        paper=TTP["paper_reference"] or [],
    output:
        csv=results("ttp", "table8.csv"),
        tex=generated("ttp_table8.tex"),
    params:
        ttp=params_json("ttp", keys=("methods", "student", "paper_reference")),
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_table8")
    log:
        logs("ttp", "table8.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table8.py --summary {input.summary}"
        " --labels {input.labels} --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv} --tex {output.tex} > {log} 2>&1"


rule ttp_ablations:
    """Tables 6 and 7, Figure 5 (Recall@20, paired bootstrap) and the paper's TTP claims."""
    input:
        per_query=results("ttp", "per_query.parquet"),
        paper_results="config/paper_results/ttp.yaml",
        relevance=expand(
            results("ttp", "{ttp_set}", "relevance", "{method}.json"),
            ttp_set=TTP_SETS,
            method=TTP_RELEVANCE_METHODS,
        ),
        history_sweep=results("ttp", "history", "per_query.parquet") if TTP_HISTORY_VALUES else [],
        public=results("ttp", "public", "claims.json") if TTP_PUBLIC else [],
    output:
        table6=results("ttp", "ablations", "table6.parquet"),
        table7=results("ttp", "ablations", "table7.parquet"),
        figure5=results("ttp", "ablations", "figure5.parquet"),
        claims=results("ttp", "ablations", "claims.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation", "student", "history")),
        seed=config["seed"],
        relevance=lambda w, input: " ".join(input.relevance),
        history_sweep=lambda w, input: (
            f"--history-sweep {input.history_sweep}" if input.history_sweep else ""
        ),
        public=lambda w, input: f"--public-claims {input.public}" if input.public else "",
    benchmark:
        bench("ttp", "ttp_ablations")
    log:
        logs("ttp", "ablations.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_ablations.py --per-query {input.per_query}"
        " --paper-results {input.paper_results} --params {params.ttp:q} --seed {params.seed}"
        " --relevance {params.relevance} {params.history_sweep} {params.public}"
        " --out-dir $(dirname {output.claims}) > {log} 2>&1"


rule ttp_ablation_tables:
    """Tables 6 and 7 (CSV, LaTeX), Figure 5 (CSV, PDF) and the claims (Markdown, LaTeX)."""
    input:
        table6=results("ttp", "ablations", "table6.parquet"),
        table7=results("ttp", "ablations", "table7.parquet"),
        figure5=results("ttp", "ablations", "figure5.parquet"),
        claims=results("ttp", "ablations", "claims.json"),
    output:
        table6=shown(results("ttp", "table6.csv"), "ttp_ablations", "TTP", "Tables"),
        table7=shown(results("ttp", "table7.csv"), "ttp_ablations", "TTP", "Tables"),
        figure5=results("ttp", "figure5.csv"),
        claims=results("ttp", "claims.md"),
        table6_tex=generated("ttp_table6.tex"),
        table7_tex=generated("ttp_table7.tex"),
        claims_tex=generated("ttp_claims.tex"),
        figure=shown(generated("ttp_figure5.pdf"), "ttp_figure5", "TTP", "Figures"),
    params:
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_ablation_tables")
    log:
        logs("ttp", "ablation_tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_ablation_tables.py"
        " --ablation-dir $(dirname {input.claims}) --label {params.label:q}"
        " --tex-dir $(dirname {output.table6_tex}) --csv-dir $(dirname {output.table6})"
        " --figure {output.figure} > {log} 2>&1"


rule ttp_loss_figure:
    """The SFT loss curve (plotting only; restyling never re-trains)."""
    input:
        loss=results("ttp", "sft", "loss.json"),
        report=results("ttp", "sft", "train.report.json"),
    output:
        pdf=shown(generated("ttp_sft_loss.pdf"), "ttp_loss", "TTP", "Figures"),
    params:
        label=config["label"],
    benchmark:
        bench("ttp", "ttp_loss_figure")
    log:
        logs("ttp", "loss_figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_loss_figure.py --loss {input.loss}"
        " --report {input.report} --label {params.label:q} --output {output.pdf} > {log} 2>&1"


rule ttp_figure8:
    """Figure 8: each serving path's Avg Recall@20 against its per-query latency (the
    serving benchmark's checked-in JSON); the cache's hit rate from the ttp_cached runs."""
    input:
        summary=results("ttp", "summary.parquet"),
        labels=results("ttp", "labels.json"),
        latency=TTP["serving"]["latency"] or [],
        cached=expand(
            results("ttp", "{ttp_set}", "runs", "{method}.info.json"),
            ttp_set=TTP_SETS,
            method=ttp_wf.serving_methods(config),
        ),
    output:
        csv=shown(results("ttp", "figure8.csv"), "ttp_figure8", "TTP", "Tables"),
        pdf=shown(generated("ttp_figure8.pdf"), "ttp_figure8", "TTP", "Figures"),
    params:
        teacher=TTP["student"]["teacher"],
        label=config["label"],
        latency=lambda w, input: input.latency or "",
    benchmark:
        bench("ttp", "ttp_figure8")
    log:
        logs("ttp", "figure8.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_figure8.py --summary {input.summary}"
        " --labels {input.labels} --latency {params.latency:q} --cached-infos {input.cached}"
        " --teacher {params.teacher} --label {params.label:q} --csv {output.csv}"
        " --pdf {output.pdf} > {log} 2>&1"


# --------------------------------------------------------------------------- history sweep
rule ttp_history_examples:
    """One set's examples for one history length N of the sweep (Figure 6): the training
    searches capped, every example's top-N history selected again."""
    input:
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        examples=results("ttp", "history", "n{hist_n}", "{ttp_set}", "examples.jsonl"),
        report=results("ttp", "history", "n{hist_n}", "{ttp_set}", "examples.report.json"),
    params:
        ttp=lambda w: ttp_wf.history_params(
            config, w.hist_n, ("split", "history", "items", "device")
        ),
    benchmark:
        bench("ttp", "ttp_history_examples", "ttp_set", "hist_n")
    log:
        logs("ttp", "history_examples_{ttp_set}_n{hist_n}.log"),
    resources:
        mem_mb=3000,
        runtime=20,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_history_examples.py --examples {input.examples}"
        " --items {input.corpus} --params {params.ttp:q} --output {output.examples}"
        " --report {output.report} > {log} 2>&1"


rule ttp_history_teacher:
    """The teacher's SFT targets for one sweep point's examples (its history)."""
    input:
        examples=results("ttp", "history", "n{hist_n}", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        sft=results("ttp", "history", "n{hist_n}", "{ttp_set}", "sft.jsonl"),
        report=results("ttp", "history", "n{hist_n}", "{ttp_set}", "teacher.report.json"),
    params:
        ttp=lambda w: ttp_wf.history_params(
            config, w.hist_n, ("teacher", "history", "items", "device")
        ),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_history_teacher", "ttp_set", "hist_n")
    log:
        logs("ttp", "history_teacher_{ttp_set}_n{hist_n}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_teacher.py --examples {input.examples}"
        " --items {input.corpus} --seed {params.seed} --params {params.ttp:q}"
        " --output {output.sft} --report {output.report} > {log} 2>&1"


rule ttp_history_sft:
    """The SFT recipe (the sweep's training budget) at one history length N."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        sft=expand(
            results("ttp", "history", "n{{hist_n}}", "{ttp_set}", "sft.jsonl"), ttp_set=TTP_SETS
        ),
        corpus=expand(results("ttp", "{ttp_set}", "items.parquet"), ttp_set=TTP_SETS),
        examples=expand(
            results("ttp", "history", "n{{hist_n}}", "{ttp_set}", "examples.jsonl"),
            ttp_set=TTP_SETS,
        ),
    output:
        adapter=results("ttp", "history", "n{hist_n}", "adapter", "adapter_config.json"),
        adapter_weights=temp(
            results("ttp", "history", "n{hist_n}", "adapter", "adapter_model.safetensors")
        ),
        loss=results("ttp", "history", "n{hist_n}", "loss.json"),
        report=results("ttp", "history", "n{hist_n}", "train.report.json"),
    params:
        ttp=lambda w: ttp_wf.history_params(
            config,
            w.hist_n,
            ("backbone", "lora", "sft", "items", "inference", "selection", "device"),
        ),
        seed=config["seed"],
    benchmark:
        bench("ttp", "ttp_history_sft", "hist_n")
    log:
        logs("ttp", "history_sft_n{hist_n}.log"),
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=ttp_wf.ttp_gpu(config),
    threads: ttp_wf.sft_threads(config)
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_sft.py --backbone $(dirname {input.backbone})"
        " --sft {input.sft} --items {input.corpus} --examples {input.examples}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter}"
        " --adapter-weights {output.adapter_weights} --loss {output.loss}"
        " --report {output.report} > {log} 2>&1"


rule ttp_history_run:
    """The test run of one sweep point's TTP model on one set (its N history items)."""
    input:
        backbone=results("ttp", "backbone", "config.json"),
        backbone_weights=results("ttp", "backbone", "model.safetensors"),
        adapter=results("ttp", "history", "n{hist_n}", "adapter", "adapter_config.json"),
        adapter_weights=results(
            "ttp", "history", "n{hist_n}", "adapter", "adapter_model.safetensors"
        ),
        examples=results("ttp", "history", "n{hist_n}", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
    output:
        run=results("ttp", "history", "n{hist_n}", "{ttp_set}", "ttp.trec"),
        info=results("ttp", "history", "n{hist_n}", "{ttp_set}", "ttp.info.json"),
    params:
        ttp=lambda w: ttp_wf.history_run_params(config, w.hist_n),
        models=lambda w: ttp_wf.history_run_models(config, w.hist_n),
        seed=config["seed"],
        model_cache=GGUF_CACHE,
        encoding_cache=results("ttp", "encodings"),
    benchmark:
        bench("ttp", "ttp_history_run", "ttp_set", "hist_n")
    log:
        logs("ttp", "history_run_{ttp_set}_n{hist_n}.log"),
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=ttp_wf.ttp_gpu(config, "ttp"),
    threads: ttp_wf.run_threads(config, "ttp")
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_run.py --method ttp"
        " --examples {input.examples} --items {input.corpus} --models {params.models:q}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --run {output.run} --info {output.info}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " > {log} 2>&1"


rule ttp_history_evaluate:
    """Recall@20 per test set and N with bootstrap CIs (Figure 6's values) and the sweep's
    per-query measures (the history_length_peak claim's)."""
    input:
        examples=expand(results("ttp", "{ttp_set}", "examples.jsonl"), ttp_set=TTP_SETS),
        runs=expand(
            results("ttp", "history", "n{hist_n}", "{ttp_set}", "ttp.trec"),
            hist_n=TTP_HISTORY_VALUES,
            ttp_set=TTP_SETS,
        ),
        # each run's well-formed share (read beside its .trec)
        infos=expand(
            results("ttp", "history", "n{hist_n}", "{ttp_set}", "ttp.info.json"),
            hist_n=TTP_HISTORY_VALUES,
            ttp_set=TTP_SETS,
        ),
    output:
        per_query=results("ttp", "history", "per_query.parquet"),
        figure6=results("ttp", "history", "figure6.parquet"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
        runs=lambda w: " ".join(
            f"{n}:{s}:{results('ttp', 'history', f'n{n}', s, 'ttp.trec')}"
            for n in TTP_HISTORY_VALUES
            for s in TTP_SETS
        ),
    benchmark:
        bench("ttp", "ttp_history_evaluate")
    log:
        logs("ttp", "history_evaluate.log"),
    resources:
        mem_mb=2000,
        runtime=20,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_history_evaluate.py --examples {input.examples}"
        " --runs {params.runs} --seed {params.seed} --params {params.ttp:q}"
        " --per-query {output.per_query} --figure6 {output.figure6} > {log} 2>&1"


rule ttp_figure6:
    """Figure 6: Recall@20 per test set against the history length N (CSV and PDF)."""
    input:
        figure6=results("ttp", "history", "figure6.parquet") if TTP_HISTORY_VALUES else [],
        paper_results="config/paper_results/ttp.yaml",
    output:
        csv=results("ttp", "figure6.csv"),
        pdf=shown(generated("ttp_figure6.pdf"), "ttp_figure6", "TTP", "Figures"),
    params:
        label=config["label"],
        main_n=TTP["history"]["n"],
        rows=lambda w, input: f"--rows {input.figure6}" if input.figure6 else "",
    benchmark:
        bench("ttp", "ttp_figure6")
    log:
        logs("ttp", "figure6.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_figure6.py {params.rows}"
        " --paper-results {input.paper_results} --main-n {params.main_n}"
        " --label {params.label:q} --csv {output.csv} --pdf {output.pdf} > {log} 2>&1"


for _fmt in ("personalwab", "kuaisearch"):

    rule:
        name:
            f"ttp_public_fixture_{_fmt}"
        wildcard_constraints:
            public="|".join(ttp_wf.public_sets_of(config, _fmt)) or "(?!)",
        input:
            unpack(lambda w: ttp_wf.public_fixture_inputs(config, w.public)),
        output:
            files=[
                results("ttp", "public", "{public}", "files", *f.split("/"))
                for f in ttp_wf.PUBLIC_FIXTURE_FILES[_fmt]
            ],
            report=results("ttp", "public", "{public}", "files.report.json"),
        params:
            fmt=_fmt,
            domain=lambda w: TTP_PUBLIC[w.public]["fixture_domain"],
            seed=config["seed"],
            test_share=TTP["split"]["test_share"],
            out_dir=lambda w: ttp_wf.public_fixture_dir(RESULTS, w.public),
        benchmark:
            bench("ttp", f"ttp_public_fixture_{_fmt}", "public")
        log:
            logs("ttp", "public_fixture_{public}.log"),
        resources:
            mem_mb=1000,
            runtime=10,
        threads: 1
        conda:
            "../envs/ttp.yaml"
        shell:
            "python -u workflow_scripts/ttp_public_fixture.py --format {params.fmt}"
            " --domain {params.domain} --reviews {input.reviews} --meta {input.meta}"
            " --search-log {input.search_log} --seed {params.seed}"
            " --test-share {params.test_share} --out-dir {params.out_dir:q}"
            " --report {output.report} > {log} 2>&1"


rule ttp_public_examples:
    """One public set's test searches (Table 5) with their top-N history, and its items."""
    input:
        unpack(lambda w: ttp_wf.public_source_inputs(config, w.public)),
    output:
        examples=results("ttp", "{public}", "examples.jsonl"),
        corpus=results("ttp", "{public}", "items.parquet"),
        report=results("ttp", "{public}", "examples.report.json"),
    params:
        ttp=params_json("ttp", keys=("history", "items", "public", "device")),
        fmt=lambda w: TTP_PUBLIC[w.public]["format"],
        data_dir=lambda w: ttp_wf.public_data_dir(config, w.public),
    benchmark:
        bench("ttp", "ttp_public_examples", "public")
    log:
        logs("ttp", "public_examples_{public}.log"),
    resources:
        mem_mb=3000,
        runtime=20,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_public_examples.py --set {wildcards.public}"
        " --format {params.fmt} --data-dir {params.data_dir:q} --params {params.ttp:q}"
        " --examples {output.examples} --items {output.corpus} --report {output.report}"
        " > {log} 2>&1"


rule ttp_public_evaluate:
    """Table 5's measures (HR@20, nDCG@20, Recall@20; bootstrap CIs) of every public set's
    runs, and the paper's claim on them."""
    input:
        runs=[path for _, _, path in ttp_wf.public_run_specs(config)],
        examples=expand(results("ttp", "{public}", "examples.jsonl"), public=list(TTP_PUBLIC)),
        paper_results="config/paper_results/ttp.yaml",
    output:
        per_query=results("ttp", "public", "per_query.parquet"),
        summary=results("ttp", "public", "summary.parquet"),
        claims=results("ttp", "public", "claims.json"),
    params:
        ttp=params_json("ttp", keys=("evaluation",)),
        seed=config["seed"],
        runs=" ".join(f"{s}:{m}:{p}" for s, m, p in ttp_wf.public_run_specs(config)),
        cells=compact_json(ttp_wf.public_cells(config, "config/paper_results/ttp.yaml")),
        examples=" ".join(
            f"{s}:{RESULTS}/ttp/{s}/examples.jsonl" for s in TTP_PUBLIC
        ),
    benchmark:
        bench("ttp", "ttp_public_evaluate")
    log:
        logs("ttp", "public_evaluate.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_public_evaluate.py --runs {params.runs}"
        " --examples {params.examples} --paper-results {input.paper_results}"
        " --params {params.ttp:q} --cells {params.cells:q} --seed {params.seed}"
        " --per-query {output.per_query}"
        " --summary {output.summary} --claims {output.claims} > {log} 2>&1"


rule ttp_table5:
    """Table 5 (public benchmarks, ours beside the paper's); without public sets, the
    paper's values and the reason ours are absent."""
    input:
        summary=results("ttp", "public", "summary.parquet") if TTP_PUBLIC else [],
        paper=TTP["paper_reference"] or [],
    output:
        csv=results("ttp", "table5.csv"),
        tex=generated("ttp_table5.tex"),
    params:
        ttp=params_json("ttp", keys=("public", "paper_reference")),
        label=config["label"],
        summary=lambda w, input: f"--summary {input.summary}" if input.summary else "",
    benchmark:
        bench("ttp", "ttp_table5")
    log:
        logs("ttp", "table5.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/ttp_table5.py {params.summary}"
        " --params {params.ttp:q} --label {params.label:q}"
        " --csv {output.csv} --tex {output.tex} > {log} 2>&1"


if TTP["enabled"]:
    FINAL_TARGETS.extend(
        [
            results("ttp", "table4.csv"),
            results("ttp", "table5.csv"),
            generated("ttp_table5.tex"),
            generated("ttp_table4.tex"),
            generated("ttp_sft_loss.pdf"),
            results("ttp", "table8.csv"),
            generated("ttp_table8.tex"),
            results("ttp", "figure8.csv"),
            generated("ttp_figure8.pdf"),
            results("ttp", "figure6.csv"),
            generated("ttp_figure6.pdf"),
        ]
    )
    if TTP_RL_VARIANTS:
        FINAL_TARGETS.append(generated("ttp_rl_curves.pdf"))
    FINAL_TARGETS.extend(
        [
            results("ttp", "table6.csv"),
            results("ttp", "table7.csv"),
            results("ttp", "figure5.csv"),
            results("ttp", "claims.md"),
            generated("ttp_table6.tex"),
            generated("ttp_table7.tex"),
            generated("ttp_claims.tex"),
            generated("ttp_figure5.pdf"),
        ]
    )
