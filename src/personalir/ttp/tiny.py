"""Tiny randomly initialised causal LMs with a locally built tokenizer (tests, benchmarks).

The paper-scale path (Qwen2 architecture, LoRA, special tokens, ``<emb>`` pooling, InfoNCE)
cannot load Qwen2.5-3B here; :func:`build_tiny_causal_lm` saves a model of the same
architecture with a few thousand parameters, and a byte-level tokenizer (every byte one
token, no merges) with a ChatML template, into a folder that every loader of this package
accepts as a model name.
"""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHATML
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
