"""The viewer's pages render what the run files hold (TestClient, no browser)."""

from __future__ import annotations

import re
from pathlib import Path

from viewer_runs import ABSTRACT, SECOND


def test_fixture_offsets_are_what_the_tests_assume() -> None:
    assert ABSTRACT[31:75] == SECOND


def test_index_lists_runs_with_counts_preset_and_validation(runs_dir: Path, client_for) -> None:
    r = client_for(runs_dir).get("/")
    assert r.status_code == 200
    html = r.text
    assert 'href="/run/alpha"' in html and 'href="/run/beta"' in html
    row = re.search(r'<tr data-search="beta[^"]*" data-preset="clac25-a" data-status="invalid">(.*?)</tr>', html, re.S)
    assert row, "beta row with preset and validation state"
    assert '<td class="num">2</td>' in row.group(1)  # two topics
    assert 'data-preset="offline" data-status="not validated"' in html


def test_run_page_lists_topics_with_filters_data(runs_dir: Path, client_for) -> None:
    html = client_for(runs_dir).get("/run/beta").text
    assert 'data-search="t1 do statins prevent heart attacks?" data-status="invalid" data-dropped="1"' in html
    assert 'data-search="t2 second question?" data-status="valid" data-dropped="0"' in html
    assert "topic t1: too many words" in html  # validation errors shown
    assert "rouge.r2" in html and "0.2500" in html  # metrics.json flattened
    assert 'href="/compare?runs=beta&amp;runs=alpha"' in html


def test_run_page_applies_filters_from_the_permalink(runs_dir: Path, client_for) -> None:
    html = client_for(runs_dir).get("/run/alpha?q=second").text
    assert re.search(r'data-search="t1 [^"]*"[^>]* hidden>', html)
    assert not re.search(r'data-search="t2 [^"]*"[^>]* hidden>', html)
    html = client_for(runs_dir).get("/run/alpha?dropped=1").text
    assert re.search(r'data-search="t2 [^"]*"[^>]* hidden>', html)


def test_topic_page_shows_answer_chips_evidence_and_abstract(runs_dir: Path, client_for) -> None:
    r = client_for(runs_dir).get("/run/alpha/topic/t1")
    assert r.status_code == 200
    html = r.text
    assert "Do statins prevent heart attacks?" in html and "A patient asks." in html
    assert 'id="s1"' in html and 'id="s2"' in html
    # sentence 2 cites 111 (evidence 1) and 222 (evidence 2, contradicts)
    chip = re.search(r'<a class="chip st-contradicts" href="#pmid-222" data-pmid="222" data-evidence="2"', html)
    assert chip
    assert 'href="#pmid-111" data-pmid="111" data-evidence="1"' in html
    # the abstract panel source: article with the evidence span highlighted exactly
    art = re.search(r'<article class="abstract" id="pmid-111".*?</article>', html, re.S)
    assert art
    assert f'<mark class="ev" data-evidence="1" title="evidence [1]">{SECOND}</mark>' in art.group(0)
    assert "https://pubmed.ncbi.nlm.nih.gov/111/" in art.group(0)
    assert "Lancet" in art.group(0) and "2020" in art.group(0)
    assert 'href="https://doi.org/10.1/x"' in art.group(0)
    assert "BACKGROUND" in art.group(0) and "RESULTS" in art.group(0)
    assert '<a href="#s1">s1</a> supports' in art.group(0)
    # title span of 222
    assert '<mark class="ev" data-evidence="2" title="evidence [2]">Second paper</mark>' in html
    # evidence table: branches and rerank ranks, cited-in sentences
    ev1 = re.search(r'<tr id="ev-1">.*?</tr>', html, re.S).group(0)
    assert "q0" in ev1 and "q1" in ev1 and 'href="#s1"' in ev1 and 'href="#s2"' in ev1
    assert re.search(r'<td class="num">2</td>', ev1)  # rank 2 in rerank.trec
    assert '<th class="num">Rank</th>' not in html  # no evidence item carries its own rank
    assert "index not in evidence" in html  # dropped with reason
    assert "statin LDL" in html and "reformulation" in html  # queries
    assert "LLM said" in html and "Answer please" in html  # trace
    assert "generate attempt 2</span>" in html  # a call's loop label beside its stage (attempt, round, hop)
    assert "generate_s" in html


def test_topic_without_evidence_or_trace_still_renders(runs_dir: Path, client_for) -> None:
    html = client_for(runs_dir).get("/run/alpha/topic/t2").text
    assert "No evidence recorded" in html and "No LLM calls" in html
    assert "Cited but missing from articles.jsonl: 222" in html


def test_unknown_topic_and_run_are_404(runs_dir: Path, client_for) -> None:
    c = client_for(runs_dir)
    assert c.get("/run/alpha/topic/nope").status_code == 404
    assert c.get("/run/gamma").status_code == 404
    assert c.get("/run/gamma/topic/t1").status_code == 404


def test_compare_topic_marks_shared_and_unique_pmids(runs_dir: Path, client_for) -> None:
    r = client_for(runs_dir).get("/compare", params=[("runs", "alpha"), ("runs", "beta"), ("topic", "t1")])
    assert r.status_code == 200
    html = r.text
    # alpha cites {111, 222}, beta cites {111, 333}: 111 shared, 222 and 333 unique
    assert re.search(r'class="chip shared[^"]*" href="/run/alpha/topic/t1#pmid-111"', html)
    assert re.search(r'class="chip unique[^"]*" href="/run/alpha/topic/t1#pmid-222"', html)
    assert re.search(r'class="chip unique[^"]*" href="/run/beta/topic/t1#pmid-333"', html)
    assert "map10" in html and "0.7500" in html  # per-topic metric of beta


def test_compare_runs_table(runs_dir: Path, client_for) -> None:
    html = client_for(runs_dir).get("/compare?runs=alpha&runs=beta").text
    # both runs: t1 has 3 + 3 words = 6 ... answer words are 3 ("Statins lower LDL.") + 3 = 6; t2 has 1
    assert re.search(r"<th>Avg words</th><td class=\"num\">3\.5</td><td class=\"num\">3\.5</td>", html)
    # citations: t1 has 1 + 2 = 3, t2 has 1 -> 2.00
    assert re.search(r"<th>Avg citations</th><td class=\"num\">2\.00</td>", html)
    # shared (topic, PMID) pairs: t1/111 and t2/<222 vs 333 differ> -> 1; unique: t1/222 + t2/222 for alpha
    assert '<span class="chip shared">1</span>' in html
    assert '<span class="chip unique">2</span>' in html
    assert 'href="/compare?runs=alpha&amp;runs=beta&amp;topic=t1"' in html
    assert "rouge.r2" in html


def test_compare_needs_two_known_runs(runs_dir: Path, client_for) -> None:
    c = client_for(runs_dir)
    assert c.get("/compare?runs=alpha").status_code == 400
    assert c.get("/compare?runs=alpha&runs=nope").status_code == 404
    assert c.get("/compare?runs=alpha&runs=beta&topic=zzz").status_code == 404


def test_static_assets_are_served(runs_dir: Path, client_for) -> None:
    c = client_for(runs_dir)
    assert "chip" in c.get("/static/viewer.css").text
    assert "showAbstract" in c.get("/static/viewer.js").text


def test_a_retracted_article_is_marked_on_its_citation_chip_and_its_abstract(tmp_path: Path, client_for) -> None:
    """Issue 16 item 3: a retracted record is marked RETRACTED wherever the viewer shows it."""
    from viewer_runs import write_run

    write_run(tmp_path / "runs" / "gamma", retracted=True)
    html = client_for(tmp_path / "runs").get("/run/gamma/topic/t1").text
    chip = re.search(r'<a class="chip[^"]*" href="#pmid-222"[^>]*>(.*?)</a>', html, re.S)
    assert chip and "RETRACTED" in chip.group(1)
    assert 'title="PMID 222 (RETRACTED)' in html
    other = re.search(r'<a class="chip[^"]*" href="#pmid-111"[^>]*>(.*?)</a>', html, re.S)
    assert other and "RETRACTED" not in other.group(1)
    art = re.search(r'<article class="abstract" id="pmid-222".*?</article>', html, re.S)
    assert art and "RETRACTED" in art.group(0)


def test_stance_pills_show_the_checks_probability_and_the_passage_it_judged(tmp_path: Path, client_for) -> None:
    import json

    from viewer_runs import write_run

    run = write_run(tmp_path / "runs" / "r")
    checks = [
        # sentence 1 cites 111 (answers.jsonl: supports), judged on ABSTRACT[0:30]
        {"sentence": 0, "pmid": "111", "stance": "supports", "scores": {"supports": 0.875, "contradicts": 0.1},
         "span": ["abstract", 0, 30], "kept": True, "reason": ""},
        # sentence 2 cites 222 as contradicts, but this check says neutral: its numbers are not lent to the pill
        {"sentence": 1, "pmid": "222", "stance": "neutral", "scores": {"neutral": 0.6}, "span": ["title", 0, 6],
         "kept": False, "reason": "neutral"},
    ]
    (run / "verification.jsonl").write_text(json.dumps({"topic_id": "t1", "citations": {"checks": checks}}) + "\n")
    html = client_for(tmp_path / "runs").get("/run/r/topic/t1").text
    art = re.search(r'<article class="abstract" id="pmid-111".*?</article>', html, re.S).group(0)
    assert ('<span class="stance-pill st-supports" title="P(supports) = 0.88; judged on: '
            f'{ABSTRACT[0:30]}"><a href="#s1">s1</a> supports <span class="p">0.88</span></span>') in art
    assert f"<dt>s1 judged on</dt><dd>{ABSTRACT[0:30]}</dd>" in art
    other = re.search(r'<article class="abstract" id="pmid-222".*?</article>', html, re.S).group(0)
    assert '<span class="stance-pill st-contradicts"><a href="#s2">s2</a> contradicts</span>' in other
    assert "judged on" not in other


def test_stance_check_passage_is_escaped_and_bad_spans_are_ignored(tmp_path: Path, client_for) -> None:
    import json

    from viewer_runs import write_run

    payload = '"><script>alert(1)</script>'
    run = write_run(tmp_path / "runs" / "r", extra_text=payload)
    title = f"Statin trial{payload}"

    def page_with(check: dict) -> str:
        (run / "verification.jsonl").write_text(
            json.dumps({"topic_id": "t1", "citations": {"checks": [check]}}) + "\n")
        r = client_for(tmp_path / "runs").get("/run/r/topic/t1")
        assert r.status_code == 200 and "<script>alert(1)" not in r.text
        return r.text

    # a score that is not a number is not shown; the passage (from the title here) is shown escaped
    html = page_with({"sentence": 0, "pmid": "111", "stance": "supports", "scores": {"supports": "high"},
                      "span": ["title", 0, len(title)]})
    assert ('<a href="#s1">s1</a> supports</span>' in html
            and "<dd>Statin trial&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</dd>" in html)
    # a span outside the text, or naming no known section, shows no passage
    for span in (["title", 0, 10_000], ["body", 0, 5], "abstract", ["abstract", 5, 2]):
        html = page_with({"sentence": 0, "pmid": "111", "stance": "supports", "scores": {"supports": 0.5},
                          "span": span})
        assert "judged on" not in html and '<span class="p">0.50</span>' in html


def test_lead_sentences_verdict_and_abstention_round_trip_and_show(tmp_path: Path, client_for) -> None:
    """Issue 24: the answer-first generator's lead sentences and answer fields reach the run files and the page."""
    from medcite.config import Settings
    from medcite.rundir import RunWriter, read_answers
    from medcite.types import Answer, AnswerSentence, Evidence, Topic

    run = tmp_path / "runs" / "lead"
    w = RunWriter(run, Settings(preset="offline"), command="medcite run test", resume=False)
    ev = [Evidence(1, "111", "Statins lowered LDL cholesterol in older adults.", "abstract", 0, 48, score=0.9)]
    yes = Answer("t1", [AnswerSentence("Yes.", ("111",), (1,), kind="verdict"),
                        AnswerSentence("Statins lowered LDL cholesterol in older adults.", ("111",), (1,))],
                 [], "extractive-qa", question_type="yesno", verdict="yes")
    no_article = Answer("t2", [AnswerSentence("The corpus holds no article about zorbalene.", kind="abstain")], [],
                        "extractive-qa", question_type="yesno", abstained=True)
    unsettled = Answer("t3", [AnswerSentence("The retrieved abstracts do not settle this.", kind="verdict"),
                              AnswerSentence("Statins lowered LDL cholesterol in older adults.", ("111",), (1,))],
                       [], "extractive-qa", question_type="yesno", verdict="unsettled")
    w.write_topic(Topic("t1", "Do statins lower LDL?"), queries=[], rankings={}, evidence=ev, answer=yes,
                  articles=[], timings={})
    w.write_topic(Topic("t2", "Does zorbalene cure quellitis?"), queries=[], rankings={}, evidence=[],
                  answer=no_article, articles=[], timings={})
    w.write_topic(Topic("t3", "Do statins lower triglycerides?"), queries=[], rankings={}, evidence=ev,
                  answer=unsettled, articles=[], timings={})
    undecided = Answer("t4", [AnswerSentence("The findings below bear on this, but medcite's reader is not sure "
                                             "enough to say yes or no.", kind="verdict"),
                              AnswerSentence("Statins lowered LDL cholesterol in older adults.", ("111",), (1,))],
                       [], "extractive-qa", question_type="yesno", verdict="undecided")
    w.write_topic(Topic("t4", "Do statins lower LDL cholesterol?"), queries=[], rankings={}, evidence=ev,
                  answer=undecided, articles=[], timings={})
    w.close()
    back = {a.topic_id: a for a in read_answers(run)}
    assert set(back) == {"t1", "t2", "t3", "t4"}
    assert back["t1"].verdict == "yes" and back["t1"].question_type == "yesno" and not back["t1"].abstained
    assert [s.kind for s in back["t1"].sentences] == ["verdict", ""]
    assert back["t2"].abstained and back["t2"].sentences[0].kind == "abstain" and back["t2"].sentences[0].pmids == ()
    client = client_for(tmp_path / "runs")
    page = client.get("/run/lead/topic/t1").text
    assert "verdict: yes" in page and '<span class="lead verdict"' in page
    assert "verdict · decided by</span>" in page  # the evidence the verdict cites is what decides it
    page2 = client.get("/run/lead/topic/t2").text
    assert "abstained" in page2 and "no citation (abstention)" in page2
    page3 = client.get("/run/lead/topic/t3").text
    assert "no citation: no retrieved sentence settles it" in page3 and "decided by" not in page3
    assert back["t3"].verdict == "unsettled"
    page4 = client.get("/run/lead/topic/t4").text  # the quote settles it for the reader, which cannot tell which way
    assert "no citation: the reader cannot tell which way the findings below go" in page4
    assert "settles it" not in page4 and back["t4"].verdict == "undecided"


def test_query_stages_and_notes_reach_the_run_files_and_the_page(tmp_path: Path, client_for) -> None:
    """Issue 32: a run whose branch selects a stage that produced nothing searches the question and says so in the
    run directory (queries.jsonl ``notes``), which ``rundir_read`` and the topic page show; a query two stages
    produced names both."""
    from medcite.config import load_settings
    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.pipeline import Pipeline
    from medcite.rundir import read_answers, read_notes, read_queries
    from medcite.types import Article, Query, Topic

    store = DocumentStore.create(tmp_path / "store")
    with store.transaction() as tx:
        tx.upsert([Article("11", "Statins lower LDL cholesterol", "Statin therapy lowers LDL cholesterol."),
                   Article("12", "Aspirin for headache", "Aspirin relieves tension headache.")], FileStats("t"))
    store.close()
    settings = load_settings("offline", ["generate.backend=extractive", "evidence.backend=snippets",
                                         'retrieve.queries=["original", "keywords"]',
                                         'retrieve.branches=[{"backend": "bm25", "queries": ["reformulation"]}]'])
    run = tmp_path / "runs" / "noted"
    with Pipeline(settings, tmp_path / "store") as pipeline:
        pipeline.run([Topic("t1", "Do statins lower LDL cholesterol?"), Topic("t2", "statins")], run)
    assert [a.topic_id for a in read_answers(run) if a.sentences] == ["t1", "t2"]  # answered, never stopped
    notes = read_notes(run)
    assert set(notes) == {"t1", "t2"} and "branch bm25" in notes["t1"][0] and "['reformulation']" in notes["t1"][0]
    # t2's keyword query is its question: one query, in both stages
    assert read_queries(run)["t2"] == [Query("q0", "statins", "original", ("keywords",))]
    page = client_for(tmp_path / "runs").get("/run/noted/topic/t2").text
    assert "original + keywords" in page
    assert "it searched the question (q0) instead" in page


def test_the_top_articles_read_reach_evidence_jsonl_and_the_page_with_why_one_was_rejected(
        tmp_path: Path, client_for) -> None:
    """Issue 41: the evidence selector reads the top three articles; one it cannot use is recorded in
    evidence.jsonl with the reason, and the topic page lists them."""
    import json

    from medcite.config import load_settings
    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.pipeline import Pipeline
    from medcite.types import Article, Topic

    store = DocumentStore.create(tmp_path / "store")
    with store.transaction() as tx:
        tx.upsert([Article("11", "Statins lower LDL cholesterol in adults",
                           "Statin therapy lowered LDL cholesterol by 40% in adults with diabetes."),
                   Article("12", "Statins and LDL: a registry report", "Statins. LDL. Registry."),
                   Article("13", "LDL cholesterol targets", "Statins reduced LDL cholesterol in older adults with "
                                                            "heart disease over five years.")], FileStats("t"))
    store.close()
    settings = load_settings("offline", ["generate.backend=extractive"])
    run = tmp_path / "runs" / "read"
    with Pipeline(settings, tmp_path / "store") as pipeline:
        pipeline.run([Topic("t1", "Do statins lower LDL cholesterol?")], run)
    row = json.loads((run / "evidence.jsonl").read_text().splitlines()[0])
    read = {r["pmid"]: r for r in row["read"]}
    assert set(read) == {"11", "12", "13"}
    assert read["12"]["status"] == "rejected" and "no quotable sentence" in read["12"]["reason"]
    assert all(read[p]["status"] == "evidence" for p in ("11", "13"))
    page = client_for(tmp_path / "runs").get("/run/read/topic/t1").text
    assert "Top articles read" in page and "no quotable sentence" in page
