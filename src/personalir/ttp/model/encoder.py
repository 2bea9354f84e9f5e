"""The TTP encoder: pooling at ``<embed>``, generation, and shared-prefix batching.

(The backbone it runs on is prepared by :mod:`personalir.ttp.model.backbone`.)

:class:`TTPEncoder` computes embeddings: the last layer's hidden state at the last ``<embed>``
of each sequence, L2-normalised. Sequences are left-padded with explicit position ids, so a
row's positions do not depend on its padding.

Shared prefixes: every query prompt of a batch starts with the same chat-template header,
system message and instruction (about 45 of 100 tokens on the sample). :meth:`TTPEncoder.hidden`
computes that common prefix once (batch 1), repeats its key/value cache over the batch and
runs only the rows' remaining tokens on top of it (``[prefix][padding][row]``, padding masked,
positions continuing the prefix's). Each row sees exactly the keys, values and positions it
would see alone, so the hidden states equal the unshared computation up to float rounding
(tested); in training, the prefix's LoRA dropout mask is then shared by the batch's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.ttp.model.prompts import (
    THINK_CLOSE,
    THINK_OPEN,
    embedding_token,
    target_text,
)


def shared_prefix_length(seqs: Sequence[Sequence[int]], keep: Sequence[int] | None = None) -> int:
    """Length of the longest common prefix of ``seqs`` that leaves row ``i`` at least
    ``keep[i]`` (default 1) tokens of its own."""
    if not seqs:
        return 0
    limit = min(len(x) - (keep[i] if keep is not None else 1) for i, x in enumerate(seqs))
    first, n = seqs[0], 0
    while n < limit and all(x[n] == first[n] for x in seqs[1:]):
        n += 1
    return max(0, n)


class TTPEncoder:
    """Embeddings and rewrites from a (LoRA-adapted) TTP model; see the module docstring.

    ``min_shared_prefix``: a batch whose rows share at least this many leading tokens computes
    them once (see the module docstring); 0 turns prefix sharing off."""

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_query_tokens: int = 512,
        max_item_tokens: int = 64,
        batch_size: int = 16,
        min_shared_prefix: int = 8,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.emb_id = tokenizer.convert_tokens_to_ids(embedding_token())
        if self.emb_id is None or self.emb_id == tokenizer.unk_token_id:
            raise ValueError(f"the tokenizer has no {embedding_token()} token (not a TTP backbone)")
        self.think_ids = tokenizer.convert_tokens_to_ids([THINK_OPEN, THINK_CLOSE])
        self.max_query_tokens = max_query_tokens
        self.max_item_tokens = max_item_tokens
        self.batch_size = batch_size
        self.min_shared_prefix = min_shared_prefix

    # -- plumbing --------------------------------------------------------------------------
    @property
    def causal_lm(self):
        get_base = getattr(self.model, "get_base_model", None)
        return get_base() if get_base else self.model

    @property
    def decoder(self):
        lm = self.causal_lm
        return getattr(lm, lm.base_model_prefix)

    @property
    def lm_head(self):
        return self.causal_lm.get_output_embeddings()

    @property
    def device(self):
        """The model's device: every tensor the encoder feeds it is created there."""
        return next(self.model.parameters()).device

    # -- token ids -------------------------------------------------------------------------
    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def query_ids(self, prompt: str, target: str) -> tuple[list[int], int]:
        """Prompt + target ids (tokenised apart, as in training) and the target length.

        A prompt longer than ``max_query_tokens`` minus the target loses tokens from its
        start, never its end (where the query and the generation prompt are)."""
        target_ids = self._ids(target)
        room = max(1, self.max_query_tokens - len(target_ids))
        return self._ids(prompt)[-room:] + target_ids, len(target_ids)

    def prompt_ids(self, prompt: str) -> list[int]:
        """Prompt ids for generation, ending with ``<think>``: the opening of the target is
        fixed (as in training), the model writes the rewrite and closes it."""
        return self._ids(prompt)[-(self.max_query_tokens - 1) :] + [self.think_ids[0]]

    def item_ids(self, item_text: str) -> list[int]:
        """Item text cut to ``max_item_tokens - 1`` tokens, then ``<embed>``."""
        return self._ids(item_text)[: self.max_item_tokens - 1] + [self.emb_id]

    def pad_left(self, seqs: Sequence[Sequence[int]]):
        """(input ids, attention mask) of left-padded rows on the model's device (built on
        the CPU, moved once)."""
        import torch

        width = max(len(x) for x in seqs)
        cpu = torch.device("cpu")
        input_ids = torch.full(
            (len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long, device=cpu
        )
        mask = torch.zeros((len(seqs), width), dtype=torch.long, device=cpu)
        for i, x in enumerate(seqs):
            input_ids[i, width - len(x) :] = torch.tensor(list(x), dtype=torch.long, device=cpu)
            mask[i, width - len(x) :] = 1
        device = self.device
        return input_ids.to(device), mask.to(device)

    def split_prefix(
        self, seqs: Sequence[Sequence[int]], keep: Sequence[int] | None = None
    ) -> tuple[list[int], list[list[int]]]:
        """(shared prefix, rows without it); the prefix is empty when shorter than
        ``min_shared_prefix`` or the batch has one row."""
        n = shared_prefix_length(seqs, keep) if len(seqs) > 1 and self.min_shared_prefix else 0
        if n < max(1, self.min_shared_prefix):
            n = 0
        return list(seqs[0][:n]) if n else [], [list(x[n:]) for x in seqs]

    def prefix_cache(self, module, prefix_ids, batch: int, **kw):
        """Run ``prefix_ids`` (1 x P) through ``module`` once; its cache repeated ``batch``
        times, and the module's output."""
        import torch

        out = module(
            input_ids=prefix_ids,
            attention_mask=torch.ones_like(prefix_ids),
            position_ids=torch.arange(prefix_ids.shape[1], device=prefix_ids.device)[None],
            use_cache=True,
            **kw,
        )
        cache = out.past_key_values
        cache.batch_repeat_interleave(batch)
        return cache, out

    def suffix_inputs(self, prefix_len: int, attention_mask):
        """Full attention mask and position ids of left-padded rows after a shared prefix."""
        import torch

        position_ids = prefix_len + (attention_mask.cumsum(-1) - 1).clamp(min=0)
        ones = attention_mask.new_ones((attention_mask.shape[0], prefix_len))  # same device
        full = torch.cat([ones, attention_mask], dim=1)
        return full, position_ids

    def hidden(self, input_ids, attention_mask, prefix_ids=None):
        """Last-layer hidden states of the (left-padded) rows; with ``prefix_ids`` (1 x P), the
        rows continue that shared prefix, computed once (only the rows' states returned)."""
        if prefix_ids is not None and prefix_ids.shape[-1] > 0:
            cache, _ = self.prefix_cache(self.decoder, prefix_ids, input_ids.shape[0])
            full, position_ids = self.suffix_inputs(prefix_ids.shape[-1], attention_mask)
            out = self.decoder(
                input_ids=input_ids,
                attention_mask=full,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
            )
            return out.last_hidden_state
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        out = self.decoder(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=False,
        )
        return out.last_hidden_state

    def batch_tensors(self, seqs: Sequence[Sequence[int]], keep: Sequence[int] | None = None):
        """(input ids, attention mask, prefix ids or None) of rows with a shared prefix split
        off (see :meth:`split_prefix`)."""
        import torch

        prefix, rest = self.split_prefix(seqs, keep)
        ids, mask = self.pad_left(rest)
        pre = torch.tensor([prefix], dtype=torch.long, device=ids.device) if prefix else None
        return ids, mask, pre

    def emb_positions(self, input_ids):
        import torch

        is_emb = input_ids == self.emb_id
        if not bool(is_emb.any(dim=1).all()):
            raise ValueError("every sequence must contain <embed>")
        width = input_ids.shape[1]
        last = width - 1 - torch.argmax(is_emb.flip(1).to(torch.int8), dim=1)
        return last

    def pool(self, hidden, input_ids):
        import torch

        pos = self.emb_positions(input_ids)
        vec = hidden[torch.arange(hidden.shape[0], device=hidden.device), pos]
        return torch.nn.functional.normalize(vec.float(), dim=-1)

    # -- inference -------------------------------------------------------------------------
    def encode_ids(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        import torch

        out = []
        self.model.eval()
        with torch.no_grad():
            for start in range(0, len(seqs), self.batch_size):
                ids, mask, prefix = self.batch_tensors(seqs[start : start + self.batch_size])
                out.append(self.pool(self.hidden(ids, mask, prefix), ids).cpu().numpy())
        dim = int(self.causal_lm.config.hidden_size)
        return np.concatenate(out) if out else np.zeros((0, dim), np.float32)

    def encode_items(self, item_texts: Sequence[str]) -> np.ndarray:
        return self.encode_ids([self.item_ids(t) for t in item_texts])

    def encode_queries(self, prompts: Sequence[str], rewrites: Sequence[str]) -> np.ndarray:

        return self.encode_ids(
            [self.query_ids(p, target_text(r))[0] for p, r in zip(prompts, rewrites, strict=True)]
        )

    def generate_and_embed(
        self, prompts: Sequence[str], max_new_tokens: int
    ) -> tuple[list[str], np.ndarray, list[bool]]:
        """Greedy ``<think>rewrite</think><embed>`` per prompt and the embedding at its ``<embed>``.

        One pass with the KV cache: the hidden state of ``<embed>`` is taken when ``<embed>`` is
        fed back, so no second encoding of the sequence is needed. Decoding follows the
        target's grammar (:meth:`grammar_next`): the rewrite is not empty and holds no
        ``<embed>``, and ``</think>`` is followed by ``<embed>``. A row that has not closed
        ``</think>`` after ``max_new_tokens`` gets ``</think><embed>`` appended (counted as not
        well formed). Returns (generated texts, embeddings, well-formed flags)."""
        import torch

        lm = self.causal_lm
        close_id = self.think_ids[1]
        texts, embs, flags = [], [], []
        self.last_generated_ids: list[list[int]] = []  # after <think>, for inspection
        self.model.eval()
        with torch.no_grad():
            for start in range(0, len(prompts), self.batch_size):
                ids, mask, prefix = self.batch_tensors(
                    [self.prompt_ids(p) for p in prompts[start : start + self.batch_size]]
                )
                n = ids.shape[0]
                cache = None
                if prefix is not None:
                    cache, _ = self.prefix_cache(self.model, prefix, n, logits_to_keep=1)
                    mask, pos = self.suffix_inputs(prefix.shape[1], mask)
                else:
                    pos = (mask.cumsum(-1) - 1).clamp(min=0)
                out = self.model(
                    input_ids=ids,
                    attention_mask=mask,
                    position_ids=pos,
                    past_key_values=cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
                past, last_pos = out.past_key_values, pos[:, -1]
                generated = [[] for _ in range(n)]
                nxt = self.grammar_next(out.logits[:, -1], generated)
                vecs = torch.zeros(n, lm.config.hidden_size, device=ids.device)
                done = [False] * n
                forced = [[] for _ in range(n)]
                well = [True] * n
                for step in range(max_new_tokens + 2):
                    for r in range(n):
                        if done[r]:
                            nxt[r] = self.tokenizer.pad_token_id
                        elif forced[r]:
                            nxt[r] = forced[r].pop(0)
                        elif step >= max_new_tokens and int(nxt[r]) not in (
                            self.emb_id,
                            close_id,
                        ):
                            well[r] = False
                            seq = [close_id, self.emb_id]
                            if close_id in generated[r]:
                                seq = [self.emb_id]
                            nxt[r] = seq[0]
                            forced[r] = seq[1:]
                        if not done[r]:
                            generated[r].append(int(nxt[r]))
                    live = mask.new_tensor([0 if d else 1 for d in done])  # mask's device
                    mask = torch.cat([mask, live[:, None]], dim=1)
                    last_pos = last_pos + live
                    out = self.model(
                        input_ids=nxt[:, None],
                        attention_mask=mask,
                        position_ids=last_pos[:, None],
                        past_key_values=past,
                        use_cache=True,
                        logits_to_keep=1,
                        output_hidden_states=True,
                    )
                    past = out.past_key_values
                    hidden = out.hidden_states[-1][:, -1]
                    for r in range(n):
                        if not done[r] and generated[r][-1] == self.emb_id:
                            vecs[r] = hidden[r]
                            done[r] = True
                    if all(done):
                        break
                    nxt = self.grammar_next(out.logits[:, -1], generated)
                embs.append(torch.nn.functional.normalize(vecs.float(), dim=-1).cpu().numpy())
                self.last_generated_ids += generated
                texts += [
                    THINK_OPEN + self.tokenizer.decode(g, skip_special_tokens=False)
                    for g in generated
                ]
                flags += [w and close_id in g for w, g in zip(well, generated, strict=True)]
        dim = int(lm.config.hidden_size)
        return texts, (np.concatenate(embs) if embs else np.zeros((0, dim), np.float32)), flags

    def grammar_next(self, logits, generated: Sequence[Sequence[int]]):
        """Greedy next tokens under the target grammar ``<think>rewrite</think><embed>`` (the
        prompt already ends with ``<think>``): inside the rewrite, ``<think>`` and ``<embed>`` are
        not allowed and ``</think>`` not as the first token (training rewrites are never
        empty; a neutral one repeats the query); after ``</think>`` only ``<embed>``."""
        import torch

        open_id, close_id = self.think_ids
        logits = logits.clone()
        for r, g in enumerate(generated):
            if close_id in g:
                logits[r] = float("-inf")
                logits[r, self.emb_id] = 0.0
            else:
                logits[r, [open_id, self.emb_id]] = float("-inf")
                if not g:
                    logits[r, close_id] = float("-inf")
        return torch.argmax(logits, dim=-1)

    def generate(self, prompts: Sequence[str], max_new_tokens: int) -> list[str]:
        """Greedy continuations of query prompts, up to and including ``<embed>``."""
        import torch

        texts = []
        self.model.eval()
        with torch.no_grad():
            for start in range(0, len(prompts), self.batch_size):
                ids, mask = self.pad_left(
                    [self.prompt_ids(p) for p in prompts[start : start + self.batch_size]]
                )
                gen = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    eos_token_id=self.emb_id,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
                texts += [
                    THINK_OPEN + t
                    for t in self.tokenizer.batch_decode(
                        gen[:, ids.shape[1] :], skip_special_tokens=False
                    )
                ]
        pad = self.tokenizer.pad_token
        return [t.replace(pad, "").strip() if pad else t.strip() for t in texts]
