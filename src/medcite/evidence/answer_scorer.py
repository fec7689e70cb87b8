"""The answer-sentence scorer: a LightGBM regressor (Ke et al. 2017) from a candidate sentence's
:data:`~medcite.evidence.answer_features.ANSWER_FEATURES` to its ROUGE-2 F1 against BioASQ ideal answers.

Trained by ``medcite train answer`` / ``medcite models build medcite-answer`` (:mod:`medcite.train.answer`);
shipped as ``models:medcite-answer``. A folder holds ``answer_head.json`` (format, feature version, features)
and ``answer_lgbm.txt`` (the booster).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import ConfigError
from ..io import read_model_head, write_json
from ..paths import MODELS_PREFIX
from .answer_features import ANSWER_FEATURE_VERSION, ANSWER_FEATURES

HEAD_FILE = "answer_head.json"
BOOSTER_FILE = "answer_lgbm.txt"
FORMAT = "medcite-answer-scorer/1"
MODEL = "medcite-answer"


def _how(folder: Path | None = None) -> str:
    from ..trained_models import make_command

    if folder is None or folder.name == MODEL:
        return f"rebuild it with `{make_command(MODEL)}`"
    return f"rebuild it with `medcite train answer --data BIOASQ.json.gz --out {folder}`"


class Booster(Protocol):
    """The parts of a ``lightgbm.Booster`` the scorers use."""

    def predict(self, data: np.ndarray, *, num_threads: int) -> np.ndarray: ...
    def save_model(self, filename: str) -> object: ...
    def num_feature(self) -> int: ...


@dataclass
class AnswerScorer:
    booster: Booster
    features: tuple[str, ...] = ANSWER_FEATURES
    meta: dict[str, object] = field(default_factory=dict)

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of :func:`~medcite.evidence.answer_features.answer_features`' output."""
        if not len(x):
            return np.zeros(0)
        cols = [ANSWER_FEATURES.index(f) for f in self.features]
        return np.asarray(self.booster.predict(x[:, cols], num_threads=1), dtype=np.float64)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(folder / BOOSTER_FILE))
        write_json(folder / HEAD_FILE, {"format": FORMAT, "feature_version": ANSWER_FEATURE_VERSION,
                                         "features": list(self.features), "booster": BOOSTER_FILE,
                                         **({"meta": self.meta} if self.meta else {})})

    @classmethod
    def load(cls, folder: Path) -> AnswerScorer:
        from ..registry import require

        data = read_model_head(folder / HEAD_FILE, FORMAT, "answer", _how(folder), ANSWER_FEATURE_VERSION)
        lgb = require("lightgbm", "evidence", "the answer-sentence scorer")
        try:
            feats = tuple(str(f) for f in data["features"])
            unknown = [f for f in feats if f not in ANSWER_FEATURES]
            if unknown:
                raise ValueError(f"unknown features {unknown}")
            booster = lgb.Booster(model_file=str(folder / BOOSTER_FILE))
            if booster.num_feature() != len(feats):
                raise ValueError(f"the booster reads {booster.num_feature()} features, the head lists {len(feats)}")
        except (KeyError, TypeError, ValueError, lgb.basic.LightGBMError) as exc:
            raise ConfigError(f"{folder} is not a readable answer-sentence scorer ({exc})", hint=_how(folder)) from None
        return cls(booster, feats, data.get("meta") or {})


def scorer_folder(name: str) -> Path:
    """``models:NAME`` (trained here or shipped) or a folder -> the folder holding the scorer."""
    from ..trained_models import resolve

    folder = Path(resolve(name) if name.startswith(MODELS_PREFIX) else name).expanduser()
    if not (folder / HEAD_FILE).is_file():
        raise ConfigError(f"the answer-sentence scorer {name!r} is not at {folder} (no {HEAD_FILE})",
                          hint=_how(folder))
    return folder
