"""Tiny randomly initialised models, in the paper-scale models' formats, for tests, benchmarks
and the dress rehearsal of the paper configuration (:mod:`personalir.rehearsal.standins`).

The paper's models (SPLADE cocondenser, GTE-base, BGE-M3, ColBERTv2, Qwen3-Reranker-8B,
Llama-3.1-8B-Instruct, Qwen2.5, GECToR) cannot be downloaded offline; these builders save a
few-hundred-kB model of the same architecture and file layout, with a locally built
tokenizer, so every paper-scale code path runs in tests and smoke checks. Their outputs are
meaningless; their shapes, files and special tokens are not.

Retrieval (word-level tokenizer built from a word list, see :func:`vocabulary`)
    :func:`save_splade`, :func:`save_bert_encoder`, :func:`save_stanford_colbert`,
    :func:`save_bge_m3`, :func:`save_causal_lm` (Qwen3 / Llama-3 chat rerankers).
Query generation
    :func:`build_tiny_qwen2`: a Qwen2 with a byte-level BPE tokenizer trained on given texts.
TTP backbone
    :func:`build_tiny_causal_lm`: a Qwen2 or Llama with a byte tokenizer (every byte one token).
GEC
    :func:`save_tiny_gector`: gector's GECToR on a 1-layer BERT that tags every word alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from personalir.queries import lm
from personalir.queries.seeds import load_seeds

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


def bert_tokenizer(words, extra: list[str] = ()):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *extra]
    return word_tokenizer(
        words,
        specials,
        lowercase=True,
        template=("[CLS]", "[SEP]"),
        pad_token="[PAD]",  # nosec B106  # a special token
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def bert_config(vocab_size: int, **kw):
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


def seed_torch(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def save_splade(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """BertForMaskedLM (the SPLADE architecture: MLM logits -> log1p(relu) max-pool)."""
    from transformers import BertForMaskedLM

    seed_torch(seed)
    path = Path(path)
    tok = bert_tokenizer(words)
    BertForMaskedLM(bert_config(len(tok))).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_bert_encoder(path: str | Path, words: list[str], seed: int = 0) -> Path:
    """A plain BertModel folder (sentence-transformers adds mean pooling), like GTE-base."""
    from transformers import BertModel

    seed_torch(seed)
    path = Path(path)
    tok = bert_tokenizer(words)
    BertModel(bert_config(len(tok))).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def save_stanford_colbert(path: str | Path, words: list[str], dim: int = 16, seed: int = 0) -> Path:
    """A Stanford ColBERT checkpoint (architectures HF_ColBERT, ``bert.*`` weights and a
    ``linear.weight`` projection in one safetensors file, ``artifact.metadata``), the layout of
    ``colbert-ir/colbertv2.0``."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertModel

    seed_torch(seed)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = bert_tokenizer(words, extra=["[unused0]", "[unused1]"])
    config = bert_config(len(tok), architectures=["HF_ColBERT"])
    bert = BertModel(config, add_pooling_layer=False)
    state = {f"bert.{k}": v.contiguous() for k, v in bert.state_dict().items()}
    state["linear.weight"] = torch.randn(dim, config.hidden_size) * 0.1
    save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(path)
    tok.save_pretrained(path)
    meta = {
        "query_token_id": "[unused0]",  # nosec B105  # a special token
        "doc_token_id": "[unused1]",  # nosec B105  # a special token
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

    seed_torch(seed)
    path = Path(path)
    tok = word_tokenizer(
        words,
        ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        lowercase=True,
        template=("<s>", "</s>"),
        bos_token="<s>",  # nosec B106  # a special token
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

    seed_torch(seed)
    path = Path(path)
    if arch == "qwen3":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
        template, roles = CHATML_TEMPLATE, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}  # nosec B105  # a special token
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
            {"eos_token": "<|eot_id|>", "bos_token": "<|begin_of_text|>"},  # nosec B105  # a special token
        )
    else:
        raise ValueError(f"arch {arch!r} not in ['qwen3', 'llama']")
    tok = word_tokenizer(words, [*specials, "<unk>"], lowercase=False, unk_token="<unk>", **roles)  # nosec B106  # a special token
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


def build_byte_tokenizer():
    """A byte-level tokenizer without merges (every byte one token), ChatML specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",  # nosec B106  # a special token
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def build_tiny_causal_lm(
    out_dir: str | Path,
    *,
    architecture: str = "qwen2",
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate_size: int = 64,
    tie_word_embeddings: bool = True,
    seed: int = 0,
) -> Path:
    """Save a random ``architecture`` (qwen2 or llama) causal LM + tokenizer to ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    tokenizer = build_byte_tokenizer()
    cls = {"qwen2": Qwen2Config, "llama": LlamaConfig}[architecture]
    config = cls(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=2048,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_tiny_qwen2(path, texts):
    """A byte-level BPE tokenizer trained on ``texts`` (ChatML specials) and a 2-layer Qwen2,
    saved to ``path`` in the hub layout the Qwen2.5 checkpoints use."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=800, min_frequency=1, special_tokens=specials)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",  # nosec B106  # a special token
    )
    fast.add_special_tokens({"additional_special_tokens": specials})
    fast.chat_template = CHATML_TEMPLATE
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(fast),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            tie_word_embeddings=True,
        )
    )
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


GECTOR_WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "$START",
    "this",
    "is",
    "a",
    "test",
    ".",
    "the",
    "guitar",
    "sounds",
    "good",
    "very",
    "do",
    "n't",
    "like",
    "it",
]


def save_tiny_gector(root: Path, tag: str) -> tuple[Path, Path]:
    """(checkpoint folder, verb dictionary) of a GECToR whose output layers are fixed so that
    every word gets ``tag`` and is judged incorrect: a 1-layer BERT with the
    :data:`GECTOR_WORDS` WordPiece vocabulary and a 5-label tag set, saved like a Hugging Face
    checkpoint (``root/gector``) with a two-line verb-form dictionary."""
    import gector
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(GECTOR_WORDS)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))  # nosec B106  # a special token
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",  # nosec B106  # a special token
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    base = root / "base"
    fast.save_pretrained(base)
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
        )
    ).save_pretrained(base)
    labels = ["<OOV>", "$KEEP", "$DELETE", "$TRANSFORM_CASE_CAPITAL", "$APPEND_very", "<PAD>"]
    label2id = {lab: i for i, lab in enumerate(labels)}
    cfg = gector.GECToRConfig(
        model_id=str(base),
        label2id=label2id,
        id2label={i: lab for lab, i in label2id.items()},
        has_add_pooling_layer=True,
    )
    model = gector.GECToR(cfg)
    with torch.no_grad():
        model.label_proj_layer.weight.zero_()
        model.label_proj_layer.bias.zero_()
        model.label_proj_layer.bias[label2id[tag]] = 6.0
        model.d_proj_layer.weight.zero_()
        model.d_proj_layer.bias.copy_(torch.tensor([0.0, 6.0]))  # every word "incorrect"
    out = root / "gector"
    model.save_pretrained(out)
    fast.save_pretrained(out)
    verb = root / "verb-form-vocab.txt"
    verb.write_text("sound_sounds:VB_VBZ\nsounds_sound:VBZ_VB\n")
    return out, verb


def build_seed_qwen2(path):
    """A tiny Qwen2 whose tokenizer is trained on the shipped seed queries and their attribute
    lines (what the query stage's prompts are made of)."""
    seeds = load_seeds()
    texts = [s["query"] for s in seeds] + [lm.SYSTEM_PROMPT, "Product system user assistant"]
    texts += [f"{k}: {v} {s['product_type']}" for s in seeds for k, v in s["attributes"]]
    return build_tiny_qwen2(path, texts)
