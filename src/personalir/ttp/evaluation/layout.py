"""The rows of the TTP paper's ablation tables (6 and 7) and Figure 5: our method names, the
paper's row keys (``config/paper_results/ttp.yaml``) and the row labels."""

from __future__ import annotations

SETS = ("General", "Broad", "LongTail")
COLUMNS = (*SETS, "Avg")
MEASURE = "Recall@20"

# Our method name -> the paper's row key, in the paper's row order.
TABLE6 = {
    "llm_embedding": "qwen_embedding",
    "dense": "qwen_embedding",  # the stand-in when llm_embedding is not evaluated
    "decoupled": "decoupled",
    "ttp": "ttp_sft",
    "ttp_no_intent_q": "ttp_sft_no_intent_q",
    "ttp_rl_no_intent_q": "ttp_sft_rl_no_intent_q",
    "ttp_rl_no_dynamic_selection": "ttp_sft_rl_no_dynamic_selection",
    "ttp_rl": "ttp_sft_rl",
}
TABLE7 = {
    "ttp": "ttp_sft",
    "ttp_rl_no_dynamic_selection": "rl_no_dynamic_selection",
    "ttp_rl_unfrozen_reward": "rl_unfrozen_reward_model",
    "ttp_rl_no_positive_gain": "rl_no_positive_gain",
    "ttp_rl_no_margin_gain": "rl_no_margin_gain",
    "ttp_rl": "ttp_sft_rl",
}
FIGURE5 = {
    "ttp_no_intent_q": "ttp_sft_no_intent_q",
    "ttp": "ttp_sft",
    "ttp_rl_no_intent_q": "ttp_sft_rl_no_intent_q",
    "ttp_rl": "ttp_sft_rl",
}
TABLES = {"table6": TABLE6, "table7": TABLE7}
# The methods that can take the paper's Qwen-Embedding row, the first present one does.
QWEN_EMBEDDING_STAND_INS = ("llm_embedding", "dense")
LABELS = {
    "llm_embedding": "LLM embedding (no generation)",
    "dense": "Query-only dense (stand-in for Qwen-Embedding)",
    "decoupled": "Decoupled-Stage",
    "ttp": "TTP (SFT)",
    "ttp_no_intent_q": "TTP (SFT) w/o Intent-Q",
    "ttp_rl": "TTP (SFT+RL)",
    "ttp_rl_no_intent_q": "TTP (SFT+RL) w/o Intent-Q",
    "ttp_rl_no_dynamic_selection": "RL w/o dynamic selection",
    "ttp_rl_unfrozen_reward": "RL, unfrozen reward model",
    "ttp_rl_no_positive_gain": "RL w/o positive gain (alpha = 0)",
    "ttp_rl_no_margin_gain": "RL w/o margin gain (beta = 0)",
}


def qwen_embedding_stand_in(present) -> str:
    """The method taking the paper's Qwen-Embedding row: ``llm_embedding`` when evaluated,
    else the query-only ``dense`` baseline."""
    return next((m for m in QWEN_EMBEDDING_STAND_INS if m in present), "dense")
