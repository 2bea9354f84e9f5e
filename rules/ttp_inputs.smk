# TTP stage, its inputs: the example sets with their selected histories (from the sample
# world's search log or a public release), the teacher's SFT targets, the Relevance pairs and
# the public sets' fixtures (a sample-world domain written in a public release's
# format) and examples. Names (TTP_SETS, ...) come from rules/ttp.smk.


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_examples.py --set {wildcards.ttp_set}"
        " --source {params.source} {params.sources:q} --seed {params.seed} --params {params.ttp:q}"
        " --examples {output.examples:q} --items {output.corpus:q} --report {output.report:q}"
        " > {log:q} 2>&1"


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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_teacher.py --examples {input.examples:q}"
        " --items {input.corpus:q} --seed {params.seed} --params {params.ttp:q}"
        " --output {output.sft:q} --report {output.report:q} > {log:q} 2>&1"


rule ttp_relevance_pairs:
    """One set's Relevance set: graded (query, item) pairs, built or read from a file."""
    input:
        unpack(lambda w: ttp_wf.relevance_pair_inputs(config, w.ttp_set)),
    output:
        pairs=results("ttp", "{ttp_set}", "relevance", "pairs.jsonl"),
        report=results("ttp", "{ttp_set}", "relevance", "pairs.report.json"),
    params:
        ttp=params_json("ttp", keys=("relevance_test",)),
        sources=lambda w, input: [a for k, v in dict(input).items() for a in (f"--{k}", v)],
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
        "python -u workflow_scripts/ttp_relevance_pairs.py {params.sources:q}"
        " --params {params.ttp:q} --seed {params.seed}"
        " --pairs {output.pairs:q} --report {output.report:q} > {log:q} 2>&1"


rule ttp_public_examples:
    """One public set's test searches (Table 5) with their top-N history, and its items."""
    input:
        unpack(lambda w: ttp_public_wf.public_source_inputs(config, w.public)),
    output:
        examples=results("ttp", "{public}", "examples.jsonl"),
        corpus=results("ttp", "{public}", "items.parquet"),
        report=results("ttp", "{public}", "examples.report.json"),
    params:
        ttp=params_json("ttp", keys=("history", "items", "public", "device")),
        fmt=lambda w: TTP_PUBLIC[w.public]["format"],
        data_dir=lambda w: ttp_public_wf.public_data_dir(config, w.public),
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
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_public_examples.py --set {wildcards.public}"
        " --format {params.fmt} --data-dir {params.data_dir:q} --params {params.ttp:q}"
        " --examples {output.examples:q} --items {output.corpus:q} --report {output.report:q}"
        " > {log:q} 2>&1"


# One rule per public format: its files written from a sample-world domain (fixture scale).
for _fmt in ("personalwab", "kuaisearch"):

    rule:
        name:
            f"ttp_public_fixture_{_fmt}"
        wildcard_constraints:
            public="|".join(ttp_public_wf.public_sets_of(config, _fmt)) or "(?!)",
        input:
            unpack(lambda w: ttp_public_wf.public_fixture_inputs(config, w.public)),
        output:
            files=[
                results("ttp", "public", "{public}", "files", *f.split("/"))
                for f in ttp_public_wf.PUBLIC_FIXTURE_FILES[_fmt]
            ],
            report=results("ttp", "public", "{public}", "files.report.json"),
        params:
            fmt=_fmt,
            domain=lambda w: TTP_PUBLIC[w.public]["fixture_domain"],
            seed=config["seed"],
            test_share=TTP["split"]["test_share"],
            out_dir=lambda w: ttp_public_wf.public_fixture_dir(RESULTS, w.public),
        benchmark:
            bench("ttp", f"ttp_public_fixture_{_fmt}", "public")
        log:
            logs("ttp", "public_fixture_{public}.log"),
        resources:
            mem_mb=1000,
            runtime=10,
        threads: 1
        conda:
            workflow_support.conda_env(config, "ttp")
        shell:
            "python -u workflow_scripts/ttp_public_fixture.py --format {params.fmt}"
            " --domain {params.domain} --reviews {input.reviews:q} --meta {input.meta:q}"
            " --search-log {input.search_log:q} --seed {params.seed}"
            " --test-share {params.test_share} --out-dir {params.out_dir:q}"
            " --report {output.report:q} > {log:q} 2>&1"
