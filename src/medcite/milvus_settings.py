"""Where the Milvus server is and how medcite uses it: the settings section ``index.milvus``, read by the
client (:mod:`medcite.index.milvus.client`), the collection (:mod:`medcite.index.milvus.collection`) and the engine
switch (:mod:`medcite.index.milvus.engine`).

It sits beside :mod:`medcite.settings_base`, below both ``config`` (whose ``index`` section holds it) and ``index/``
(whose Milvus backends read it), so the settings tree imports nothing of ``index/``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .settings_base import Section


class MilvusSettings(Section):
    """Where the Milvus server is and how medcite uses it (``index.milvus``; see docs/SEARCH.md, "Milvus")."""

    uri: str = Field(
        "http://127.0.0.1:19530",
        description="Milvus server address: a single node or cluster proxy (http://HOST:19530) or a Zilliz Cloud "
        "endpoint (https://...). The same client talks to all of them.",
    )
    token_env: str = Field(
        "MILVUS_TOKEN",
        description="Environment variable holding the credentials ('user:password', or a Zilliz API key); unset "
        "or empty: no authentication. The token itself never enters the settings or run directories.",
    )
    db_name: str = Field("", description="Milvus database of the collection ('' = the server's default database).")
    collection: str | None = Field(
        None,
        description="Collection name; None: medcite_<store id>_<layout hash>, one collection per document store "
        "and index layout (the named indexes served by Milvus, their analysis and encoders).",
    )
    timeout_s: float = Field(10.0, gt=0, description="Seconds to wait for the server on connect and on each call.")
    batch_size: int = Field(512, ge=1, description="Articles per upsert batch when the collection follows the store.")
    hybrid: Literal["server", "client"] = Field(
        "server",
        description="With index.backend=milvus and 'rrf' fusion, plain 'bm25' and 'dense' branches of equal weight "
        "and budget become one 'milvus-hybrid' branch (both searches and their RRF in one server call per query); "
        "'client': keep the branches and fuse in medcite.",
    )
