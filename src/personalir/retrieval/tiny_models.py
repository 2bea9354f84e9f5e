"""Tiny randomly initialised checkpoints in the paper-scale models' formats.

The paper's models (SPLADE cocondenser, GTE-base, BGE-M3, ColBERTv2, Qwen3-Reranker-8B,
Llama-3.1-8B-Instruct) cannot be downloaded offline; these builders save a few-hundred-kB
model of the same architecture and file layout, with a word-level tokenizer built from a
word list, so every paper-scale code path runs in tests and smoke checks. Their rankings are
meaningless; their shapes, files and special tokens are not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

DIGITS = [str(d) for d in range(10)]
ANSWERS = ["yes", "no", "Yes", "No"]


def vocabulary(texts: Iterable[str], limit: int = 2000) -> list[str]:
    """Distinct lower-cased words of ``texts`` (first ``limit``), plus digits and answers."""
    seen: dict[str, None] = {}
    for text in texts:
        for w in re.findall(r"\w+|[^\w\s]", text.lower()):
            seen.setdefault(w, None)
            if len(seen) >= limit:
                break
    return list(dict.fromkeys([*DIGITS, *ANSWERS, *seen]))


def word_tokenizer(
    words: Iterable[str],
    specials: list[str],
    *,
    lowercase: bool,
    template: tuple[str, str] | None = None,
    **roles: str,
):
    """A fast word-level tokenizer: specials first (ids 0..), then ``words``."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for tok in [*specials, *words]:
        vocab.setdefault(tok, len(vocab))
    unk = roles.get("unk_token", specials[0])
    tok = Tokenizer(WordLevel(vocab=vocab, unk_token=unk))
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if template:
        first, last = template
        tok.post_processor = processors.TemplateProcessing(
            single=f"{first} $A {last}",
            pair=f"{first} $A {last} $B {last}",
            special_tokens=[(first, vocab[first]), (last, vocab[last])],
        )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **roles)
    fast.add_special_tokens({"additional_special_tokens": specials})
    return fast


def _bert_tokenizer(words, extra: list[str] = ()):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *extra]
    return word_tokenizer(
        words,
        specials,
        lowercase=True,
        template=("[CLS]", "[SEP]"),
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def _bert_config(vocab_size: int, **kw):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **kw,
    )


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def save_splade(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """BertForMaskedLM (the SPLADE architecture: MLM logits -> log1p(relu) max-pool)."""
    from transformers import BertForMaskedLM

    _seed(seed)
    path = Path(path)
    tok = _bert_tokenizer(words)
    BertForMaskedLM(_bert_config(len(tok))).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_bert_encoder(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """A plain BertModel folder (sentence-transformers adds mean pooling), like GTE-base."""
    from transformers import BertModel

    _seed(seed)
    path = Path(path)
    tok = _bert_tokenizer(words)
    BertModel(_bert_config(len(tok))).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_stanford_colbert(path: str | Path, words: list[str], dim: int = 16, seed: int = 0) -> Path:
    """A Stanford ColBERT checkpoint (architectures HF_ColBERT, ``bert.*`` weights and a
    ``linear.weight`` projection in one safetensors file, ``artifact.metadata``), the layout of
    ``colbert-ir/colbertv2.0``."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertModel

    _seed(seed)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = _bert_tokenizer(words, extra=["[unused0]", "[unused1]"])
    config = _bert_config(len(tok), architectures=["HF_ColBERT"])
    bert = BertModel(config, add_pooling_layer=False)
    state = {f"bert.{k}": v.contiguous() for k, v in bert.state_dict().items()}
    state["linear.weight"] = torch.randn(dim, config.hidden_size) * 0.1
    save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(path)
    tok.save_pretrained(path)
    meta = {
        "query_token_id": "[unused0]",
        "doc_token_id": "[unused1]",
        "query_maxlen": 16,
        "doc_maxlen": 64,
        "dim": dim,
        "mask_punctuation": True,
        "attend_to_mask_tokens": False,
        "similarity": "cosine",
    }
    (path / "artifact.metadata").write_text(json.dumps(meta, indent=2))
    return path


def save_bge_m3(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """XLM-RoBERTa encoder + ``colbert_linear.pt`` + ``sparse_linear.pt`` (BAAI/bge-m3 layout)."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    _seed(seed)
    path = Path(path)
    tok = word_tokenizer(
        words,
        ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        lowercase=True,
        template=("<s>", "</s>"),
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )
    config = XLMRobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=520,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(path)
    tok.save_pretrained(path)
    torch.save(torch.nn.Linear(32, 32).state_dict(), path / "colbert_linear.pt")
    torch.save(torch.nn.Linear(32, 1).state_dict(), path / "sparse_linear.pt")
    return path


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
    "<|end_header_id|>\n\n{{ message['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def save_causal_lm(path: str | Path, words: list[str], arch: str = "qwen3", seed: int = 0) -> Path:
    """A tiny Qwen3 (ChatML tokens, as Qwen3-Reranker) or Llama (Llama-3 chat tokens) LM."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

    _seed(seed)
    path = Path(path)
    if arch == "qwen3":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
        template, roles = CHATML_TEMPLATE, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    elif arch == "llama":
        specials = [
            "<|end_of_text|>",
            "<|begin_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
        ]
        template, roles = (
            LLAMA3_TEMPLATE,
            {"eos_token": "<|eot_id|>", "bos_token": "<|begin_of_text|>"},
        )
    else:
        raise ValueError(f"arch {arch!r} not in ['qwen3', 'llama']")
    tok = word_tokenizer(words, [*specials, "<unk>"], lowercase=False, unk_token="<unk>", **roles)
    tok.chat_template = template
    common = dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
    )
    if arch == "qwen3":
        model = Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
