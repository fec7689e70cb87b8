"""The BioASQ 13b paper presets as their papers state them: PJs-team configs 1-5 (paper 002) and DS@GT runs
b1-b5 (paper 004): budgets, models, prompts and answer post-processing, read from the resolved settings, and
the PJs prompt and answer ensemble built and run on a fake LLM."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings, preset_task
from medcite.presets import provenance
from medcite.qa.answer_json import extract_json
from medcite.qa.llm_qa import LLMQA, combine_answers
from medcite.rerank.ensemble import UnionEnsemble
from medcite.tasks.bioasq_task import build_answerer
from medcite.types import Article, Hit, QAAnswer, Question, Snippet

PJS = [f"pjs-config-{i}" for i in range(1, 6)]
DSGT = [f"dsgt-b{i}" for i in range(1, 6)]
DSGT_CE = "models:dsgt-minilm-l12-ce-bioasq"


@pytest.mark.parametrize("name", PJS + DSGT)
def test_each_run_names_its_paper_and_run(name: str) -> None:
    run = provenance.paper(name)
    assert run is not None and run["file"] == ("002" if name.startswith("pjs") else "004")
    assert run["run"] == (name.removeprefix("pjs-") if name.startswith("pjs") else "DS@GTBioASQT13" + name[-2:])


@pytest.mark.parametrize("name", PJS)
def test_pjs_retrieves_10000_with_e5_base_and_its_prefixes(name: str) -> None:
    s = load_settings(name)
    assert s.retrieve.k == 10000 and [b.backend for b in s.retrieve.branches] == ["dense"]
    assert s.retrieve.branches[0].k == 10000
    enc = s.indexes["dense"].encoder
    assert (enc.model, enc.query_prefix, enc.document_prefix) == ("intfloat/e5-base", "query: ", "passage: ")
    # every reranker reads all 10,000 candidates ("The initially retrieved 10,000 documents were ... reranked")
    assert s.rerank.top_n == 10000 and s.rerank.k == 10
    for member in getattr(s.rerank, "members", []):
        assert member.top_n == 10000
    # snippets: the best abstract sentence of each of the top 10 documents, by MiniLM, best 10
    b = s.bioasq
    assert (b.documents, b.snippets, b.snippet_documents, b.per_document) == (10, 10, 10, 1)
    assert b.scorer == "embedding" and b.encoder.model_names() == [] and not b.include_titles
    # answers: Claude 3 Sonnet, temperature 0.01, PJs' one zero-shot prompt
    assert "claude-3-sonnet" in s.llm.model and s.llm.temperature == 0.01
    assert (s.qa.backend, s.qa.prompt, s.qa.shots, s.qa.style) == ("llm", "pjs", 0, 1)


@pytest.mark.parametrize(("name", "model"), [("pjs-config-1", "nomic-ai/modernbert-embed-base"),
                                             ("pjs-config-2", "thenlper/gte-large"),
                                             ("pjs-config-3", "ibm-granite/granite-embedding-125m-english")])
def test_pjs_single_reranker_configs(name: str, model: str) -> None:
    s = load_settings(name)
    assert s.rerank.backend == "embedding" and s.rerank.model.model == model
    prefixes = (s.rerank.model.query_prefix, s.rerank.model.document_prefix)
    assert prefixes == (("search_query: ", "search document: ") if "modernbert" in model else (None, None))
    assert s.qa.ensemble == []


@pytest.mark.parametrize(("name", "order"), [("pjs-config-4", "max"), ("pjs-config-5", "sum"), ("pjs-ensemble", "max")])
def test_pjs_ensembles_take_the_union_of_each_members_top_5(name: str, order: str) -> None:
    s = load_settings(name)
    assert s.rerank.backend == "ensemble-union" and s.rerank.member_k == 5 and s.rerank.order == order
    assert [m.model.model for m in s.rerank.members] == [
        "nomic-ai/modernbert-embed-base", "thenlper/gte-large", "ibm-granite/granite-embedding-125m-english"]


def test_pjs_config_5_answers_with_claude_3_7_and_3_sonnet() -> None:
    s = load_settings("pjs-config-5")
    assert s.qa.ensemble == ["sonnet37"] and "claude-3-7-sonnet" in s.llms["sonnet37"].model
    assert s.llms["sonnet37"].temperature == 0.01 and s.qa.llm_names() == {None, "sonnet37"}
    assert load_settings("pjs-config-4").qa.ensemble == []


class _Ctx:
    """Builds the qa stage as the pipeline's context does, over fake LLMs by name."""

    def __init__(self, **llms: _Fake) -> None:
        self.llms = llms

    def llm(self, name: str | None, purpose: str = "") -> _Fake:
        return self.llms[name or "default"]

    def build(self, stage: str, cfg: Any) -> LLMQA:
        assert stage == "qa"
        return LLMQA.from_config(cfg, self)  # type: ignore[arg-type]


def test_pjs_config_5_answers_phase_a_plus_with_sonnet_3_alone_and_phase_b_with_the_ensemble() -> None:
    """002 §2.2: "In Phase A+, we employed Claude Sonnet 3"; §4.3: Phase B's config-5 is the "ensemble of Claude
    Sonnet 3.7 and Sonnet 3"."""
    s = load_settings("pjs-config-5")
    assert s.qa.aplus_ensemble == [] and s.qa.ensemble == ["sonnet37"]
    q = Question(id="q", type="yesno", body="Is FSHD inherited?")
    snippets = [Snippet("1", "FSHD is autosomal dominant.")]
    for phase, called in (("aplus", 0), ("b", 1)):
        sonnet3 = _Fake('<JSON>{"ideal_answer": "Yes.", "exact_answer": "yes"}</JSON>')
        sonnet37 = _Fake('<JSON>{"ideal_answer": "No.", "exact_answer": "no"}</JSON>')
        answerer = build_answerer(s, _Ctx(default=sonnet3, sonnet37=sonnet37), phase=phase)  # type: ignore[arg-type]
        got = answerer.answer(q, snippets)
        assert (len(sonnet3.seen), len(sonnet37.seen)) == (1, called), phase
        assert got.exact == "yes"  # a 1-1 tie goes to Claude 3 Sonnet (combine_answers)
    # config-4 has no ensemble: one LLM in both phases
    assert load_settings("pjs-config-4").qa.aplus_ensemble is None


def test_pjs_ensemble_is_an_alias_of_config_4() -> None:
    for alias, run in (("pjs-ensemble", "pjs-config-4"), ("dsgt-ensemble", "dsgt-b3")):
        assert load_settings(alias).model_dump(exclude={"preset"}) == load_settings(run).model_dump(exclude={"preset"})


@pytest.mark.parametrize(("name", "k"), [("dsgt-b1", 1000), ("dsgt-b2", 2000), ("dsgt-b5", 5000)])
def test_dsgt_cross_encoder_runs(name: str, k: int) -> None:
    s = load_settings(name)
    assert s.retrieve.k == k and s.retrieve.branches[0].k == k
    assert s.indexes["dense"].encoder.model == "BAAI/bge-large-en"
    assert s.rerank.backend == "cross-encoder" and s.rerank.top_n == k and s.rerank.k == 10
    assert s.rerank.model == DSGT_CE  # DS@GT's fine-tuned model, trained by medcite (not the hub's base)


def test_dsgt_b4_is_the_cross_encoders_top_30_then_gpt_top_10() -> None:
    s = load_settings("dsgt-b4")
    ce, gpt = s.rerank.stages
    assert s.retrieve.k == 1000 and (ce.backend, ce.top_n, ce.k) == ("cross-encoder", 1000, 30)
    assert (gpt.backend, gpt.top_n, gpt.window, gpt.k) == ("llm-listwise", 30, 30, 10)
    assert s.llm.model == "gpt-4o"


def test_dsgt_b3_is_the_1_to_7_weighted_ensemble() -> None:
    s = load_settings("dsgt-b3")
    ce, ens = s.rerank.stages
    assert (ce.k, ens.backend, ens.k) == (30, "ensemble-weighted", 10)
    assert ens.weights[1] / ens.weights[0] == pytest.approx(7)
    assert [m.backend for m in ens.members] == ["cross-encoder", "llm-listwise"]


@pytest.mark.parametrize("name", DSGT)
def test_dsgt_answers_gpt_4o_1_shot_style_2_with_an_example_drawn_from_the_training_set(name: str) -> None:
    s = load_settings(name)
    assert (s.qa.backend, s.qa.prompt, s.qa.style, s.qa.shots, s.qa.draw) == ("llm", "dsgt", 2, 1, "random")
    assert s.bioasq.encoder.model == "BAAI/bge-large-en"
    # GPTPrompt1sStyle2 is also a preset of its own, with the very same answer settings
    assert s.qa == load_settings("dsgt-b-gpt4-style2").qa and s.llm == load_settings("dsgt-b-gpt4-style2").llm


def test_dsgt_b3_and_b4_rerank_with_the_fine_tuned_cross_encoder_in_every_place() -> None:
    for name in ("dsgt-b3", "dsgt-b4"):
        ce = load_settings(name).rerank.stages[0]
        assert (ce.backend, ce.model) == ("cross-encoder", DSGT_CE)
    members = load_settings("dsgt-b3").rerank.stages[1].members
    assert (members[0].backend, members[0].model) == ("cross-encoder", DSGT_CE)
    # the quote of Table 2 says what the setting now is: the model fine-tuned for 3 epochs
    for name, path in (("dsgt-b1", "rerank.model"), ("dsgt-b3", "rerank.stages.0.model"),
                       ("dsgt-b4", "rerank.stages.0.model")):
        assert "finetuned for 3 epochs" in provenance.sources(name)[path].quote


# -- answer formatting template 2 (004 Fig. 5), verbatim ---------------------------------------------------------
def _fig5(section: str) -> str:
    """The lines of 004 Fig. 5 under ``section`` ("List", "Factoid", "Summary"), whitespace-normalised."""
    text = (provenance.papers_dir() / provenance.PAPERS["004"][0]).read_text(encoding="utf-8")
    fig = text[text.index("Answer Formatting Template 2 (showing key changes from Template 1)"):
               text.index("Figure 5: Answer Formatting Templates.")]
    heads = ["List:", "Factoid:", "Summary:"]
    start = fig.index(f"{section}:") + len(section) + 1
    ends = [fig.index(h) for h in heads if fig.index(h) > start]
    return provenance.normalise(fig[start: min(ends) if ends else len(fig)])


@pytest.mark.parametrize(("prompt", "section"), [("bioasq_rules_list_strict", "List"),
                                                 ("bioasq_rules_factoid_strict", "Factoid"),
                                                 ("bioasq_rules_ideal_strict", "Summary")])
def test_answer_formatting_template_2_is_fig_5_word_for_word(prompt: str, section: str) -> None:
    from medcite.llm.prompts import load_prompt

    (message,) = load_prompt(prompt)
    lead, *template2 = [line for line in message["content"].splitlines() if line.strip()]
    # the lines after template 1's lead are Fig. 5's section, all of it and nothing else, as printed
    assert provenance.normalise(" ".join(template2)) == _fig5(section)
    assert "{" in lead and not any("{" in line for line in template2)  # only the lead has a placeholder
    if section == "List":
        assert "- Note that all phrases, even not complete, are related to the question." in template2


def test_a_style_3_request_with_drawn_examples_is_recognised_by_the_oracle(tmp_path: Path) -> None:
    """The oracle test server (tests/oracle) recognises the verbatim template 2 inside bioasq_answer, after the
    examples, as the question's own request."""
    import json

    from oracle.templates import recognise

    training = tmp_path / "train.json"
    training.write_text(json.dumps({"questions": [
        {"id": f"ex{i}", "type": "list", "body": f"List genes of family {i}.", "ideal_answer": ["Genes."],
         "exact_answer": [["A"], ["B"]], "documents": [], "snippets": [{"document": "9", "text": f"Family {i}."}]}
        for i in range(3)]}))
    from medcite.qa.examples import read_examples

    llm = _Fake('{"exact_answer": ["A"]}')
    qa = LLMQA(llm, style=3, shots=2, draw="random", examples=read_examples(training))  # type: ignore[arg-type]
    q = Question(id="q", type="list", body="List genes mutated in ovarian cancer.")
    got = qa.answer(q, [Snippet("1", "BRCA1 and TP53.")])
    assert len(got.examples) == 2
    found = recognise(llm.seen[0])
    assert found is not None and found.name == "bioasq_answer"
    assert found.values["question"] == q.body
    assert "Note that all phrases, even not complete, are related to the question." in found.values["rules"]


class _Fake:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.seen: list[Any] = []

    def complete(self, messages: Sequence[Any], max_tokens: int | None = None) -> Any:
        self.seen.append(messages)
        reply = self.reply

        class _R:
            text = reply
        return _R()


def test_the_pjs_prompt_is_the_papers_and_its_json_tags_are_read() -> None:
    llm = _Fake('<JSON>\n{"ideal_answer": "FSHD is autosomal dominant.", '
                '"exact_answer": [["autosomal dominant"]]}\n</JSON>')
    qa = LLMQA(llm, prompt="pjs")  # type: ignore[arg-type]
    q = Question(id="q", type="factoid", body="How is FSHD inherited?")
    got = qa.answer(q, [Snippet("1", "FSHD is autosomal dominant."), Snippet("2", "It is common.")])
    assert got.exact == ("autosomal dominant",) and got.ideal == "FSHD is autosomal dominant."
    (system, user), = [llm.seen[0]]
    assert "answer accurately in JSON in <JSON>...</JSON> tags" in system["content"]
    assert user["content"].startswith("Context: 1. FSHD is autosomal dominant.\n2. It is common.\nQuestion: How is")
    assert "Each of the inner list (up to 5 inner lists are allowed)" in user["content"]
    assert len(llm.seen) == 1  # one call: exact and ideal together, zero-shot
    assert extract_json("<JSON> {\"exact_answer\": \"yes\"} </JSON>") == {"exact_answer": "yes"}


def test_combine_answers_rules() -> None:
    def a(exact: Any, ideal: str = "i") -> QAAnswer:
        return QAAnswer("q", exact, ideal)
    assert combine_answers([a("no", "first"), a("yes")], "yesno").exact == "no"  # tie: the first LLM
    assert combine_answers([a("no"), a("yes"), a("yes")], "yesno").exact == "yes"
    assert combine_answers([a(("A", "B")), a(("b", "C"))], "factoid").exact == ("A", "b", "C")
    assert combine_answers([a(("A", "B")), a(("C", "a"))], "list").exact == ("A", "B", "C")
    assert combine_answers([a(("A",), "first"), a(("C",), "second")], "list").ideal == "first"


class _Scores:
    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def rerank(self, query: str, hits: Sequence[Hit], articles: Any, k: int) -> list[Hit]:
        out = sorted((Hit(h.pmid, self.scores[h.pmid]) for h in hits), key=lambda h: -h.score)
        return out[:k]


def test_union_orders_by_rrf_max_or_sum() -> None:
    arts = {p: Article(p, p, "") for p in "abcd"}
    hits = [Hit(p, 1.0) for p in "abcd"]
    m1 = _Scores({"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.0})
    m2 = _Scores({"a": 0.3, "b": 0.5, "c": 0.95, "d": 0.0})
    by = {o: [h.pmid for h in UnionEnsemble([m1, m2], member_k=1, order=o).rerank("q", hits, arts, 10)]  # type: ignore[list-item]
          for o in ("rrf", "max", "sum")}
    assert sorted(by["rrf"]) == ["a", "c"]  # the union of each member's top 1
    assert by["max"] == ["c", "a"] and by["sum"] == ["a", "c"]


def test_pjs_phase_b_with_the_lora_finetuned_qwen() -> None:
    """§2.3: 'Qwen/Qwen2.5-3B-Instruct' fine-tuned with LoRA, served by vLLM, the PJs prompt over the gold snippets
    at temperature 0.01; an OpenAI-compatible client to vLLM under the adapter's name, zero-shot."""
    s = load_settings("pjs-qwen-lora")
    assert provenance.paper("pjs-qwen-lora") == {"file": "002", "run": "phase-b-qwen2.5-3b-lora"}
    assert preset_task("pjs-qwen-lora") == "bioasq"  # the output snapshot's hand list used to miss it
    assert (s.llm.backend, s.llm.model, s.llm.temperature) == ("openai", "pj-mathematician/bioasq-task13B", 0.01)
    assert (s.qa.backend, s.qa.prompt, s.qa.shots, s.qa.style, s.qa.ensemble) == ("llm", "pjs", 0, 1, [])
    sources = provenance.sources("pjs-qwen-lora")
    assert "pj-mathematician/bioasq-task13B" in sources["llm.model"].quote and "vLLM" in sources["llm.backend"].quote
