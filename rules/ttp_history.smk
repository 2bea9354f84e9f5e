# TTP stage, the history-length sweep (Figure 6): examples, teacher targets, SFT and runs
# at each history length N of ttp.history_sweep.values. Names come from rules/ttp.smk.


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_history_examples.py --examples {input.examples:q}"
        " --items {input.corpus:q} --params {params.ttp:q} --output {output.examples:q}"
        " --report {output.report:q} > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_teacher.py --examples {input.examples:q}"
        " --items {input.corpus:q} --seed {params.seed} --params {params.ttp:q}"
        " --output {output.sft:q} --report {output.report:q} > {log:q} 2>&1"


# The SFT recipe (the sweep's training budget) at one history length N.
use rule ttp_sft as ttp_history_sft with:
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
        mode="",
    benchmark:
        bench("ttp", "ttp_history_sft", "hist_n")
    log:
        logs("ttp", "history_sft_n{hist_n}.log"),


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_run.py --method ttp"
        " --examples {input.examples:q} --items {input.corpus:q} --models {params.models:q}"
        " --seed {params.seed} --threads {threads}"
        " --params {params.ttp:q} --run {output.run:q} --info {output.info:q}"
        " --model-cache {params.model_cache:q} --encoding-cache {params.encoding_cache:q}"
        " > {log:q} 2>&1"


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
        runs=lambda w: [
            f"{n}:{s}:{results('ttp', 'history', f'n{n}', s, 'ttp.trec')}"
            for n in TTP_HISTORY_VALUES
            for s in TTP_SETS
        ],
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
        "python -u workflow_scripts/ttp_history_evaluate.py --examples {input.examples:q}"
        " --runs {params.runs:q} --seed {params.seed} --params {params.ttp:q}"
        " --per-query {output.per_query:q} --figure6 {output.figure6:q} > {log:q} 2>&1"
