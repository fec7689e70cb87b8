"""A pretrained encoder split in two at a layer: a frozen bottom shared by every branch of a reader, and a top
that each branch trains for itself.

``bottom(enc)`` runs the word-piece embeddings and the first ``at`` transformer layers; ``top(layers, states,
mask)`` runs a branch's copy of the remaining layers on those states. ``top(own, bottom(enc), mask)`` is the
encoder's ``last_hidden_state`` (tested against the Hugging Face model), so a reader trained on cached bottom
states (:mod:`medcite.train.reader_cache`) reads at inference exactly what it was trained on.

Two architectures are known: BERT-style encoders (the packaged MiniLM) and MPNet (all-mpnet-base-v2), whose
layers also take a relative position bias that the encoder computes once from the sequence.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeAlias

from ..errors import ConfigError

#: torch's tensors and modules, named for the reader of the code; torch stays out of mypy's graph (its stubs
#: cost minutes) and is imported lazily
Tensor: TypeAlias = Any
Module: TypeAlias = Any


def _module() -> Any:
    import torch

    return torch.nn.Module


KINDS = ("bert", "mpnet")


class SplitTrunk(_module()):  # type: ignore[misc]  # a torch Module, imported lazily
    """The frozen part of a base encoder: embeddings and layers ``[0, at)``; :meth:`top_copy` gives a branch its
    own trainable copy of layers ``[at, n)``."""

    def __init__(self, model: Module, at: int) -> None:
        super().__init__()
        kind = str(model.config.model_type)
        if kind not in KINDS:
            raise ConfigError(f"the reader knows BERT-style and MPNet encoders, not {kind!r}")
        n = int(model.config.num_hidden_layers)
        if not 0 <= at <= n:
            raise ConfigError(f"the reader's trained layers start at {at}, but the base has {n} layers")
        self.kind, self.at, self.layers = kind, at, n
        self.config = model.config
        self.embeddings = model.embeddings
        self.bottom = model.encoder.layer[:at]
        self._template = list(model.encoder.layer[at:])  # copied per branch, never run from here
        # MPNet's layers share a relative position bias that its encoder computes from the sequence length; the
        # bias table is frozen like the bottom, and computed by the encoder's own (unbound) function
        self.relative_attention_bias = model.encoder.relative_attention_bias if kind == "mpnet" else None
        self._position_bias = type(model.encoder).compute_position_bias if kind == "mpnet" else None
        self._bucket = type(model.encoder).relative_position_bucket if kind == "mpnet" else None
        for p in self.parameters():
            p.requires_grad_(False)
        #: bottom states kept per tokenised batch while the weights cannot change (set by training's validation,
        #: which reads the same batches every epoch); None at inference
        self.memo: dict[tuple[tuple[int, ...], bytes], Tensor] | None = None

    @property
    def hidden(self) -> int:
        return int(self.config.hidden_size)

    def top_copy(self) -> Module:
        """A branch's own copy of the layers above the split (trainable)."""
        import torch

        layers = torch.nn.ModuleList(copy.deepcopy(layer) for layer in self._template)
        for p in layers.parameters():
            p.requires_grad_(True)
        return layers

    def mask(self, states: Tensor, attention_mask: Tensor) -> Tensor:
        """The layers' attention mask for ``states`` (as the base model builds it)."""
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.config, inputs_embeds=states, attention_mask=attention_mask)

    def run(self, layers: Module, states: Tensor, attention_mask: Tensor) -> Tensor:
        """``layers`` applied to ``states`` (batch, tokens, hidden) under the 0/1 ``attention_mask``."""
        mask = self.mask(states, attention_mask)
        bias = None
        if self._position_bias is not None:
            from types import SimpleNamespace

            owner = SimpleNamespace(relative_attention_bias=self.relative_attention_bias,
                                    relative_position_bucket=self._bucket)
            bias = self._position_bias(owner, states)
        for layer in layers:
            out = layer(states, mask, bias) if bias is not None else layer(states, mask)
            states = out[0] if isinstance(out, tuple) else out
        return states

    def bottom_states(self, enc: Mapping[str, Tensor]) -> Tensor:
        """The hidden states after the frozen layers for a tokenised batch ``enc``."""
        import torch

        key = None
        if self.memo is not None:
            ids = enc["input_ids"]
            key = (tuple(ids.shape), ids.detach().cpu().numpy().tobytes())
            hit = self.memo.get(key)
            if hit is not None:
                return hit.to(device=ids.device, dtype=torch.float32)
        kwargs = {"input_ids": enc["input_ids"]}
        if self.kind == "bert" and "token_type_ids" in enc:
            kwargs["token_type_ids"] = enc["token_type_ids"]
        states = self.run(self.bottom, self.embeddings(**kwargs), enc["attention_mask"])
        if key is not None and self.memo is not None:
            self.memo[key] = states.detach().to(torch.float16).cpu()
        return states
