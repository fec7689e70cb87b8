"""The reader's cached bottom states (medcite.train.reader_cache): computed once, resumed by part, reused by
example for other data, derived at a higher split without running the bottom again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medcite.train.reader_data import Example

pytest.importorskip("torch")

EXAMPLES = [Example("yesno", f"Does drug {i} lower blood pressure?", f"Drug {i} lowered blood pressure by {i} mmHg "
                    "in adults." + " More words." * (i % 3)) for i in range(7)]


@pytest.fixture(scope="module")
def parts() -> tuple[object, object]:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from medcite.bases import base_folder
    from medcite.reader.trunk import SplitTrunk

    folder = str(base_folder("minilm"))
    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    torch.manual_seed(0)
    return model, AutoTokenizer.from_pretrained(folder, local_files_only=True), SplitTrunk


@pytest.mark.slow  # loads the packaged MiniLM
def test_states_are_cached_resumed_and_reused_by_example(parts: tuple, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from medcite.reader.infer import encode_pairs
    from medcite.train import reader_cache as rc

    model, tok, split = parts
    monkeypatch.setattr(rc, "PART", 3)
    trunk = split(model, 2)
    states = rc.build_states(trunk, tok, "yesno", EXAMPLES, 64, base_digest="d", quantized=False, folder=tmp_path,
                             progress=False)
    assert len(states) == 7 and len(states.parts) == 3
    enc = encode_pairs(tok, [EXAMPLES[4].first], [EXAMPLES[4].second], 64)
    with torch.no_grad():
        want = trunk.bottom_states(enc)[0].numpy()
    got, mask = states.batch([4])
    n = int(mask.sum())
    assert n == int(enc["attention_mask"].sum()) and np.allclose(got[0, :n].numpy(), want, atol=1e-2)  # float16
    # another list of examples (one new, one gone): only the new one is computed, the others are copied
    calls = []
    real = trunk.bottom_states
    monkeypatch.setattr(trunk, "bottom_states", lambda e: calls.append(len(e["input_ids"])) or real(e))
    other = EXAMPLES[1:] + [Example("yesno", "Is it new?", "It is new.")]
    again = rc.build_states(trunk, tok, "yesno", other, 64, base_digest="d", quantized=False, folder=tmp_path,
                            progress=False)
    assert calls == [1] and np.allclose(again.batch([3])[0].numpy(), states.batch([4])[0].numpy())
    # a finished cache is read, not computed
    calls.clear()
    rc.build_states(trunk, tok, "yesno", other, 64, base_digest="d", quantized=False, folder=tmp_path, progress=False)
    assert calls == []


@pytest.mark.slow  # loads the packaged MiniLM
def test_states_at_a_higher_split_derive_from_the_lower_ones(parts: tuple, tmp_path: Path) -> None:
    from medcite.train import reader_cache as rc

    model, tok, split = parts
    low, high = split(model, 2), split(model, 4)
    source = rc.build_states(low, tok, "yesno", EXAMPLES, 64, base_digest="d", quantized=False, folder=tmp_path,
                             progress=False)
    derived = rc.derive_states(source, low, list(high.bottom)[2:], "yesno", EXAMPLES, 64, at=4, base_digest="d",
                               quantized=False, folder=tmp_path, progress=False)
    direct = rc.build_states(high, tok, "yesno", EXAMPLES, 64, base_digest="d", quantized=False,
                             folder=tmp_path / "direct", progress=False)
    a, _ = derived.batch(list(range(7)))
    b, _ = direct.batch(list(range(7)))
    assert np.allclose(a.numpy(), b.numpy(), atol=2e-2)
