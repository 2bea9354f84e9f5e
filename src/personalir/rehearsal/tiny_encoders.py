"""Tiny randomly initialised encoders of the architectures :mod:`.tiny_models` lacks: MPNet
(all-mpnet-base-v2), RoBERTa (GECToR's encoder) and an XLM-RoBERTa cross-encoder
(bge-reranker-v2-m3), each with a word-level tokenizer carrying the real model's special
tokens (:func:`~personalir.rehearsal.tiny_models.word_tokenizer`)."""

from __future__ import annotations

from pathlib import Path

from personalir.rehearsal.tiny_models import seed_torch, word_tokenizer

# <s> <pad> </s> <unk> <mask>: the RoBERTa family's special tokens, in their ids 0..4 (MPNet
# and XLM-RoBERTa alike).
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
ROBERTA_ROLES = dict(
    bos_token="<s>",  # nosec B106  # special tokens
    eos_token="</s>",
    cls_token="<s>",
    sep_token="</s>",
    pad_token="<pad>",
    unk_token="<unk>",
    mask_token="<mask>",
)
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def roberta_tokenizer(words: list[str]):
    """A word-level tokenizer with RoBERTa's specials and ``<s> A </s>`` framing."""
    return word_tokenizer(
        words, ROBERTA_SPECIALS, lowercase=True, template=("<s>", "</s>"), **ROBERTA_ROLES
    )


def save_mpnet_encoder(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """A plain MPNetModel folder (sentence-transformers adds mean pooling), like
    all-mpnet-base-v2."""
    from transformers import MPNetConfig, MPNetModel

    seed_torch(seed)
    path = Path(path)
    tok = roberta_tokenizer(words)
    config = MPNetConfig(vocab_size=len(tok), max_position_embeddings=514, pad_token_id=1, **SMALL)
    MPNetModel(config, add_pooling_layer=False).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_roberta_encoder(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """A plain RobertaModel folder, like roberta-large (GECToR's encoder)."""
    from transformers import RobertaConfig, RobertaModel

    seed_torch(seed)
    path = Path(path)
    tok = roberta_tokenizer(words)
    config = RobertaConfig(
        vocab_size=len(tok),
        max_position_embeddings=514,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **SMALL,
    )
    RobertaModel(config, add_pooling_layer=False).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_xlmr_cross_encoder(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """XLMRobertaForSequenceClassification with one logit, the bge-reranker-v2-m3 layout
    (FlagEmbedding's ``FlagReranker`` reads it)."""
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

    seed_torch(seed)
    path = Path(path)
    tok = roberta_tokenizer(words)
    config = XLMRobertaConfig(
        vocab_size=len(tok),
        max_position_embeddings=8194,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        num_labels=1,
        architectures=["XLMRobertaForSequenceClassification"],
        **SMALL,
    )
    XLMRobertaForSequenceClassification(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path
