"""Question types by rules and key concepts by word rarity (medcite.evidence.concepts)."""

from __future__ import annotations

import pytest

from medcite.evidence.concepts import is_rare, key_concepts, mentions, missing_concepts, question_type

pytest.importorskip("wordfreq")


@pytest.mark.parametrize(("question", "expected"), [
    ("Is pembrolizumab effective against Ewing's sarcoma?", "yesno"),
    ("Does radiotherapy for cervical cancer increase risk of colon cancer?", "yesno"),
    ("Has ProSavin undergone phase IV clinical trials by 2018?", "yesno"),
    ("In adults with type 2 diabetes, does metformin lower mortality?", "yesno"),
    ("Should istiratumab be used for pancreatic cancer?", "yesno"),
    ("List four features of the WHIM syndrome.", "list"),
    ("Which drugs are included in the EE-4A regimen for Wilm's tumor?", "list"),
    ("What are the main symptoms of scurvy?", "list"),
    ("Which company produces ORMD-0801?", "factoid"),
    ("How many genes are in the human genome?", "factoid"),
    ("Who discovered penicillin?", "factoid"),
    ("What is the role of BRCA1 in DNA repair?", "summary"),
    ("How does aspirin inhibit platelets?", "summary"),
    ("Describe the mechanism of CRISPR interference.", "summary"),
    ("Unlike DNA, RNA is not methylated, yes or no?", "yesno"),
    # yes/no questions written as article titles (PubMedQA): after a title clause, or with no wh-word at all
    ("Quality of life in lung cancer patients: does socioeconomic status matter?", "yesno"),
    ("Fast foods - are they a risk factor for asthma?", "yesno"),
    ("Multidisciplinary breast cancer clinics. Do they work?", "yesno"),
    ("After CLASS--Is a voluntary public insurance program a realistic way to meet needs?", "yesno"),
    ("Necrotizing fasciitis: an indication for hyperbaric oxygenation therapy?", "yesno"),
    ("Scurvy in adults: what are its first signs?", "list"),
    ("Please list the difference between pyoderma gangrenosum and venous ulcers?", "summary"),
    ("COVID-19 and smell: how does the virus reach the olfactory bulb?", "summary"),
])
def test_question_type_rules(question: str, expected: str) -> None:
    assert question_type(question) == expected


def test_key_concepts_are_the_rare_and_name_like_words() -> None:
    assert key_concepts("Does zorbalene infusion reverse quellitis in adults?") == ["zorbalene", "quellitis"]
    assert key_concepts("Which company produces ORMD-0801?") == ["ORMD-0801"]
    # an acronym common in English is not a key concept; a gene name with digits is
    assert key_concepts("Has the companion diagnostic HercepTest received FDA approval?") == ["HercepTest"]
    assert key_concepts("Is BRCA1 mutated in breast cancer?") == ["BRCA1"]
    assert key_concepts("Is long-term use of the drug safe for the heart?") == []
    assert not is_rare("the") and not is_rare("patients") and is_rare("IL-6")
    assert key_concepts("Does atemoya juice inhibit tye CYP3A4 enzyme?") == ["atemoya", "CYP3A4"]  # "tye": a typo


def test_mentions_forgive_inflections_and_typos_but_not_short_names() -> None:
    vocab = {"methylation", "pembrolisumab", "il6", "ewing", "sarcoma"}
    assert mentions("methylate", vocab)  # same stem
    assert mentions("pembrolizumab", vocab)  # one letter off, ratio >= 0.85
    assert mentions("Ewing's sarcoma", vocab)  # the possessive is not part of the name
    assert not mentions("IL7", vocab)  # short names must match exactly
    assert not mentions("zorbalene", vocab)
    from medcite.evidence.concepts import _norm_tokens

    text = _norm_tokens("ACE (angiotensin converting enzyme) inhibitors, long COVID and tele-genetics")
    assert mentions("angiotensin-converting-enzyme", text) and mentions("long-COVID", text)
    assert mentions("telegenetics", text)  # the closed form of a hyphenated word
    assert not mentions("long-QT", text)
    # a compound naming how its head acts names the head: "FTO-guided" is about FTO
    mediated = _norm_tokens("the FTO-mediated m6A modification in GADD45B mRNA")
    assert mentions("FTO-guided", mediated) and mentions("FTO-guided demethylation", _norm_tokens("FTO demethylation"))
    assert not mentions("METTL3-guided", mediated)


def test_missing_concepts_against_texts_and_the_corpus() -> None:
    texts = ["Zorbalene was given to 40 adults.", "Quelling of inflammation was observed."]
    assert missing_concepts(["zorbalene", "quellitis"], texts) == ["quellitis"]
    assert missing_concepts(["zorbalene quellitis"], []) == ["zorbalene", "quellitis"]
    # the corpus holds what retrieval missed: not reported missing
    assert missing_concepts(["quellitis"], texts, in_corpus=lambda w: w == "quellitis") == []
    assert missing_concepts(["quellitis"], texts, in_corpus=lambda w: False) == ["quellitis"]


@pytest.mark.parametrize(("question", "expected"), [
    ("Are COVID-19 survivors at risk of anxiety and depression?", ["COVID-19", "survivors"]),
    ("Does relaxation therapy lower blood pressure in essential hypertension?", ["relaxation"]),  # generic head
    ("Is perampanel effective for ALS?", ["perampanel"]),
    ("Is hemoglobin antimicrobial?", ["hemoglobin"]),  # the predicate is not the subject
    ("Does TIMELESS-TIPIN participate in replisome disassembly?", ["TIMELESS-TIPIN"]),
    ("Is the expression of miR-21 increased in breast cancer?", ["miR-21"]),
    ("Does aspirin reduce the risk of myocardial infarction?", ["aspirin"]),
    ("Are there any drugs for ALS?", None),  # no subject phrase: the key concepts decide
    ("Necrotizing fasciitis in adults: is hyperbaric oxygen effective?", ["hyperbaric"]),  # after a title clause
    ("Fast foods - are they a risk factor for asthma?", None),  # a pronoun: the key concepts decide
    # after a title clause the clause's common words are no subject ("matter" is no topic)
    ("Quality of life in lung cancer patients: does socioeconomic status matter?", None),
    ("What are the neurological manifestations of COVID-19?", None),
])
def test_the_subject_of_a_yes_no_question(question: str, expected: list[str] | None) -> None:
    from medcite.evidence.concepts import subject_phrase

    assert subject_phrase(question) == expected


def test_the_key_entity_is_no_participle_and_a_double_dash_parts_words() -> None:
    from medcite.evidence.concepts import key_entity, predicate_words, rarity_coverage, tokens

    # the rarest word, but an "underrecognized cause" names no entity; "oxaliplatin-induced" names oxaliplatin
    assert key_entity("Orthostatic myoclonus: an underrecognized cause of unsteadiness?") == ["unsteadiness"]
    assert key_entity("What is the most effective drug for oxaliplatin-induced neuropathy?") == ["oxaliplatin"]
    assert key_entity("Does zorbalene infusion reverse quellitis in adults?") == ["zorbalene"]
    assert tokens("After CLASS--Is a program") == ["After", "CLASS", "Is", "a", "program"]
    assert "they" not in predicate_words("Fast foods - are they a risk factor for asthma?")
    # naming the rare words of a question counts more than naming its common ones
    q = ["binge", "drinking", "pregnancy", "increase", "psychomotor", "deficits"]
    rare_named = rarity_coverage(q, "Binge drinking in pregnancy and psychomotor deficits")
    common_named = rarity_coverage(q, "Drinking did not increase in pregnancy")  # half the words, the common ones
    assert rare_named > 0.8 > 0.5 > common_named
    assert rarity_coverage([], "anything") == 1.0


def test_the_topic_guard_words_and_what_a_question_asks() -> None:
    from medcite.evidence.concepts import coverage, guard_words, on_topic, predicate_words

    assert guard_words("Which syndromes are caused by LAMA1 mutations?") == (["LAMA1"], True)
    assert guard_words("Describe the N6-methyladenosine RNA modification in AML") == (
        ["N6-methyladenosine", "AML"], True)
    assert guard_words("What is the brand name for erenumab?") == (["erenumab"], False)
    words, every = guard_words("Are COVID-19 survivors at risk of anxiety and depression?")
    nurses = "Anxiety and depression were higher in nurses working with COVID-19 patients."
    assert not on_topic(words, nurses, "Anxiety among hospital nurses", every=every)
    assert on_topic(words, "Anxiety was common among survivors.", "Mental health after COVID-19", every=every)
    assert predicate_words("Is hemoglobin antimicrobial?") == ["antimicrobial"]
    assert coverage(["antimicrobial"], "Hemoglobin peptides were antimicrobial.") == 1.0
    assert coverage(["antimicrobial"], "Hemoglobin migrates on acetate.") == 0.0
