# TTP on PQB (not in either paper): the personalised retrievers of `ttp.pqb.methods` rank a
# domain's products for PQB's query pairs, with the querying user's review history and
# without it; PQB's robustness metrics per method and the history effect (with - without).
# The runs are `ttp_run` jobs on two example sets per domain (PQB-<domain>[-nohistory]).
# Names come from rules/ttp.smk.

TTP_PQB_RUNS = ttp_pqb_wf.pqb_run_specs(config)


rule ttp_pqb_examples:
    """One TTP-on-PQB example set: the chosen pairs' queries with the user's review history
    (top-N by the relevance model), or with none, and the domain's items."""
    wildcard_constraints:
        ttp_set="|".join(TTP_PQB_SETS) or "(?!)",
    input:
        unpack(lambda w: ttp_pqb_wf.pqb_example_inputs(config, w.ttp_set)),
    output:
        examples=results("ttp", "{ttp_set}", "examples.jsonl"),
        corpus=results("ttp", "{ttp_set}", "items.parquet"),
        report=results("ttp", "{ttp_set}", "examples.report.json"),
    params:
        ttp=params_json("ttp", keys=("history", "items", "pqb", "device")),
        seed=config["seed"],
        train=lambda w, input: (
            ["--train-examples", dict(input)["train_examples"]]
            if "train_examples" in dict(input)
            else []
        ),
    benchmark:
        bench("ttp", "ttp_pqb_examples", "ttp_set")
    log:
        logs("ttp", "pqb_examples_{ttp_set}.log"),
    resources:
        mem_mb=3000,
        runtime=20,
        gpu=ttp_wf.ttp_gpu(config),
    threads: 1
    conda:
        workflow_support.conda_env(config, "ttp")
    shell:
        "python -u workflow_scripts/ttp_pqb_examples.py --set {wildcards.ttp_set}"
        " --benchmark {input.benchmark:q} --reviews {input.reviews:q} --products {input.products:q}"
        " --meta {input.meta:q} {params.train:q} --params {params.ttp:q} --seed {params.seed}"
        " --examples {output.examples:q} --items {output.corpus:q} --report {output.report:q}"
        " > {log:q} 2>&1"


if TTP_PQB_RUNS:

    rule ttp_pqb_evaluate:
        """PQB's metrics (bootstrap CIs over products) of every TTP-on-PQB run; the table and
        the history effects (paired differences, randomisation tests, held / not held)."""
        input:
            runs=[path for _, _, path in TTP_PQB_RUNS],
            examples=[
                results("ttp", s, "examples.jsonl") for s in TTP_PQB_SETS if "-nohistory" not in s
            ],
            reports=[results("ttp", s, "examples.report.json") for s in TTP_PQB_SETS],
        output:
            summary=results("ttp", "pqb", "summary.csv"),
            table=shown(results("ttp", "pqb", "table.csv"), "ttp_on_pqb", "TTP", "Tables"),
            effects=shown(
                results("ttp", "pqb", "history_effects.csv"),
                "ttp_on_pqb_effects",
                "TTP",
                "Tables",
            ),
            effects_md=results("ttp", "pqb", "history_effects.md"),
            facts=results("ttp", "pqb", "facts.json"),
        params:
            ttp=params_json("ttp", keys=("pqb", "depth", "evaluation")),
            metrics=params_json("retrieval", "metrics"),
            samples=config["retrieval"]["bootstrap"]["samples"],
            permutations=config["retrieval"]["significance"]["permutations"],
            methods=ttp_pqb_wf.pqb_methods(config),
            runs=[f"{s}:{m}:{p}" for s, m, p in TTP_PQB_RUNS],
            seed=config["seed"],
        benchmark:
            bench("ttp", "ttp_pqb_evaluate")
        log:
            logs("ttp", "pqb_evaluate.log"),
        resources:
            mem_mb=1000,
            runtime=10,
        threads: 1
        conda:
            "../envs/ttp.yaml"
        shell:
            "python -u workflow_scripts/ttp_pqb_evaluate.py --runs {params.runs:q}"
            " --examples {input.examples:q} --reports {input.reports:q} --methods {params.methods}"
            " --params {params.ttp:q} --metrics {params.metrics:q} --samples {params.samples}"
            " --permutations {params.permutations} --seed {params.seed}"
            " --summary {output.summary:q} --table {output.table:q} --effects {output.effects:q}"
            " --effects-md {output.effects_md:q} --facts {output.facts:q} > {log:q} 2>&1"

    rule ttp_pqb_tables:
        """The TTP-on-PQB table and the history effects in LaTeX (both PDFs' discussion)."""
        input:
            table=results("ttp", "pqb", "table.csv"),
            effects=results("ttp", "pqb", "history_effects.csv"),
            facts=results("ttp", "pqb", "facts.json"),
        output:
            table_tex=generated("ttp_on_pqb.tex"),
            effects_tex=generated("ttp_on_pqb_effects.tex"),
        params:
            label=config["label"],
            synthetic="--synthetic" if config["data"]["source"] == "sample" else "",
        benchmark:
            bench("ttp", "ttp_pqb_tables")
        log:
            logs("ttp", "pqb_tables.log"),
        resources:
            mem_mb=1000,
            runtime=10,
        threads: 1
        conda:
            "../envs/ttp.yaml"
        shell:
            "python -u workflow_scripts/ttp_pqb_tables.py --table {input.table:q}"
            " --effects {input.effects:q} --facts {input.facts:q} --label {params.label:q}"
            " {params.synthetic} --table-tex {output.table_tex:q}"
            " --effects-tex {output.effects_tex:q} > {log:q} 2>&1"

    FINAL_TARGETS.extend(
        [
            results("ttp", "pqb", "table.csv"),
            results("ttp", "pqb", "history_effects.md"),
        ]
    )

else:

    rule ttp_pqb_tables:
        """Where this configuration evaluates no TTP method on PQB, the documents' TTP-on-PQB
        tables say why."""
        output:
            table_tex=generated("ttp_on_pqb.tex"),
            effects_tex=generated("ttp_on_pqb_effects.tex"),
        params:
            reason=(
                "TTP is disabled (ttp.enabled is false)"
                if not TTP["enabled"]
                else "ttp.pqb.methods lists no method"
            ),
        benchmark:
            bench("ttp", "ttp_pqb_tables")
        log:
            logs("ttp", "pqb_tables.log"),
        resources:
            mem_mb=500,
            runtime=5,
        threads: 1
        conda:
            "../envs/ttp.yaml"
        shell:
            "python -u workflow_scripts/ttp_pqb_tables.py --absent {params.reason:q}"
            " --table-tex {output.table_tex:q} --effects-tex {output.effects_tex:q} > {log:q} 2>&1"
