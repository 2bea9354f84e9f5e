# Errors stage: correct user sentences -> ERRANT edits -> per-user error profiles; the
# error-sampling evaluation, its tables and the mechanism figure. The persistent GEC cache
# lives in results/errors/cache/ (outside the DAG, like a conda env: reruns reuse it, deleting it only costs time).

ERRORS = config["errors"]
ERRORS_GEC = ERRORS["gec"]

# Inputs that depend on the config, as lambdas (no functions in rule modules).
GECTOR_VERB_DICT = (
    [ERRORS_GEC["gector"]["verb_dict"]]
    if "gector" in ERRORS_GEC["backends"] and ERRORS_GEC["gector"]["verb_dict"]
    else []
)
TITLES_AS_TEXTS = ERRORS["sampling_eval"]["text_source"] == "product_titles"

rule errors_correct:
    """Correct every user sentence with the configured GEC backend chain (cached)."""
    input:
        sentences=results("data", "{domain}", "user_sentences.parquet"),
        verb_dict=GECTOR_VERB_DICT,
    output:
        corrections=results("errors", "{domain}", "corrections.parquet"),
        report=results("errors", "{domain}", "corrections.report.json"),
    params:
        gec=lambda w: params_json("errors", "gec"),
        cache=results("errors", "cache"),
    benchmark:
        bench("errors", "errors_correct", "domain")
    log:
        logs("errors", "correct_{domain}.log"),
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=1 if "gector" in ERRORS_GEC["backends"] else 0,
    threads: config["threads"]
    conda:
        workflow_support.conda_env(config, "errors")
    shell:
        "python -u workflow_scripts/errors_correct.py --sentences {input.sentences:q}"
        " --params {params.gec:q} --threads {threads} --cache-dir {params.cache:q}"
        " --corrections {output.corrections:q} --report {output.report:q} > {log:q} 2>&1"

rule errors_edits:
    """ERRANT edits of (sentence, correction) pairs, typed by mechanism, with syntactic context."""
    input:
        corrections=results("errors", "{domain}", "corrections.parquet"),
    output:
        edits=results("errors", "{domain}", "edits.parquet"),
        words=results("errors", "{domain}", "words.parquet"),
        report=results("errors", "{domain}", "edits.report.json"),
    params:
        edits=lambda w: params_json("errors", "edits"),
        bootstrap=params_json("errors", "statistics", "bootstrap"),
        seed=config["seed"],
    benchmark:
        bench("errors", "errors_edits", "domain")
    log:
        logs("errors", "edits_{domain}.log"),
    resources:
        mem_mb=3000,
        runtime=60,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/errors_edits.py --corrections {input.corrections:q}"
        " --params {params.edits:q} --edits {output.edits:q} --words {output.words:q}"
        " --report {output.report:q} --bootstrap {params.bootstrap:q} --seed {params.seed}"
        " > {log:q} 2>&1"

rule errors_profiles:
    """Per-user mechanism/context/rate profiles with smoothing, shrinkage and explicit fallback."""
    input:
        edits=results("errors", "{domain}", "edits.parquet"),
        words=results("errors", "{domain}", "words.parquet"),
        corrections=results("errors", "{domain}", "corrections.parquet"),
    output:
        profiles=results("errors", "{domain}", "profiles.json"),
        summary=results("errors", "{domain}", "profiles.csv"),
    params:
        profiles=lambda w: params_json("errors", "profiles"),
    benchmark:
        bench("errors", "errors_profiles", "domain")
    log:
        logs("errors", "profiles_{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=20,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/errors_profiles.py --edits {input.edits:q} --words {input.words:q}"
        " --corrections {input.corrections:q} --params {params.profiles:q}"
        " --profiles {output.profiles:q} --summary {output.summary:q} > {log:q} 2>&1"

rule errors_sampling_eval:
    """Five samplers' error queries attributed to users by profile likelihood (Top-1, MRR)."""
    input:
        edits=results("errors", "{domain}", "edits.parquet"),
        words=results("errors", "{domain}", "words.parquet"),
        corrections=results("errors", "{domain}", "corrections.parquet"),
        products=lambda w: [results("data", w.domain, "products.parquet")] if TITLES_AS_TEXTS
        else [],
    output:
        csv=results("errors", "{domain}", "sampling_eval.csv"),
        json=results("errors", "{domain}", "sampling_eval.json"),
        users=results("errors", "{domain}", "sampling_users.csv"),
    params:
        # The intervals are the tables' business: changing them never re-runs the evaluation.
        errors=params_json(
            "errors",
            keys=("edits", "profiles", "injection", "sampling_eval"),
            omit=("sampling_eval.bootstrap",),
        ),
        seed=config["seed"],
        products=lambda w, input: ["--products", *input.products] if input.products else [],
    benchmark:
        bench("errors", "errors_sampling_eval", "domain")
    log:
        logs("errors", "sampling_eval_{domain}.log"),
    resources:
        mem_mb=2000,
        runtime=30,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/errors_sampling.py --edits {input.edits:q} --words {input.words:q}"
        " --corrections {input.corrections:q} {params.products:q} --params {params.errors:q}"
        " --seed {params.seed} --domain {wildcards.domain} --csv {output.csv:q}"
        " --json {output.json:q} --users {output.users:q} > {log:q} 2>&1"

rule errors_tables:
    """Error-sampling table (per domain and averaged) and correction statistics, CSV + LaTeX."""
    input:
        sampling_csv=expand(results("errors", "{domain}", "sampling_eval.csv"), domain=DOMAINS),
        sampling_json=expand(results("errors", "{domain}", "sampling_eval.json"), domain=DOMAINS),
        sampling_users=expand(results("errors", "{domain}", "sampling_users.csv"), domain=DOMAINS),
        edit_reports=expand(results("errors", "{domain}", "edits.report.json"), domain=DOMAINS),
        profiles=expand(results("errors", "{domain}", "profiles.json"), domain=DOMAINS),
    output:
        sampling_csv=results("errors", "sampling_eval.csv"),
        sampling_tex=generated("errors_sampling.tex"),
        stats_csv=results("errors", "error_statistics.csv"),
        stats_tex=generated("errors_statistics.tex"),
        mechanisms_tex=generated("errors_mechanism_mix.tex"),
    params:
        domains=" ".join(DOMAINS),
        backends=" ".join(ERRORS_GEC["backends"]),
        label=config["label"],
        bootstrap=params_json("errors", "sampling_eval", "bootstrap"),
        seed=config["seed"],
    benchmark:
        bench("errors", "errors_tables")
    log:
        logs("errors", "tables.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/errors_tables.py --domains {params.domains}"
        " --sampling-csv {input.sampling_csv:q} --sampling-json {input.sampling_json:q}"
        " --sampling-users {input.sampling_users:q} --bootstrap {params.bootstrap:q}"
        " --seed {params.seed}"
        " --edit-reports {input.edit_reports:q} --profiles {input.profiles:q}"
        " --backends {params.backends} --label {params.label:q}"
        " --sampling-out-csv {output.sampling_csv:q} --sampling-tex {output.sampling_tex:q}"
        " --stats-csv {output.stats_csv:q} --stats-tex {output.stats_tex:q}"
        " --mechanisms-tex {output.mechanisms_tex:q} > {log:q} 2>&1"

rule errors_figure:
    """Mechanism distributions of the users with most errors against their domain's."""
    input:
        profiles=expand(results("errors", "{domain}", "profiles.json"), domain=DOMAINS),
    output:
        figure=shown(
            generated("errors_mechanism_profiles.pdf"), "errors_profiles", "PQB", "Figures"
        ),
        data=results("errors", "mechanisms_figure.csv"),
    params:
        domains=" ".join(DOMAINS),
        n_users=ERRORS["figure"]["n_users"],
        label=config["label"],
    benchmark:
        bench("errors", "errors_figure")
    log:
        logs("errors", "figure.log"),
    resources:
        mem_mb=1000,
        runtime=10,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/errors_figure.py --domains {params.domains}"
        " --profiles {input.profiles:q} --n-users {params.n_users} --label {params.label:q}"
        " --figure {output.figure:q} --data {output.data:q} > {log:q} 2>&1"

ERRORS_OUTPUTS = [
    results("errors", "sampling_eval.csv"),
    results("errors", "error_statistics.csv"),
    results("errors", "mechanisms_figure.csv"),
    generated("errors_sampling.tex"),
    generated("errors_statistics.tex"),
    generated("errors_mechanism_mix.tex"),
    generated("errors_mechanism_profiles.pdf"),
]
FINAL_TARGETS.extend(ERRORS_OUTPUTS)
FINAL_TARGETS.extend(expand(results("errors", "{domain}", "profiles.csv"), domain=DOMAINS))
# Recovery of the planted habits is checked by tests/integration/test_errors_stage.py: the
# planted truth is for tests only, no rule reads it.
