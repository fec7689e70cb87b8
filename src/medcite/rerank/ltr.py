"""Learning to rank over cheap features: a LightGBM LambdaMART model (Burges 2010, "From RankNet to
LambdaRank to LambdaMART"; Ke et al. 2017, LightGBM) reorders the first stage's candidates.

The model folder (written by ``medcite train ltr``, or ``medcite models build best``) holds ``config.json``
(format, feature groups and columns, the encoders the ``dense`` features read, the first stage it was
trained on), ``model.txt`` (the LightGBM booster) and ``training.json``. The features are those of
:mod:`medcite.rerank.ltr_features`; the sparse index is the settings' ``bm25`` index (its search, analyser
and term statistics: :func:`medcite.index.base.term_statistics`, which a Milvus BM25 index counts in an
embedded index of the store, so a statistics feature has the same value on either engine), and the dense
features reuse the stored vectors of an open vector index built with the same encoder, so ranking a top 100
costs milliseconds beyond the first stage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from ..errors import ConfigError
from ..io import read_model_head
from ..types import Article, Hit
from .base import RerankConfig
from .ltr_features import FEATURE_VERSION, Encoded, Expander, Features, FeatureSources
from .scoring import candidates, rescored

if TYPE_CHECKING:
    from ..context import BuildContext, EncoderSpec
    from ..corpus.store import DocumentStore
    from ..index.dense.encoders import Encoder

log = logging.getLogger(__name__)

FORMAT = "medcite-ltr/1"
HEAD = "config.json"
BOOSTER = "model.txt"
DEFAULT_MODEL = "models:medcite-ltr-bioasq"


def build_command(name: str = DEFAULT_MODEL) -> str:
    """The command that makes the LTR model ``name`` (named by the missing-model and stale-model errors)."""
    from ..trained_models import make_command

    return make_command(name, "medcite train ltr --data BIOASQ.json.gz --corpus STORE")


class LTRConfig(RerankConfig):
    """LightGBM LambdaMART over cheap per-candidate features (BM25 fields, PRF, dense cosines, term proximity)."""

    backend: Literal["ltr"] = "ltr"
    model: str = Field(DEFAULT_MODEL, description="The trained model: models:NAME (trained here under "
                       "$MEDCITE_MODELS_DIR or ~/.cache/medcite/models, else shipped with medcite) or a folder "
                       "written by `medcite train ltr`.")
    index: str = Field("bm25", description="Sparse index (an entry of `indexes`) whose statistics the BM25 "
                       "features use.")

    def model_names(self) -> list[str]:
        return [self.model]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """None needed: the model is shipped with medcite (or trained here by ``medcite models build``) and its
        encoders are packaged; a missing one stops the pipeline with the command that makes it
        (:func:`medcite.trained_models.check_present`)."""
        return self


def model_folder(name: str) -> Path:
    """``models:NAME`` or a folder -> the model folder; ConfigError with the command that makes it."""
    from ..trained_models import resolve

    folder = Path(resolve(name, "medcite train ltr --data BIOASQ.json.gz --corpus STORE")).expanduser()
    if not (folder / HEAD).is_file() or not (folder / BOOSTER).is_file():
        raise ConfigError(f"{folder} is not an LTR model folder (no {HEAD} and {BOOSTER})",
                          hint=f"train one with `{build_command(name)}`")
    return folder


def read_head(folder: Path) -> dict[str, Any]:
    return read_model_head(folder / HEAD, FORMAT, "LTR", f"retrain it with `{build_command()}`",
                           feature_version=FEATURE_VERSION)


def field_lengths(store: DocumentStore, analyzer: Callable[[str], list[str]],
                  sample: int = 2000) -> tuple[float, float, float]:
    """Mean analysed length of titles, abstracts and abstract sentences over the store's first ``sample``
    articles (the BM25 features' avgdl; the sparse index does not report field lengths)."""
    from .ltr_features import _SENTENCE

    n = t = a = sentences = 0
    for art in store.iter_articles(batch=min(sample, 5000)):
        t += len(analyzer(art.title))
        a += len(analyzer(art.abstract))
        sentences += sum(1 for x in _SENTENCE.split(art.abstract) if x.strip())
        n += 1
        if n >= sample:
            break
    return (t / n, a / n, a / max(sentences, 1)) if n else (1.0, 1.0, 1.0)


def feature_sources(ctx: BuildContext, index: str, encoders: Sequence[EncoderSpec], *, prf: bool = True,
                    bm25_depth: int = 300) -> FeatureSources:
    """The features' sources from a build context: the sparse index ``index`` (built or synced by the
    context), the store, expanders as the ``bm25+rocchio``/``bm25+rm3`` branches build them, and the encoders
    (each reusing the stored vectors of an open index built with it)."""
    from ..index.base import term_statistics
    from ..index.sparse.base import SparseConfig
    from ..retrieve.expansion import RM3, Rocchio, TermFilter, analyzer_for
    from .embedding import DocumentVectors, index_vectors

    if ctx.store is None:
        raise ConfigError("the ltr reranker needs a document store")
    cfg = ctx.index_config(index)
    if not isinstance(cfg, SparseConfig):
        raise ConfigError(f"the ltr reranker reads the statistics of a sparse index, and {index!r} is not one",
                          hint="point rerank.index at a BM25 entry of `indexes` (default 'bm25')")
    sparse = ctx.index(index)
    analyzer = analyzer_for(cfg)
    stats = term_statistics(sparse)
    if stats is None:
        raise ConfigError(f"the ltr reranker needs document frequencies, which the {cfg.backend} index "
                          f"{index!r} does not report", hint="use a tantivy index (the default)")
    doc_freq, n_docs = stats.doc_freq, len(stats)
    legal = TermFilter(doc_freq, n_docs, 0.1)
    expanders: list[Expander] = [Rocchio(analyzer, 10, 1.0, 0.75, legal), RM3(analyzer, 10, 0.5, legal)] if prf else []
    avg_title, avg_abstract, avg_sentence = field_lengths(ctx.store, analyzer)
    encoded = []
    for spec in encoders:
        encoder = ctx.encoder(spec)
        vectors = DocumentVectors(encoder.encode_documents, index_vectors(ctx, encoder))
        encoded.append(Encoded(feature_slug(spec), _query_encoder(encoder), vectors))
    store = ctx.store
    return FeatureSources(analyzer, doc_freq, n_docs, avg_title, avg_abstract, search=sparse.search,
                          get_many=lambda pmids: store.get_many(list(pmids)), expanders=expanders,
                          encoders=encoded, bm25_depth=bm25_depth, avg_sentence=avg_sentence)


def _query_encoder(encoder: Encoder) -> Callable[[str], np.ndarray]:
    def encode(query: str) -> np.ndarray:
        return np.asarray(encoder.encode_queries([query]))[0]

    return encode


def feature_slug(spec: object) -> str:
    """An encoder's name in its ``dense`` feature columns (``cos_<slug>``): the last part of its name or path
    (``encoder`` for a spec that is not a name)."""
    name = spec if isinstance(spec, str) else str(getattr(spec, "model", "encoder"))
    return "".join(c if c.isalnum() else "_" for c in name.split(":")[-1].split("/")[-1]).strip("_") or "encoder"


class LTRReranker:
    """Scores each candidate with the LightGBM model over :class:`~medcite.rerank.ltr_features.Features`."""

    name = "ltr"
    Config = LTRConfig

    def __init__(self, booster: Any, features: Features, *, top_n: int | None = 100) -> None:
        self.booster = booster
        self.features = features
        self.top_n = top_n

    @classmethod
    def from_config(cls, cfg: LTRConfig, ctx: BuildContext) -> LTRReranker:
        from ..registry import require

        folder = model_folder(cfg.model)
        head = read_head(folder)
        lgb = require("lightgbm", "train", "the ltr reranker")
        sources = feature_sources(ctx, cfg.index, head["encoders"], prf="prf" in head["groups"],
                                  bm25_depth=int(head.get("bm25_depth", 300)))
        features = Features(sources, head["groups"])
        if features.names != head["features"]:
            raise ConfigError(f"the LTR model at {folder} was trained on features {head['features']}, these "
                              f"settings give {features.names}", hint=f"retrain it with `{build_command(cfg.model)}`")
        booster = lgb.Booster(model_file=str(folder / BOOSTER))
        return cls(booster, features, top_n=cfg.top_n)

    def matrix(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article]) -> tuple[list[Hit], np.ndarray]:
        """The candidates (best ``top_n`` known hits) and their feature rows."""
        pool = candidates(hits, articles, self.top_n)
        ranked_pool = [Hit(h.pmid, h.score, i, h.branches) for i, h in enumerate(pool, start=1)]
        return ranked_pool, self.features(query, ranked_pool, articles)

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        pool, x = self.matrix(query, hits, articles)
        if not pool or k <= 0:
            return []
        scores = self.booster.predict(x, num_threads=1)
        return rescored(pool, [float(s) for s in scores], k)
