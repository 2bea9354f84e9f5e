# TTP stage, training: the backbone, SFT and the two models trained by its recipe (the
# rewriter, the LLM embedder), the rewriter's rewrites, GRPO per RL variant, the dense
# baselines' fine-tuning, the history-fusion modules, the distilled student and its serving
# cache. Names come from rules/ttp.smk.


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
        " --config {output.config:q} --info {output.info:q} --weights {output.weights:q}"
        " --model-cache {params.model_cache:q} > {log:q} 2>&1"


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
        # SFT itself; the rewriter and the embedder add their flag (the rules below)
        mode="",
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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_sft.py{params.mode} --backbone \"$(dirname {input.backbone:q})\""
        " --sft {input.sft:q} --items {input.corpus:q} --examples {input.examples:q}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter:q}"
        " --adapter-weights {output.adapter_weights:q} --loss {output.loss:q}"
        " --report {output.report:q} > {log:q} 2>&1"


# Decoupled-Stage's rewriter: the SFT recipe on the same targets, token loss only; the epoch
# kept is the one whose validation rewrites the base dense model retrieves best.
use rule ttp_sft as ttp_rewriter with:
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
        mode=" --rewriter",
    benchmark:
        bench("ttp", "ttp_rewriter")
    log:
        logs("ttp", "rewriter.log"),


# The LLM-embedding baseline (the paper's Qwen-Embedding row): the SFT recipe on the same
# examples without history or generation, InfoNCE only; epoch chosen on validation.
use rule ttp_sft as ttp_embedder with:
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
        mode=" --embedder",
    benchmark:
        bench("ttp", "ttp_embedder")
    log:
        logs("ttp", "embedder.log"),


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_rewrites.py --backbone \"$(dirname {input.backbone:q})\""
        " --adapter \"$(dirname {input.adapter:q})\" --examples {input.examples:q}"
        " --items {input.corpus:q} --threads {threads} --params {params.ttp:q}"
        " --output {output.rewrites:q} > {log:q} 2>&1"


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
            ["--selection-from", input.selection] if "selection" in input.keys() else []
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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_rl.py --variant {wildcards.rl_variant}"
        " --backbone \"$(dirname {input.backbone:q})\" --sft-adapter \"$(dirname {input.adapter:q})\""
        " --sft {input.sft:q} --items {input.corpus:q} --examples {input.examples:q}"
        " {params.selection:q} --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --adapter {output.adapter:q}"
        " --adapter-weights {output.adapter_weights:q} --log {output.log:q}"
        " --report {output.report:q} > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_dense_ft.py --variant {wildcards.variant}"
        " --examples {input.examples:q} --items {input.corpus:q} {params.rewrites:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q} --model {output.model:q}"
        " --weights {output.weights:q}"
        " --report {output.report:q} > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_fusion.py --kind {wildcards.fusion}"
        " --examples {input.examples:q} --items {input.corpus:q} --dense-model {params.dense:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model {output.model:q} --weights {output.weights:q} --report {output.report:q}"
        " > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_rewrites.py --backbone \"$(dirname {input.backbone:q})\""
        " --adapter \"$(dirname {input.adapter:q})\" --examples {input.examples:q}"
        " --items {input.corpus:q} --threads {threads} --params {params.ttp:q}"
        " --output {output.rewrites:q} > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_student.py --variant {wildcards.student_variant}"
        " --examples {input.examples:q} --rewrites {input.rewrites:q} --items {input.corpus:q}"
        " --seed {params.seed} --threads {threads} --params {params.ttp:q}"
        " --model {output.model:q} --weights {output.weights:q}"
        " --report {output.report:q} > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_cache_store.py --examples {input.examples:q}"
        " --items {input.corpus:q} --models {params.models:q} --params {params.ttp:q}"
        " --seed {params.seed} --threads {threads} --out-dir \"$(dirname {output.store:q})\""
        " --report {output.report:q} > {log:q} 2>&1"
