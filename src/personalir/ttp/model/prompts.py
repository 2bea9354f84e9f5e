"""The one place TTP prompts are built: SFT, evaluation and (part 2) RL all call these.

The reference code built prompts separately for SFT and RL, and they drifted apart; here a
query prompt, a target and a passage are each made by exactly one function.

Query side (chat template, generation prompt appended)::

    <user> {INSTRUCTION} User History Sequence: [1] {item} [2] {item} ... User Query: {query}
    <assistant> <think>{rewrite}</think><embed>

Passage side (no chat template): ``{item text}<embed>``. The embedding of either side is the
last layer's hidden state at the last ``<embed>``.

The embedding token is ``<embed>`` as in the paper unless ``ttp.backbone.embedding_token``
names another (the reference code's checkpoints use ``<emb>``). The prepared backbone
records it (its special tokens, in order), and loading a backbone makes it this process's
embedding token (:func:`use_embedding_token`); every prompt, target, parse and reward reads
it through :func:`embedding_token`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
DEFAULT_EMBEDDING_TOKEN = "<embed>"  # nosec B105  # a vocabulary token, not a secret
_EMBEDDING_TOKEN = [DEFAULT_EMBEDDING_TOKEN]
_TOKEN_RE = re.compile(r"<[A-Za-z0-9_|-]+>")


def use_embedding_token(name: str) -> None:
    """Make ``name`` the embedding token of this process (the backbone's)."""
    if not isinstance(name, str) or not _TOKEN_RE.fullmatch(name):
        raise ValueError(f"embedding token {name!r} must look like <name> (letters, digits, _|-)")
    if name in (THINK_OPEN, THINK_CLOSE):
        raise ValueError(f"embedding token {name!r} must differ from {THINK_OPEN}, {THINK_CLOSE}")
    _EMBEDDING_TOKEN[0] = name


def embedding_token() -> str:
    return _EMBEDDING_TOKEN[0]


def special_tokens() -> tuple[str, str, str]:
    """The three tokens the backbone adds, in the order it adds them."""
    return (THINK_OPEN, THINK_CLOSE, embedding_token())


INSTRUCTION = (
    "Given the user's purchase history and query, think about what the user wants, rewrite "
    "the query, then embed it."
)


def truncate_to_tokens(tokenizer, text: str, max_tokens: int | None) -> str:
    """``text`` cut to at most ``max_tokens`` tokens (decoded back to text)."""
    if not max_tokens:
        return text
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) <= max_tokens:
        return text
    return tokenizer.decode(ids[:max_tokens], skip_special_tokens=False).strip()


def query_user_content(history_texts: Sequence[str], query: str) -> str:
    items = " ".join(f"[{i}] {t}" for i, t in enumerate(history_texts, 1)) or "(none)"
    return f"{INSTRUCTION} User History Sequence: {items} User Query: {query}"


def query_prompt(
    tokenizer, history_texts: Sequence[str], query: str, system_prompt: str | None = None
) -> str:
    """The query-side prompt text, ending where the model starts to write ``<think>``."""
    messages = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": query_user_content(history_texts, query)})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def target_text(rewrite: str) -> str:
    return f"{THINK_OPEN}{rewrite}{THINK_CLOSE}{embedding_token()}"


def passage_text(item_text: str) -> str:
    return f"{item_text}{embedding_token()}"


def parse_generated(text: str) -> tuple[str, bool]:
    """(rewrite, well_formed) from generated text that should read ``<think>..</think><embed>``."""
    body = text
    if THINK_OPEN in body:
        body = body.split(THINK_OPEN, 1)[1]
    well_formed = text.lstrip().startswith(THINK_OPEN) and THINK_CLOSE in text
    rewrite = body.split(THINK_CLOSE, 1)[0].split(embedding_token(), 1)[0]
    return " ".join(rewrite.split()), well_formed
