"""ColBERT late-interaction reranking (Khattab & Zaharia 2020, "ColBERT: Efficient and Effective Passage Search
via Contextualized Late Interaction over BERT"; Santhanam et al. 2022, ColBERTv2), as CLaC 2024's SimpleQA
systems rerank their pooled candidates.

The checkpoint is a BERT encoder plus a bias-free linear projection to ``dim`` (128) per token, saved as one
Hugging Face folder (``colbert-ir/colbertv2.0``: keys ``bert.*`` and ``linear.weight``). Queries are
``[CLS] [unused0] q [SEP]`` padded with ``[MASK]`` to ``query_max_length`` (query augmentation; the masks are
encoded but not attended to, as ColBERTv2's ``attend_to_mask_tokens=False``); documents are
``[CLS] [unused1] d [SEP]`` up to ``doc_max_length`` with punctuation and padding left out. Every token vector
is L2-normalised and the score is MaxSim: the sum over query tokens of the best cosine with any document token.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..devices import Device, Dtype, Placement, device_field, dtype_field, place
from ..registry import require
from ..types import Article
from .base import MINILM_STAND_IN, RerankConfig, swapped
from .scoring import PointwiseReranker, document_text, local_model_dir, not_available

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import BuildContext

log = logging.getLogger(__name__)

DEFAULT_MODEL = "colbert-ir/colbertv2.0"
QUERY_MARKER, DOC_MARKER = "[unused0]", "[unused1]"


class ColBERTConfig(RerankConfig):
    """ColBERT: MaxSim of per-token query and document vectors."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["colbert"] = "colbert"
    model: str = Field(DEFAULT_MODEL, description="ColBERT checkpoint: Hugging Face name or folder.")
    dim: int = Field(128, ge=1, description="Size of the token vectors (the checkpoint's linear projection).")
    query_max_length: int = Field(32, ge=4, description="Query tokens, padded with [MASK] (ColBERTv2: 32).")
    doc_max_length: int = Field(180, ge=8, description="Document tokens (ColBERTv2: 180).")
    batch_size: int | None = Field(
        None, ge=1, description="Texts encoded per forward pass; None: by device (32 on the CPU, 64 on a GPU)."
    )
    device: Device = device_field("ColBERT")
    dtype: Dtype = dtype_field("ColBERT")

    def model_names(self) -> list[str]:
        return [self.model]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """No ColBERT ships in a package: the packaged MiniLM bi-encoder scores the same top_n, keeps k."""
        return swapped(self, MINILM_STAND_IN)


def colbert_class() -> Any:
    """The torch module of a ColBERT checkpoint (made on first use, so importing this file needs no torch)."""
    transformers = require("transformers", "rerank", "the ColBERT reranker")
    torch = require("torch", "rerank", "the ColBERT reranker")

    class HFColBERT(transformers.BertPreTrainedModel):  # type: ignore[misc,name-defined]
        _keys_to_ignore_on_load_unexpected = [r"cls"]

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.bert = transformers.BertModel(config, add_pooling_layer=False)
            self.linear = torch.nn.Linear(config.hidden_size, getattr(config, "dim", 128), bias=False)
            self.post_init()

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            out = self.linear(self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state)
            return torch.nn.functional.normalize(out, p=2, dim=2)

    return HFColBERT


def colbert_placement(model: str, device: str = "auto", dtype: str = "auto", batch_size: int | None = None
                      ) -> Placement:
    """Where ColBERT runs (:func:`medcite.devices.place`)."""
    return place(f"rerank colbert {model}", device, dtype, setting="rerank", batch_size=batch_size,
                 batch_defaults=(32, 64))


def load_colbert(name_or_path: str, *, dim: int = 128, device: str = "auto", dtype: str = "auto",
                 placement: Placement | None = None) -> tuple[Any, Any]:
    """(tokenizer, model) of a ColBERT checkpoint by name or folder (offline: a folder or the HF cache), on the
    device and in the dtype its settings resolve to."""
    placed = placement or colbert_placement(name_or_path, device, dtype)
    transformers = require("transformers", "rerank", "the ColBERT reranker")
    folder = local_model_dir(name_or_path)
    source = str(folder) if folder else name_or_path
    try:
        config = transformers.AutoConfig.from_pretrained(source, local_files_only=folder is not None)
        config.dim = getattr(config, "dim", dim)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=folder is not None)
        model = colbert_class().from_pretrained(source, config=config, local_files_only=folder is not None)
    except OSError as exc:
        raise not_available(name_or_path, "ColBERT", exc) from exc
    model.eval()
    placed.to(model)
    return tokenizer, model


class ColBERTReranker(PointwiseReranker):
    """Late interaction: score(q, d) = sum over query tokens of max over document tokens of cosine."""

    name = "colbert"
    Config = ColBERTConfig

    def __init__(self, loaded: tuple[Any, Any], *, query_max_length: int = 32, doc_max_length: int = 180,
                 batch_size: int | None = None, top_n: int | None = 100, device: str = "auto") -> None:
        super().__init__(top_n)
        self._torch = require("torch", "rerank", "the ColBERT reranker")
        self.tokenizer, self.model = loaded
        self.query_max_length, self.doc_max_length = query_max_length, doc_max_length
        # the loaded model's device (its placement resolved ``device`` when it was loaded)
        self.device = str(next(self.model.parameters()).device) if hasattr(self.model, "parameters") else device
        self.batch_size = batch_size or (32 if self.device == "cpu" else 64)
        tok = self.tokenizer
        self.q_marker, self.d_marker = tok.convert_tokens_to_ids([QUERY_MARKER, DOC_MARKER])
        self.skip = {i for p in string.punctuation for i in tok(p, add_special_tokens=False).input_ids}

    @classmethod
    def from_config(cls, cfg: ColBERTConfig, ctx: BuildContext) -> ColBERTReranker:
        placed = colbert_placement(cfg.model, cfg.device, cfg.dtype, cfg.batch_size)
        loaded = ctx.models.get(("colbert", cfg.model, cfg.dim, placed.device, placed.dtype),
                                lambda: load_colbert(cfg.model, dim=cfg.dim, placement=placed))
        return cls(loaded, query_max_length=cfg.query_max_length, doc_max_length=cfg.doc_max_length,
                   batch_size=placed.batch_size, top_n=cfg.top_n, device=placed.device)

    def _ids(self, text: str, marker: int, limit: int) -> list[int]:
        tok = self.tokenizer
        body = tok(text, add_special_tokens=False).input_ids[: limit - 3]
        return [tok.cls_token_id, marker, *body, tok.sep_token_id]

    def query_vectors(self, query: str) -> Any:
        """``query_max_length`` x dim: the query's tokens, then [MASK] augmentation (encoded, not attended to)."""
        torch = self._torch
        ids = self._ids(query, self.q_marker, self.query_max_length)
        n = len(ids)
        ids += [self.tokenizer.mask_token_id] * (self.query_max_length - n)
        mask = [1] * n + [0] * (self.query_max_length - n)
        with torch.inference_mode():
            out = self.model(torch.tensor([ids], device=self.device), torch.tensor([mask], device=self.device))
        return out[0]

    def document_vectors(self, texts: Sequence[str]) -> list[Any]:
        """Per document: its token vectors, punctuation and padding left out."""
        torch = self._torch
        out: list[Any] = []
        for start in range(0, len(texts), self.batch_size):
            rows = [self._ids(t, self.d_marker, self.doc_max_length) for t in texts[start : start + self.batch_size]]
            width = max(len(r) for r in rows)
            pad = self.tokenizer.pad_token_id or 0
            ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=self.device)
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=self.device)
            with torch.inference_mode():
                vecs = self.model(ids, mask)
            for row, v in zip(rows, vecs, strict=True):
                keep = [i for i, t in enumerate(row) if t not in self.skip]
                out.append(v[keep])
        return out

    def score_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        q = self.query_vectors(query)
        q = q.float()
        return [float((q @ d.float().T).max(dim=1).values.sum()) for d in self.document_vectors(texts)]

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        return self.score_texts(query, [document_text(a) for a in articles])
