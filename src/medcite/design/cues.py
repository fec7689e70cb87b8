"""The words of a title or abstract that say what kind of study it reports (the rules of :mod:`.rules`).

Each design has cues in the title and cues in the abstract, tried in order of precedence (a meta-analysis of
randomised trials is a meta-analysis; a randomised trial that reports its cases is a trial). The cues were written
on the development part of the records in ``benchmarks/bench_design.py`` (real NLM records with their indexing
hidden) and are measured on the held-out part; where a cue fires, its text becomes the label's ``cue``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..types import (
    ANIMAL,
    CASE_REPORT,
    CLINICAL_TRIAL,
    COHORT,
    CROSS_SECTIONAL,
    GUIDELINE,
    HUMANS,
    IN_VITRO,
    META_ANALYSIS,
    NARRATIVE_REVIEW,
    RCT,
)

_NUM = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[1-9])"
_PEOPLE = (r"(?:cases?|patients?|wom[ae]n|m[ae]n|boys?|girls?|infants?|child|children|families|family|siblings|"
           r"brothers|sisters|neonates?|newborns?|twins|kindreds?|adolescents?|examples|instances|persons?)")
_AGE = r"\d+[- ](?:year|yr|month|week|day)s?[- ]old"


@dataclass(frozen=True, slots=True)
class Scan:
    """The words of a title and of an abstract (lower case, letters and digits), read once per article."""

    title: tuple[str, ...]
    abstract: tuple[str, ...]
    title_set: frozenset[str]
    abstract_set: frozenset[str]


_TOKEN = re.compile(r"[a-z0-9]+")


def scan(title: str, abstract: str) -> Scan:
    """The words of the title and the abstract (what every rule's ``needles`` are tested against)."""
    t, a = tuple(_TOKEN.findall(title.lower())), tuple(_TOKEN.findall(abstract.lower()))
    return Scan(t, a, frozenset(t), frozenset(a))


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern and the words of which the text must hold one before the pattern is tried: every match of the
    pattern holds one of them, and most abstracts hold none (labelling stays a few set tests per article)."""

    pattern: re.Pattern[str]
    needles: frozenset[str]

    def search(self, text: str, words: frozenset[str], tokens: tuple[str, ...]) -> str | None:
        if self.needles.isdisjoint(words):
            return None
        m = self.pattern.search(text)
        return m.group(0) if m else None


@dataclass(frozen=True, slots=True)
class Words:
    """Words of a list named at least ``count`` times (an animal named twice in an abstract, not once in passing)."""

    words: frozenset[str]
    count: int

    def search(self, text: str, words: frozenset[str], tokens: tuple[str, ...]) -> str | None:
        if self.words.isdisjoint(words):
            return None
        found = [w for w in tokens if w in self.words]
        return ", ".join(dict.fromkeys(found)) if len(found) >= self.count else None


def _r(pattern: str, *needles: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), frozenset(needles))


@dataclass(frozen=True, slots=True)
class Cue:
    """The rules that name one label in the title and in the abstract."""

    label: str
    title: tuple[Rule | Words, ...]
    abstract: tuple[Rule | Words, ...]

    def find(self, title: str, abstract: str, scanned: Scan | None = None) -> str | None:
        """The text that fired (title first), or None. ``scanned``: the words of the title and abstract
        (:func:`scan`), when the caller has them already."""
        sc = scanned or scan(title, abstract)
        for rules, text, words, tokens in ((self.title, title, sc.title_set, sc.title),
                                           (self.abstract, abstract, sc.abstract_set, sc.abstract)):
            if not text:
                continue
            for rule in rules:
                found = rule.search(text, words, tokens)
                if found is not None:
                    return found
        return None


_META = ("meta", "metaanalysis", "metaanalyses", "metaanalytic", "metaregression")
_SYSTEMATIC = ("systematic", "systematical")
META_CUE = Cue(
    META_ANALYSIS,
    (_r(r"\bmeta-?analy|\bmeta-?regression", *_META),
     _r(r"\bsystematic(?:al)?\s+(?:literature\s+)?review|\bumbrella review", *_SYSTEMATIC, "umbrella"),
     _r(r"\bpooled analysis\b", "pooled")),
    (_r(r"\b(?:this|a|we|our|the present)\s+(?:\w+\s+){0,3}(?:meta-?analys[ie]s|systematic(?:al)?\s+"
        r"(?:literature\s+)?review)", *_META, *_SYSTEMATIC),
     _r(r"\bsystematic(?:al)?\s+(?:literature\s+)?(?:search|review)\w*\s+(?:of|was|were|in|using|through|across|on)\b",
        *_SYSTEMATIC),
     _r(r"\bsystematically\s+(?:searched|reviewed|identified)", "systematically"),
     _r(r"\bPRISMA\b", "prisma"),
     _r(r"\bmeta-?analys[ie]s\s+(?:was|were)\s+(?:performed|conducted|carried)", *_META)),
)
GUIDELINE_CUE = Cue(
    GUIDELINE,
    (_r(r"\bguidelines?\b", "guideline", "guidelines"),
     _r(r"\bconsensus (?:statement|conference|recommendations?)", "consensus"),
     _r(r"\bposition (?:statement|paper)", "position"),
     _r(r"\bpractice parameter|\bexpert panel|\brecommendations\s+(?:for|of|from|on)\b", "parameter", "panel",
        "recommendations")),
    (),
)
_RANDOMISED = ("randomized", "randomised", "randomization", "randomisation")
RCT_CUE = Cue(
    RCT,
    (_r(r"\brandomi[sz]ed\b", *_RANDOMISED),),
    (_r(r"\brandomly\s+(?:assigned|allocated|divided|distributed|selected to receive)", "randomly"),
     _r(r"\b(?:were|was)\s+(?:\w+\s+)?randomi[sz]ed\b|\brandomi[sz]ation\b|\brandomi[sz]ed\s+(?:in|into|to)\b|"
        r"\brandomi[sz]ed\s+(?:controlled|clinical|double|single|placebo|trial|study|crossover|cross-over|"
        r"prospective|comparative|open|multicent|parallel|pilot)", *_RANDOMISED),
     _r(r"\bat random\s+(?:to|into)\b|\bin (?:a )?random(?:i[sz]ed)? order\b", "random", *_RANDOMISED)),
)
_TRIAL = (_r(r"\bdouble[- ]blind", "blind", "blinded"), _r(r"\bplacebo[- ]controlled", "placebo"),
          _r(r"\b(?:clinical|controlled) trial\b", "trial"),
          _r(r"\bphase\s+(?:I{1,3}|IV|[1-4])\s+(?:trial|study)\b", "phase"), _r(r"\bopen[- ]label\b", "label"))
TRIAL_CUE = Cue(CLINICAL_TRIAL, _TRIAL, _TRIAL)
_PEOPLE_WORDS = ("case", "cases", "patient", "patients", "woman", "women", "man", "men", "boy", "boys", "girl", "girls",
                 "infant", "infants", "child", "children", "families", "family", "siblings", "brothers", "sisters",
                 "neonate", "neonates", "newborn", "newborns", "twins", "kindred", "kindreds", "adolescent",
                 "adolescents", "examples", "instances", "person", "persons", "adult", "adults")
_VERBS = ("report", "reports", "reported", "reporting", "describe", "describes", "described", "describing", "present",
          "presents", "presented", "presenting", "presentation", "document", "documents", "documented",
          "documenting")
CASE_CUE = Cue(
    CASE_REPORT,
    (_r(r"\bcase (?:reports?|series)\b", "case"),
     _r(r"\b(?:a|one|two|three|four|five|unusual|rare|single)\s+(?:\w+\s+){0,2}cases?\b(?! study| studies|-control)|"
        r"(?<!the )\bcase of\b", "case", "cases"),
     _r(r"\bin (?:a|an|one|two|three|identical|monozygotic)\s+(?:\w+[- ]){0,3}(?:patients?|m[ae]n|wom[ae]n|boys?|"
        r"girls?|infants?|child|neonates?|newborns?|brothers|sisters|siblings|family|twins|adults?|adolescents?)\b",
        *_PEOPLE_WORDS),
     _r(r"\ba\s+(?:\w+\s+)?(?:patient|man|woman|boy|girl|infant|child)\s+with\b", "with")),
    (_r(rf"\b(?:we|the authors?|this (?:paper|report|article))\s+(?:\w+\s+)?(?:report|describe|present|document)\w*"
        rf"\s+(?:\w+\s+){{0,3}}{_NUM}\s+(?:\w+\s+){{0,4}}{_PEOPLE}\b", *_VERBS),
     _r(rf"\b{_NUM}\s+(?:[\w'-]+\s+){{0,4}}{_PEOPLE}\s+(?:[^.;]{{0,120}}?\s)?(?:is|are|was|were|has been|have been)\s+"
        rf"(?:\w+\s+)?(?:reported|described|presented|illustrated)\b", "reported", "described", "presented",
        "illustrated"),
     _r(r"\b(?:case|patient)\s+(?:is|was)\s+(?:reported|described|presented)|\bcase (?:reports?|presentation)\b",
        "case", "patient"),
     _r(rf"\b(?:a|an)\s+(?:[\w-]+\s+){{0,2}}{_AGE}\s+(?:\w+\s+)?(?:man|woman|boy|girl|male|female|patient|infant|"
        r"child|neonate|gentleman|lady|caucasian|white|black)\b", "old"),
     _r(rf"\b(?:is|are|was|were)\s+(?:reported|described|presented)\s+in\s+{_NUM}\s+(?:[\w-]+\s+){{0,2}}{_PEOPLE}\b",
        "reported", "described", "presented"),
     _r(r"\b(?:a|an|one|this)\s+(?:\w+\s+){0,2}case\s+(?:of|with|in)\b", "case"),
     _r(r"^(?:One|Two|Three|Four|Five)\s+(?:[\w-]+\s+){0,3}(?:patients|cases|children|infants|siblings|brothers|"
        r"sisters|families|men|women|males|females|boys|girls)\b", "one", "two", "three", "four", "five"),
     _r(r"\b(?:a|an)\s+(?:\w+\s+){0,2}(?:man|woman|boy|girl|male|female|patient),?\s+aged\s+\d", "aged")),
)
REVIEW_CUE = Cue(
    NARRATIVE_REVIEW,
    (_r(r"\breview\b(?!\s+of\s+(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|\w+\s+(?:cases|patients|"
        r"operations))|\s+(?:and comparison|board))(?<!peer review)(?<!periodic review)(?<!chart review)", "review"),
     _r(r"\boverview\b", "overview"),
     _r(r"\bcurrent (?:concepts|status|knowledge|perspectives)\b|\brecent (?:advances|developments|progress)\b",
        "current", "recent"),
     _r(r"\bstate of the art\b|\ba (?:reappraisal|perspective)\b|\b(?:an|a) update\b|\bupdate on\b",
        "state", "reappraisal", "perspective", "update")),
    (_r(r"\b(?:this|the present|in this)\s+(?:\w+\s+){0,2}(?:review|overview)\b", "review", "overview"),
     _r(r"\bwe\s+(?:\w+\s+)?(?:review|summari[sz]e)\b", "review", "summarize", "summarise"),
     _r(r"\b(?:this|the present) (?:paper|article|chapter|communication) (?:reviews|summari[sz]es)\b", "reviews",
        "summarizes", "summarises"),
     _r(r"\b(?:is|are)\s+(?:briefly\s+|also\s+|critically\s+)?(?:reviewed|summari[sz]ed|surveyed)\b", "reviewed",
        "summarized", "summarised", "surveyed"),
     _r(r"\breview(?:s|ed)?\s+(?:of\s+)?(?:the\s+)?(?:current|recent|available|published|pertinent|relevant)?\s*"
        r"literature|\bliterature\s+(?:is|was|has been)\s+reviewed", "literature"),
     _r(r"\b(?:here|herein|in this (?:article|paper|chapter|work))\s*,?\s*we\s+(?:briefly\s+)?(?:review|discuss|"
        r"summari[sz]e|highlight|outline|provide an? (?:\w+\s+)?(?:overview|update|summary|perspective))", "here",
        "herein", "article", "paper", "chapter", "work"),
     _r(r"\bthis (?:article|paper|chapter|manuscript|work)\s+(?:briefly\s+)?(?:reviews|summari[sz]es|discusses|"
        r"highlights|outlines|provides an? (?:\w+\s+)?(?:overview|update|summary))", "article", "paper", "chapter",
        "manuscript", "work"),
     _r(r"\b(?:future|further) (?:directions|perspectives|research directions|prospects)\b", "directions",
        "perspectives", "prospects"),
     _r(r"\brecent (?:advances|progress|developments)\b", "recent"),
     _r(r"\bwe (?:also )?discuss (?:the )?(?:current|recent|potential|future|emerging|latest)\b", "discuss")),
)
_DESIGNED = ("prospective", "prospectively", "retrospective", "retrospectively", "longitudinal")
COHORT_CUE = Cue(
    COHORT,
    (_r(r"\bcohort\b|\bcase[- ]control\b", "cohort", "control"),
     _r(r"\b(?:prospective|retrospective|longitudinal|follow-up)\s+(?:\w+\s+)?(?:study|analysis|cohort|evaluation|"
        r"review)\b", *_DESIGNED, "follow")),
    (_r(r"\bcohort\b|\bcase[- ]control\b", "cohort", "control"),
     _r(r"\b(?:prospective(?:ly)?|retrospective(?:ly)?|longitudinal)\s+(?:\w+\s+){0,2}(?:study|studied|analy[sz]\w+|"
        r"cohort|evaluat\w+|review\w*|collected|followed|enrolled|data)\b", *_DESIGNED),
     _r(r"\bhazard ratios?\b|\bpopulation-based\b|\bregistry\b", "hazard", "population", "registry")),
)
CROSS_CUE = Cue(
    CROSS_SECTIONAL,
    (_r(r"\bcross[- ]sectional\b", "sectional"),),
    (_r(r"\bcross[- ]sectional\b", "sectional"),),
)
#: the designs in order of precedence
DESIGN_CUES = (META_CUE, GUIDELINE_CUE, RCT_CUE, TRIAL_CUE, CASE_CUE, REVIEW_CUE, COHORT_CUE, CROSS_CUE)

_ANIMAL_TOKENS = frozenset({
    "mice", "mouse", "murine", "rat", "rats", "rabbit", "rabbits", "dog", "dogs", "canine", "cat", "cats", "feline",
    "pig", "pigs", "piglets", "porcine", "swine", "sheep", "ovine", "cattle", "cow", "cows", "calves", "bovine",
    "horse", "horses", "equine", "monkey", "monkeys", "macaque", "macaques", "primates", "hamster", "hamsters",
    "chick", "chicks", "chicken", "chickens", "zebrafish", "drosophila", "rodent", "rodents", "ferret", "ferrets",
    "goat", "goats", "lamb", "lambs", "baboon", "baboons", "xenopus", "frog", "frogs", "elegans", "caenorhabditis",
    "animals"})
_ANIMALS = (r"(?:mice|mouse|murine|rats?|rabbits?|dogs?|canine|cats?|feline|pigs?|piglets?|porcine|swine|sheep|ovine|"
            r"cattle|cows?|calves|bovine|horses?|equine|monkeys?|macaques?|primates?|hamsters?|guinea[- ]pigs?|"
            r"chick(?:en)?s?|zebrafish|drosophila|rodents?|ferrets?|goats?|lambs?|baboons?|xenopus|frogs?|"
            r"c\. elegans|caenorhabditis)")
ANIMAL_CUE = Cue(
    ANIMAL,
    (_r(rf"\b{_ANIMALS}\b", *_ANIMAL_TOKENS), _r(r"\banimal\b(?! models?\b)|\bin vivo\b", "animal", "vivo")),
    (Words(_ANIMAL_TOKENS, 2), _r(r"\banimals\s+(?:were|was)\b", "animals")),
)
_CELL_LINES = ("hela", "hek", "hek293", "mcf", "mcf7", "a549", "hepg2", "caco", "jurkat", "sy5y", "pc12", "thp", "raw",
               "u937", "cho", "k562", "hl")
IN_VITRO_CUE = Cue(
    IN_VITRO,
    (_r(r"\bin vitro\b(?! fertili[sz]ation)", "vitro"),
     _r(r"\bcell (?:lines?|cultures?)\b|\bcultured\b", "cell", "cultured")),
    (_r(r"\bin vitro\b(?! fertili[sz]ation)", "vitro"),
     _r(r"\bcell (?:lines?|cultures?)\b|\bcultured\s+(?:\w+\s+){0,2}cells\b|\bcells?\s+(?:were|was)\s+(?:\w+\s+)?"
        r"(?:treated|incubated|exposed|transfected|cultured|stimulated)", "cell", "cells", "cultured"),
     _r(r"\b(?:HeLa|HEK\s?293\w*|MCF-?7|A549|HepG2|Caco-2|Jurkat|SH-SY5Y|PC12|THP-1|RAW\s?264\.7|U937|CHO|K562|HL-60)"
        r"\b", *_CELL_LINES)),
)
HUMANS_CUE = Cue(
    HUMANS,
    (_r(r"\bpatients?\b|\bhumans?\b|\b(?:wo)?men\b|\bchildren\b|\binfants?\b|\bvolunteers?\b|\bpregnan|\bclinical\b|"
        r"\bcase reports?\b|\bcase of\b", "patient", "patients", "human", "humans", "men", "women", "children",
        "infant", "infants", "volunteer", "volunteers", "pregnant", "pregnancy", "pregnancies", "clinical", "case"),),
    (_r(rf"\bpatients?\b|\bparticipants?\b|\bvolunteers?\b|\b(?:wo)?men\b|\bchildren\b|\binfants?\b|\badults?\b|"
        rf"\bhuman subjects\b|\bpregnan\w+ wom[ae]n\b|\brespondents\b|\bhealthy (?:subjects|controls|individuals)\b|"
        rf"\b{_AGE}\b", "patient", "patients", "participant", "participants", "volunteer", "volunteers", "men",
        "women", "children", "infant", "infants", "adult", "adults", "human", "respondents", "healthy", "old"),),
)
