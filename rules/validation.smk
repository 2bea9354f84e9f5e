# Validation stage (PQB section 6, docs/validation.md): blinded items from the query pairs ->
# LLM judge over an OpenAI-compatible endpoint (the embedded default starts a local server for
# the duration of the judge rule) -> annotation exports (Label Studio, CSV, guide) -> human
# labels (imported files, or simulated annotators on the embedded default), adjudication and
# agreement -> the LLM-vs-human and agreement tables and the rating-distribution figure.
VALIDATION = config["validation"]
VALIDATION_DIMENSIONS = VALIDATION["judge"]["dimensions"]
# Answers of the judge, keyed by model, prompt version, input and sampling: a rerun makes no
# call. Outside the DAG (like the model cache): deleting it only costs calls.
JUDGE_CACHE = results("judge_cache", "judge.sqlite") if VALIDATION["judge"]["cache"] else ""
SYNTHETIC = str(config["data"]["source"] == "sample").lower()


rule validation_items:
    """Blinded items (one per query pair) and their hidden key; the stratified human sample."""
    input:
        benchmarks=expand(results("queries", "{domain}", "benchmark.jsonl"), domain=DOMAINS),
        sentences=expand(results("data", "{domain}", "user_sentences.parquet"), domain=DOMAINS),
        edits=expand(results("errors", "{domain}", "edits.parquet"), domain=DOMAINS),
    output:
        judge_items=results("validation", "items.jsonl"),
        human_items=results("validation", "human_items.jsonl"),
        key=results("validation", "key.jsonl"),
        report=results("validation", "items.report.json"),
    params:
        # What the items read: the sample, and which questions the judge will be asked.
        validation=compact_json(
            {
                "sample": VALIDATION["sample"],
                "judge": {k: VALIDATION["judge"][k] for k in ("scope", "dimensions")},
            }
        ),
        domains=" ".join(DOMAINS),
        seed=config["seed"],
    benchmark:
        bench("validation", "validation_items")
    log:
        logs("validation", "items.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/validation.yaml"
    shell:
        "python -u workflow_scripts/validation_items.py --domains {params.domains}"
        " --benchmarks {input.benchmarks:q} --sentences {input.sentences:q} --edits {input.edits:q}"
        " --params {params.validation:q} --seed {params.seed} --items {output.judge_items:q}"
        " --human-items {output.human_items:q} --key {output.key:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule validation_judge:
    """Every question of the items to the LLM judge (cached answers; failures counted)."""
    input:
        judge_items=rules.validation_items.output.judge_items,
    output:
        judgements=results("validation", "judgements.csv"),
        report=results("validation", "judge.report.json"),
    params:
        judge=params_json("validation", "judge"),
        seed=config["seed"],
        cache=JUDGE_CACHE,
        model_cache=GGUF_CACHE,  # rules/common.smk
    benchmark:
        bench("validation", "validation_judge")
    log:
        main=logs("validation", "judge.log"),
        server=logs("validation", "judge_server.log"),
    resources:
        mem_mb=3000,
        runtime=120,
    threads: config["threads"]
    conda:
        "../envs/validation.yaml"
    shell:
        "python -u workflow_scripts/validation_judge.py --items {input.judge_items:q}"
        " --params {params.judge:q} --seed {params.seed} --threads {threads}"
        " --cache {params.cache:q} --model-cache {params.model_cache:q}"
        " --server-log {log.server:q} --judgements {output.judgements:q}"
        " --report {output.report:q} > {log.main:q} 2>&1"


rule validation_export:
    """The human sample for annotators: Label Studio tasks and labeling config, a CSV, the
    annotator guide (from the judge's prompt files) and the annotator assignment."""
    input:
        human_items=rules.validation_items.output.human_items,
    output:
        tasks=results("validation", "annotation", "label_studio_tasks.json"),
        config=results("validation", "annotation", "label_studio_config.xml"),
        csv=results("validation", "annotation", "annotation.csv"),
        guide=results("validation", "annotation", "annotator_guide.md"),
        assignment=results("validation", "annotation", "assignment.csv"),
    params:
        human=params_json("validation", "human"),
        dimensions=" ".join(VALIDATION_DIMENSIONS),
        seed=config["seed"],
    benchmark:
        bench("validation", "validation_export")
    log:
        logs("validation", "export.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/validation.yaml"
    shell:
        "python -u workflow_scripts/validation_export.py --human-items {input.human_items:q}"
        " --params {params.human:q} --dimensions {params.dimensions} --seed {params.seed}"
        " --tasks {output.tasks:q} --config {output.config:q} --csv {output.csv:q}"
        " --guide {output.guide:q} --assignment {output.assignment:q} > {log:q} 2>&1"


rule validation_human:
    """Human labels: import the filled exports (or simulate annotators, then import),
    adjudicate disagreements, agreement between the primary annotators."""
    input:
        human_items=rules.validation_items.output.human_items,
        assignment=rules.validation_export.output.assignment,
        judgements=rules.validation_judge.output.judgements,
        files=VALIDATION["human"]["files"] if VALIDATION["human"]["source"] == "files" else [],
    output:
        simulated=results("validation", "human", "simulated_annotations.csv"),
        annotations=results("validation", "human", "annotations.csv"),
        labels=results("validation", "human", "labels.csv"),
        adjudication=results("validation", "human", "adjudication.csv"),
        agreement=results("validation", "human", "agreement.csv"),
        report=results("validation", "human", "human.report.json"),
    params:
        validation=params_json("validation", keys=("human", "agreement")),
        dimensions=" ".join(VALIDATION_DIMENSIONS),
        seed=config["seed"],
    benchmark:
        bench("validation", "validation_human")
    log:
        logs("validation", "human.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/validation.yaml"
    shell:
        "python -u workflow_scripts/validation_human.py --human-items {input.human_items:q}"
        " --assignment {input.assignment:q} --judgements {input.judgements:q}"
        " --params {params.validation:q} --dimensions {params.dimensions} --seed {params.seed}"
        " --simulated {output.simulated:q} --annotations {output.annotations:q}"
        " --labels {output.labels:q} --adjudication {output.adjudication:q}"
        " --agreement {output.agreement:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule validation_tables:
    """LLM vs human (six measures) and agreement (four dimensions), the paper's values beside
    ours; the rating-distribution figure."""
    input:
        key=rules.validation_items.output.key,
        judgements=rules.validation_judge.output.judgements,
        judge_report=rules.validation_judge.output.report,
        labels=rules.validation_human.output.labels,
        agreement=rules.validation_human.output.agreement,
        human_report=rules.validation_human.output.report,
        paper_results="config/paper_results/pqb.yaml",
    output:
        ratings_csv=shown(
            results("validation", "ratings.csv"), "validation_ratings", "PQB", "Tables"
        ),
        agreement_csv=shown(
            results("validation", "agreement.csv"), "validation_agreement", "PQB", "Tables"
        ),
        ratings_tex=generated("validation_ratings.tex"),
        agreement_tex=generated("validation_agreement.tex"),
        figure=shown(
            generated("validation_distributions.pdf"), "validation_figure", "PQB", "Figures"
        ),
    params:
        validation=params_json("validation", keys=("agreement",)),
        seed=config["seed"],
        label=config["label"],
        synthetic=SYNTHETIC,
    benchmark:
        bench("validation", "validation_tables")
    log:
        logs("validation", "tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/validation.yaml"
    shell:
        "python -u workflow_scripts/validation_tables.py --key {input.key:q}"
        " --judgements {input.judgements:q} --judge-report {input.judge_report:q}"
        " --labels {input.labels:q} --agreement {input.agreement:q}"
        " --human-report {input.human_report:q} --paper-results {input.paper_results:q}"
        " --params {params.validation:q} --seed {params.seed} --label {params.label:q}"
        " --synthetic {params.synthetic} --ratings-csv {output.ratings_csv:q}"
        " --agreement-csv {output.agreement_csv:q} --ratings-tex {output.ratings_tex:q}"
        " --agreement-tex {output.agreement_tex:q} --figure {output.figure:q} > {log:q} 2>&1"


if VALIDATION["enabled"]:
    FINAL_TARGETS.extend(rules.validation_tables.output)
    FINAL_TARGETS.extend(rules.validation_export.output)
