"""medcite's reader (medcite.reader): its stored form, the refusals that protect it, calibration, answer spans,
and the data split it is trained and measured on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from medcite.errors import ConfigError
from medcite.reader import model as rm
from medcite.reader.spans import SpanHit, aggregate, decode, is_generic, normalise
from medcite.reader.verdict import yes_probability

# ------------------------------------------------------------------------------------------ stored form


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A reader with every head on the packaged MiniLM, split at layer 4 into two branches (each its own copy
    of the top two layers, perturbed so the branches differ), untrained heads, saved."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    spec = rm.ReaderSpec(("relevance", "yesno", "stance", "span"), max_length={"yesno": 64, "stance": 64,
                                                                               "relevance": 64, "span": 64},
                         trained_from=4, branches={"qa": ("relevance", "yesno", "span"), "stance": ("stance",)},
                         temperature={"yesno": 1.5}, thresholds={"yesno": 0.6})
    net = rm.build_net("minilm", spec).eval()
    with torch.no_grad():
        for p in net.tops["stance"].parameters():
            p.add_(0.01 * torch.randn_like(p))
    folder = tmp_path_factory.mktemp("reader")
    rm.save_reader(net, spec, folder)
    return folder, net


@pytest.mark.slow  # loads the packaged MiniLM
def test_a_saved_reader_stores_only_its_branches_as_int8(saved: tuple[Path, object]) -> None:
    folder, net = saved
    size = (folder / rm.WEIGHTS_FILE).stat().st_size
    # two branches of two MiniLM layers (1.8M weights each) as int8, plus scales and heads: no frozen bottom
    assert 4_000_000 < size < 9_000_000
    spec = json.loads((folder / rm.SPEC_FILE).read_text())
    assert spec["format"] == rm.FORMAT and spec["reader_version"] == rm.READER_VERSION
    assert spec["labels"]["stance"] == ["supports", "contradicts", "neutral"]
    assert spec["trained_from"] == 4 and spec["branches"] == {"qa": ["relevance", "yesno", "span"],
                                                              "stance": ["stance"]}
    assert len(spec["weights_sha256"]) == 64 and len(spec["embeddings_sha256"]) == 64
    stored = set(rm.state_to_store(net))
    assert not any(k.startswith("trunk.") for k in stored)
    assert any(k.startswith("tops.stance.") and k.endswith(".int8") for k in stored)


@pytest.mark.slow  # loads the packaged MiniLM
def test_a_loaded_reader_reads_as_the_saved_one(saved: tuple[Path, object]) -> None:
    torch = pytest.importorskip("torch")
    from medcite.reader.infer import encode_pairs, load_reader

    folder, net = saved
    reader = load_reader(folder, quantize=False)
    q = ["Is aspirin an antiplatelet drug?", "Does metformin lower glucose?", "Is TP53 a tumour suppressor?"]
    p = ["Aspirin irreversibly inhibits platelet COX-1.", "Metformin had no effect on glucose.",
         "TP53 is mutated in half of cancers."]
    got = reader.logits("yesno", q, p)
    with torch.inference_mode():
        want = net(encode_pairs(reader.tokenizer, q, p, 64), "yesno").numpy()
    # the stored weights are int8 per row: the loaded reader reads within rounding of the trained one
    assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > 0.99
    probs = reader.probabilities("yesno", q, p)
    assert probs.shape == (3, 3) and np.allclose(probs.sum(1), 1)
    assert np.allclose(probs, rm.softmax(got, 1.5), atol=1e-6)  # the stored temperature is applied
    # on a CPU: torch dynamic int8 by default (activations quantised too: looser; its effect on the held-back
    # measures is in training.json, measured with the int8 model)
    quantised = load_reader(folder)
    assert np.corrcoef(quantised.logits("yesno", q, p).ravel(), want.ravel())[0, 1] > 0.8
    spans = reader.span_logits("Which protein?", ["TP53 is mutated."])
    start, end, offsets = spans[0]
    assert len(start) == len(end) == len(offsets)
    assert all(o == (-1, -1) for o in offsets[:3])  # [CLS] and the question: never an answer


@pytest.mark.slow  # loads the packaged MiniLM
def test_a_reader_whose_weights_changed_is_refused_with_the_rebuild_command(saved: tuple[Path, object],
                                                                            tmp_path: Path) -> None:
    folder, _ = saved
    copy = tmp_path / "medcite-reader"
    copy.mkdir()
    for f in (rm.SPEC_FILE, rm.WEIGHTS_FILE):
        (copy / f).write_bytes((folder / f).read_bytes())
    with open(copy / rm.WEIGHTS_FILE, "r+b") as fh:
        fh.seek(-10, 2)
        fh.write(b"0123456789")
    with pytest.raises(ConfigError) as info:
        rm.load_net(copy)
    assert "SHA-256" in str(info.value) and "medcite models build medcite-reader" in info.value.hint


@pytest.mark.slow  # loads the packaged MiniLM
def test_a_reader_of_another_reader_version_is_refused_with_the_rebuild_command(saved: tuple[Path, object],
                                                                               tmp_path: Path) -> None:
    folder, _ = saved
    copy = tmp_path / "my-reader"
    copy.mkdir()
    spec = json.loads((folder / rm.SPEC_FILE).read_text())
    (copy / rm.SPEC_FILE).write_text(json.dumps(spec | {"reader_version": rm.READER_VERSION - 1}))
    with pytest.raises(ConfigError) as info:
        rm.read_spec(copy)
    assert "stale reader" in str(info.value) and f"medcite train reader --out {copy}" in info.value.hint
    (copy / rm.SPEC_FILE).write_text(json.dumps(spec | {"labels": {"stance": ["yes", "no", "maybe"]}}))
    with pytest.raises(ConfigError, match="labels"):
        rm.read_spec(copy)


@pytest.mark.slow  # loads the packaged MiniLM and the shipped reader
def test_a_first_format_reader_is_read_as_one_shared_branch_over_the_whole_trunk(tmp_path: Path) -> None:
    """The shipped reader of the first format (a MiniLM trunk fine-tuned whole): its encoder layers become the
    shared branch's, its embeddings replace the base's; it still reads "no" where a sentence says no."""
    from medcite.reader.infer import load_reader
    from medcite.trained_models import SHIPPED_DIR

    shipped = SHIPPED_DIR / "medcite-reader"
    spec = json.loads((shipped / rm.SPEC_FILE).read_text())
    if spec["format"] != rm.LEGACY_FORMAT:
        pytest.skip("the shipped reader is of this format")
    reader = load_reader(shipped, device="cpu")
    assert reader.spec.trained_from == 0 and reader.spec.branches == {rm.SHARED: tuple(spec["heads"])}
    q = ["Is aspirin effective for preventing colorectal cancer?"] * 2
    s = ["Aspirin reduced the incidence of colorectal cancer in this randomized trial.",
         "Aspirin had no effect on colorectal cancer incidence."]
    p = reader.probabilities("yesno", q, s)
    assert p[0, 0] > p[0, 1] and p[1, 1] > p[1, 0]  # yes, then no: the mapped layers are the trained ones
    copy = tmp_path / "siamese"
    copy.mkdir()
    (copy / rm.SPEC_FILE).write_text(json.dumps(spec | {"siamese": ["stance"]}))
    with pytest.raises(ConfigError, match="siamese"):
        rm.read_spec(copy)


def test_a_spec_refuses_unknown_heads_and_heads_outside_one_branch() -> None:
    with pytest.raises(ConfigError, match="unknown reader heads"):
        rm.ReaderSpec(("yesno", "summary"))
    with pytest.raises(ConfigError, match="exactly one branch"):
        rm.ReaderSpec(("yesno", "span"), branches={"a": ("yesno",)})
    with pytest.raises(ConfigError, match="exactly one branch"):
        rm.ReaderSpec(("yesno",), branches={"a": ("yesno",), "b": ("yesno",)})
    spec = rm.ReaderSpec(("yesno",), thresholds={"yesno": 0.6}, platt={"relevance": (2.0, -1.0)})
    assert spec.branches == {rm.SHARED: ("yesno",)}
    assert rm.ReaderSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    split = rm.ReaderSpec(("yesno", "stance"), base="mpnet", trained_from=8, lora_rank=16,
                          branches={"verdict": ("yesno",), "stance": ("stance",)})
    assert rm.ReaderSpec.from_dict(json.loads(json.dumps(split.as_dict()))) == split
    assert split.branch_of("stance") == "stance"


@pytest.mark.slow  # loads the packaged MiniLM
def test_the_stance_backend_reads_a_reader_folder(saved: tuple[Path, object]) -> None:
    from medcite.attribute.classifier import ReaderStanceModel, load_classifier

    folder, _ = saved
    model = load_classifier(str(folder))
    assert isinstance(model, ReaderStanceModel)
    p = model.probabilities(["Masks reduce infection."], ["Masks did not reduce infection."], max_length=64,
                            batch_size=4)
    assert p.shape == (1, 3) and abs(p.sum() - 1) < 1e-6


# ------------------------------------------------------------------------------------------ calibration


def test_temperature_scaling_recovers_the_temperature_that_made_the_labels() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, size=(4000, 3))
    truth = rm.softmax(logits, 2.5)
    labels = [int(rng.choice(3, p=row)) for row in truth]
    assert abs(rm.fit_temperature(logits, labels) - 2.5) < 0.25
    assert rm.fit_temperature(np.zeros((0, 3)), []) == 1.0


def test_platt_scaling_and_the_reliability_curve() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(0, 2, size=3000)
    labels = (rng.random(3000) < rm.sigmoid(0.5 * scores - 1.0)).astype(int)
    a, b = rm.fit_platt(scores, labels)
    assert abs(a - 0.5) < 0.1 and abs(b + 1.0) < 0.15
    p = rm.sigmoid(a * scores + b)
    calibrated = rm.reliability(np.maximum(p, 1 - p), (p >= 0.5) == (labels == 1))
    overconfident = rm.reliability(np.full(3000, 0.99), (p >= 0.5) == (labels == 1))
    assert calibrated["ece"] < 0.05 < overconfident["ece"]
    assert sum(b["count"] for b in calibrated["curve"]) == calibrated["predictions"] == 3000


def test_a_question_is_settled_by_the_passages_that_settle_it() -> None:
    # one passage says yes, two say "maybe": the verdict is the settling passage's
    probs = np.array([[0.9, 0.05, 0.05], [0.2, 0.2, 0.6], [0.25, 0.15, 0.6]])
    assert yes_probability(probs) > 0.75
    assert yes_probability(np.array([[0.1, 0.8, 0.1]])) < 0.2
    assert yes_probability(np.zeros((0, 3))) == 0.5


# ------------------------------------------------------------------------------------------ answer spans


def _offsets(text: str, question_tokens: int = 3) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = [(-1, -1)] * question_tokens
    pos = 0
    for word in text.split():
        start = text.index(word, pos)
        out.append((start, start + len(word)))
        pos = start + len(word)
    return out + [(-1, -1)]


def test_decode_takes_whole_word_spans_of_the_passage_only() -> None:
    text = "Ubrogepant (MK-1602) is a CGRP receptor antagonist."
    offsets = _offsets(text)
    start, end = np.full(len(offsets), -8.0), np.full(len(offsets), -8.0)
    start[0] = end[0] = 9.0  # the question's token: never taken
    start[3], end[3] = 4.0, 4.0  # "Ubrogepant"
    hits = decode(text, start, end, offsets)
    assert hits and hits[0].text == "Ubrogepant" and all(h.start >= 0 for h in hits)
    assert text[hits[0].start: hits[0].end] == hits[0].text


def test_aggregate_merges_an_abbreviation_with_its_definition_and_drops_generic_words() -> None:
    passages = ["Tumor necrosis factor (TNF) drives inflammation.", "TNF harms most patients with tumours.",
                "Blocking tumor necrosis factor helps."]
    hits = [SpanHit(0, 0, 21, "Tumor necrosis factor", 0.6), SpanHit(1, 0, 3, "TNF", 0.5),
            SpanHit(1, 10, 23, "most patients", 0.9), SpanHit(2, 9, 30, "tumor necrosis factor", 0.3)]
    answers = aggregate(hits, passages, "Which cytokine drives inflammation?")
    assert [a.key for a in answers] == ["tumor necrosis factor"]
    assert abs(answers[0].score - (1 - 0.4 * 0.5 * 0.7)) < 1e-6  # noisy-or of its three spans
    assert set(answers[0].synonyms) == {"Tumor necrosis factor", "TNF", "tumor necrosis factor"}
    assert answers[0].passages == [0, 1, 2]
    assert is_generic("inflammation", "Which cytokine drives inflammation?")
    assert is_generic("the patients", "q") and not is_generic("ivermectin", "q")
    assert normalise("  Receptor-Antagonists. ") == "receptor antagonist"


# ------------------------------------------------------------------------------------------ the data split


@pytest.mark.slow  # reads the shared BioASQ, PubMedQA and HealthVer files
def test_the_split_keeps_questions_and_claims_on_one_side(shared_data: Path) -> None:
    from medcite.train.qa_data import held_out_ids
    from medcite.train.reader_data import DataOptions, build_data

    bioasq = shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
    data = build_data(bioasq, shared_data / "pubmedqa" / "pqal_dev.json",
                      shared_data / "healthver" / "healthver_dev.csv", DataOptions(slice=30))
    held = held_out_ids(bioasq)
    sides = (data.train, data.valid, data.test)
    assert all(q.id in held for q in data.test.bioasq)  # the benchmarks' held-back questions, and only them
    assert not any(q.id in held for s in sides[:2] for q in s.bioasq)
    bodies = [{" ".join(q.body.lower().split()) for q in s.bioasq} for s in sides]
    assert not (bodies[0] & bodies[2]) and not (bodies[1] & bodies[2])
    claims = [{p.claim for p in s.healthver} for s in sides]
    assert not (claims[0] & claims[2]) and not (claims[0] & claims[1]) and not (claims[1] & claims[2])
    items = [{i.pmid for i in s.pubmedqa} for s in sides]
    assert not (items[0] & items[2]) and not (items[1] & items[2])
    for side in sides:  # every example belongs to a question or claim of its own side
        groups = {q.id for q in side.bioasq} | {i.pmid for i in side.pubmedqa} | {p.claim for p in side.healthver}
        # (the rule-negated copies of training claims, a training-only augmentation, are their own claims)
        assert all(e.group in groups for ex in side.examples.values() for e in ex if e.source != "negation")
    assert not any(e.source == "negation" for s in sides[1:] for e in s.examples.get("stance", []))
    assert any(e.source == "negation" for e in data.train.examples["stance"])
    spans = [e for e in data.train.examples["span"] if e.spans]
    assert spans and all(0 <= a < b <= len(e.second) for e in spans for a, b in e.spans)
    negatives = [e for e in data.train.examples["relevance"] if e.label == 0]
    assert negatives and all(e.second not in {s for q in data.train.bioasq if q.id == e.group
                                              for s in (sn.text for sn in q.snippets)} for e in negatives)
    assert data.report["healthver"]["held_back_claims"] == 99  # 33 % of the file's 299 claims (the cap is 100)


# ------------------------------------------------------------------------------------------ split trunk, LoRA


@pytest.mark.slow  # loads the packaged MiniLM and the installed all-mpnet-base-v2
@pytest.mark.parametrize("base", ["minilm", "mpnet"])
def test_the_split_trunk_reads_as_the_whole_encoder(base: str) -> None:
    """bottom then a branch's copy of the top = the Hugging Face model's last hidden state, for both
    architectures (MPNet's layers also take the relative position bias its encoder computes)."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModel, AutoTokenizer

    from medcite.bases import base_folder
    from medcite.reader.infer import encode_pairs
    from medcite.reader.trunk import SplitTrunk

    folder = str(base_folder(base))
    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    enc = encode_pairs(tok, ["Is HYDIN an axonemal protein?", "Does it?"],
                       ["HYDIN is a component of the central pair apparatus of motile cilia.", "Yes."], 64)
    with torch.no_grad():
        want = model(**enc).last_hidden_state
        for at in (0, 2, model.config.num_hidden_layers):
            trunk = SplitTrunk(model, at)
            got = trunk.run(trunk.top_copy(), trunk.bottom_states(enc), enc["attention_mask"])
            keep = enc["attention_mask"].bool()
            assert torch.allclose(got[keep], want[keep], atol=1e-5), (base, at)
    assert all(not p.requires_grad for p in SplitTrunk(model, 3).parameters())
    assert all(p.requires_grad for p in SplitTrunk(model, 3).top_copy().parameters())


def test_lora_starts_as_the_layer_and_merges_into_it() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    base = torch.nn.Linear(6, 4)
    lora = rm.LoRALinear(base, rank=2, alpha=4.0)
    x = torch.randn(3, 6)
    assert torch.allclose(lora(x), base(x))  # B starts at zero: training starts from the base layer
    assert [n for n, p in lora.named_parameters() if p.requires_grad] == ["lora_a", "lora_b"]
    with torch.no_grad():
        lora.lora_b.normal_()
    merged = lora.merged()
    assert isinstance(merged, torch.nn.Linear) and torch.allclose(merged(x), lora(x), atol=1e-5)


@pytest.mark.slow  # loads the packaged MiniLM
def test_a_lora_reader_stores_only_its_adapters_and_reads_as_trained(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from medcite.reader.infer import encode_pairs, load_reader

    torch.manual_seed(0)
    spec = rm.ReaderSpec(("yesno",), max_length={"yesno": 64}, trained_from=4, lora_rank=4)
    net = rm.build_net("minilm", spec).eval()
    with torch.no_grad():
        for name, p in net.named_parameters():
            if ".lora_b" in name:
                p.normal_(0, 0.05)
    rm.save_reader(net, spec, tmp_path)
    stored = rm.state_to_store(net)
    assert stored and all(".lora_" in k or k.startswith("heads.") for k in stored)
    assert (tmp_path / rm.WEIGHTS_FILE).stat().st_size < 300_000  # adapters, not layers
    reader = load_reader(tmp_path, quantize=False)
    q, p = ["Is TP53 a tumour suppressor?"], ["TP53 is mutated in half of cancers."]
    with torch.no_grad():
        want = net(encode_pairs(reader.tokenizer, q, p, 64), "yesno").numpy()
    assert np.allclose(reader.logits("yesno", q, p), want, atol=2e-2)  # fp16 adapters, merged


@pytest.mark.slow  # loads the installed all-mpnet-base-v2 and the packaged MiniLM
def test_int8_only_where_it_keeps_the_bottom_states_close(tmp_path: Path) -> None:
    """Dynamic int8 of mpnet's 10-layer bottom drifts far from the float states (the cause of the first mpnet
    build learning nothing): an mpnet reader on a CPU runs in float32, MiniLM's stays int8."""
    import copy

    import torch
    import transformers

    from medcite.reader.infer import INT8, encode_pairs, int8_safe, quantize_int8, reader_placement

    pairs = (["Aspirin prevents colorectal cancer.", "Is Keutel syndrome common?"],
             ["Aspirin reduced the incidence of colorectal cancer in this trial.", "Keutel syndrome is rare."])
    cos = {}
    for base, at in (("minilm", 4), ("mpnet", 10)):
        net = rm.build_net(base, rm.ReaderSpec(("stance",), base=base, trained_from=at)).eval()
        tok = transformers.AutoTokenizer.from_pretrained(rm.base_dir(base), local_files_only=True)
        enc = {k: v for k, v in encode_pairs(tok, *pairs, 64).items() if k != "offset_mapping"}
        with torch.inference_mode():
            f, g = net.trunk.bottom_states(enc), quantize_int8(copy.deepcopy(net.trunk)).bottom_states(enc)
        m = enc["attention_mask"].bool()
        cos[base] = float(torch.nn.functional.cosine_similarity(f[m], g[m], dim=-1).mean())
    assert cos["minilm"] > 0.9 and cos["mpnet"] < 0.85
    assert int8_safe("minilm") and not int8_safe("mpnet")
    for base in ("minilm", "mpnet"):
        folder = tmp_path / base
        folder.mkdir()
        spec = rm.ReaderSpec(("stance",), base=base)
        (folder / rm.SPEC_FILE).write_text(json.dumps(spec.as_dict()))
        assert (reader_placement(folder, "cpu").note == INT8) == (base == "minilm")
