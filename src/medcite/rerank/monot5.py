"""monoT5 reranking (Nogueira, Jiang, Pradeep & Lin 2020, "Document Ranking with a Pretrained
Sequence-to-Sequence Model"): T5 reads ``Query: q Document: d Relevant:`` and the score is the
log-probability of the first decoded token being ``true`` rather than ``false``.

The document is truncated so that the prompt's ``Relevant:`` and the end-of-sequence token always
fit (as pygaggle does), never the other way round. Default model: ``castorini/monot5-base-msmarco``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..devices import Device, Dtype, Placement, device_field, dtype_field, place
from ..errors import ConfigError
from ..registry import require
from ..types import Article
from .base import MINILM_STAND_IN, RerankConfig, swapped
from .scoring import PointwiseReranker, document_text, load_t5

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

DEFAULT_MODEL = "castorini/monot5-base-msmarco"


class MonoT5Config(RerankConfig):
    """monoT5: T5 reads 'Query: q Document: d Relevant:'; the score is log P(true)."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["monot5"] = "monot5"
    model: str = Field(DEFAULT_MODEL, description="monoT5 model name or folder.")
    batch_size: int | None = Field(
        None, ge=1, description="Pairs scored per forward pass; None: by device (32 on the CPU, 64 on a GPU)."
    )
    max_length: int = Field(512, ge=8, description="Token limit of the prompt (the document is cut to fit).")
    device: Device = device_field("monoT5")
    dtype: Dtype = dtype_field("monoT5")

    def model_names(self) -> list[str]:
        return [self.model]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """No T5 reranker ships in a package: the packaged MiniLM bi-encoder scores the same top_n, keeps k."""
        return swapped(self, MINILM_STAND_IN)


def monot5_placement(model: str, device: str = "auto", dtype: str = "auto", batch_size: int | None = None) -> Placement:
    """Where monoT5 runs (:func:`medcite.devices.place`); never float16 by default (T5 overflows it)."""
    return place(f"rerank monoT5 {model}", device, dtype, setting="rerank", half=False, batch_size=batch_size,
                 batch_defaults=(32, 64))


def single_token_id(tokenizer: Any, word: str) -> int:
    ids = tokenizer(word, add_special_tokens=False).input_ids
    if len(ids) != 1:
        raise ConfigError(f"the monoT5 tokenizer splits {word!r} into {len(ids)} tokens; it must be one",
                          hint="use a monoT5 model whose vocabulary has 'true' and 'false' as single tokens")
    return int(ids[0])


class MonoT5Reranker(PointwiseReranker):
    """Pointwise seq2seq relevance: score = log P(true) over {true, false} at the first decoder step."""

    name = "monot5"
    Config = MonoT5Config

    def __init__(self, model: str = DEFAULT_MODEL, *, batch_size: int | None = None, max_length: int = 512,
                 top_n: int | None = 100, device: str = "auto", dtype: str = "auto",
                 loaded: tuple[Any, Any] | None = None) -> None:
        super().__init__(top_n)
        self._torch = require("torch", "rerank", "the monoT5 reranker")
        self.model_name = model
        self.placement = monot5_placement(model, device, dtype, batch_size)
        self.tokenizer, self.model = loaded or load_t5(model, self.placement, "monoT5", "the monoT5 reranker")
        self.batch_size = int(self.placement.batch_size or 32)
        self.max_length = max_length
        self.device = self.placement.device
        self.true_id = single_token_id(self.tokenizer, "true")
        self.false_id = single_token_id(self.tokenizer, "false")
        self.eos_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        start = self.model.config.decoder_start_token_id
        self.start_id = int(start if start is not None else self.pad_id)

    @classmethod
    def from_config(cls, cfg: MonoT5Config, ctx: BuildContext) -> MonoT5Reranker:
        placed = monot5_placement(cfg.model, cfg.device, cfg.dtype, cfg.batch_size)
        loaded = ctx.models.get(("monot5", cfg.model, placed.device, placed.dtype),
                                lambda: load_t5(cfg.model, placed, "monoT5", "the monoT5 reranker"))
        return cls(cfg.model, batch_size=cfg.batch_size, max_length=cfg.max_length, top_n=cfg.top_n,
                   device=cfg.device, dtype=cfg.dtype, loaded=loaded)

    def input_ids(self, query: str, document: str) -> list[int]:
        """``Query: q Document: d Relevant:`` + EOS, with only the document cut to fit ``max_length``."""
        tok = self.tokenizer
        head = tok(f"Query: {query} Document:", add_special_tokens=False).input_ids
        tail = tok("Relevant:", add_special_tokens=False).input_ids
        doc = tok(document, add_special_tokens=False).input_ids
        eos = [self.eos_id] if self.eos_id is not None else []
        room = max(self.max_length - len(head) - len(tail) - len(eos), 0)
        ids = head + doc[:room] + tail + eos
        return ids[-self.max_length :] if len(ids) > self.max_length else ids

    def score_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        torch = self._torch
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            rows = [self.input_ids(query, t) for t in texts[start : start + self.batch_size]]
            width = max(len(r) for r in rows)
            ids = torch.tensor([r + [self.pad_id] * (width - len(r)) for r in rows], device=self.device)
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=self.device)
            decoder = torch.full((len(rows), 1), self.start_id, dtype=torch.long, device=self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder).logits[:, 0, :]
            pair = torch.log_softmax(logits[:, [self.false_id, self.true_id]].float(), dim=-1)
            out.extend(float(x) for x in pair[:, 1])
        return out

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        return self.score_texts(query, [document_text(a) for a in articles])
