# TTP stage: search log (written by the data stage's `sample_world` rule) -> examples with
# selected histories -> teacher targets -> SFT of the TTP model; dense baselines' fine-tuning;
# Decoupled-Stage's rewriter and its rewrites; GRPO per RL variant; one run per (example set,
# method); evaluation with bootstrap CIs; Tables 3-8, Figures 3-8 and the paper's claims. SFT,
# the rewriter and the generating jobs (TTP, HyDE, rewrites) take the workflow's `threads`
# (they scale on two cores); the other jobs take one core each and fill the gaps of the other
# stages' jobs. This file holds the names the TTP rule modules share; the rules are in the
# files it includes, in the order of the data flow.

from personalir.workflow import ttp as ttp_wf
from personalir.workflow import ttp_pqb as ttp_pqb_wf
from personalir.workflow import ttp_public as ttp_public_wf

TTP = config["ttp"]
TTP_SETS = ttp_wf.example_sets(config)
TTP_METHODS = TTP["methods"]
TTP_RL_VARIANTS = ttp_wf.rl_variants(config)
TTP_RELEVANCE_METHODS = ttp_wf.relevance_methods(config)
TTP_HISTORY_VALUES = ttp_wf.history_values(config)
TTP_PUBLIC = ttp_public_wf.public_sets(config)
TTP_PQB_SETS = ttp_pqb_wf.pqb_sets(config)


wildcard_constraints:
    ttp_set="|".join([*TTP_SETS, *TTP_PUBLIC, *TTP_PQB_SETS]),
    public="|".join(TTP_PUBLIC) or "(?!)",
    method="|".join(TTP_METHODS),
    variant="|".join(ttp_wf.DENSE_VARIANTS),
    rl_variant="|".join(TTP_RL_VARIANTS) or "(?!)",
    student_variant="|".join(ttp_wf.student_variants(config)) or "(?!)",
    hist_n="|".join(map(str, TTP_HISTORY_VALUES)) or "(?!)",
    fusion="|".join(ttp_wf.FUSION_KINDS),


include: "ttp_inputs.smk"
include: "ttp_train.smk"
include: "ttp_history.smk"
include: "ttp_runs.smk"
include: "ttp_paper.smk"
include: "ttp_figures.smk"


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
    FINAL_TARGETS.extend(
        [
            results("ttp", "table3.csv"),
            generated("ttp_table3.tex"),
            results("ttp", "figure3_cases.csv"),
            results("ttp", "figure3.csv"),
            generated("ttp_figure3.pdf"),
            generated("ttp_table4_figure.pdf"),
        ]
    )
