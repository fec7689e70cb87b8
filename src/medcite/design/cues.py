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
class Rule:
    """One pattern and the lowercase words of which the text must hold one before the pattern is tried (most
    abstracts hold none, which keeps labelling to a few substring tests per article)."""

    pattern: re.Pattern[str]
    needles: tuple[str, ...]

    def search(self, text: str, lowered: str) -> str | None:
        if not any(n in lowered for n in self.needles):
            return None
        m = self.pattern.search(text)
        return m.group(0) if m else None


@dataclass(frozen=True, slots=True)
class Words:
    """Words of a list named at least ``count`` times (an animal named twice in an abstract, not once in passing):
    one pass over the words of the text, no pattern per word."""

    words: frozenset[str]
    count: int

    def search(self, text: str, lowered: str) -> str | None:
        found = [w for w in _WORD.findall(lowered) if w in self.words]
        return ", ".join(dict.fromkeys(found)) if len(found) >= self.count else None


_WORD = re.compile(r"[a-z]+")


def _r(pattern: str, *needles: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), needles)


@dataclass(frozen=True, slots=True)
class Cue:
    """The rules that name one label in the title and in the abstract."""

    label: str
    title: tuple[Rule | Words, ...]
    abstract: tuple[Rule | Words, ...]

    def find(self, title: str, abstract: str, lowered: tuple[str, str] | None = None) -> str | None:
        """The text that fired (title first), or None. ``lowered``: the title and abstract in lower case, when
        the caller has them already."""
        low = lowered or (title.lower(), abstract.lower())
        for rules, text, text_low in ((self.title, title, low[0]), (self.abstract, abstract, low[1])):
            if not text:
                continue
            for rule in rules:
                found = rule.search(text, text_low)
                if found is not None:
                    return found
        return None


_SMALL = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")

META_CUE = Cue(
    META_ANALYSIS,
    (_r(r"\bmeta-?analy|\bmeta-?regression", "meta"),
     _r(r"\bsystematic(?:al)?\s+(?:literature\s+)?review|\bumbrella review", "systematic", "umbrella"),
     _r(r"\bpooled analysis\b", "pooled")),
    (_r(r"\b(?:this|a|we|our|the present)\s+(?:\w+\s+){0,3}(?:meta-?analys[ie]s|systematic(?:al)?\s+"
        r"(?:literature\s+)?review)", "meta", "systematic"),
     _r(r"\bsystematic(?:al)?\s+(?:literature\s+)?(?:search|review)\w*\s+(?:of|was|were|in|using|through|across|on)\b",
        "systematic"),
     _r(r"\bsystematically\s+(?:searched|reviewed|identified)", "systematically"),
     _r(r"\bPRISMA\b", "prisma"),
     _r(r"\bmeta-?analys[ie]s\s+(?:was|were)\s+(?:performed|conducted|carried)", "meta")),
)
GUIDELINE_CUE = Cue(
    GUIDELINE,
    (_r(r"\bguidelines?\b", "guideline"),
     _r(r"\bconsensus (?:statement|conference|recommendations?)", "consensus"),
     _r(r"\bposition (?:statement|paper)", "position"),
     _r(r"\bpractice parameter|\bexpert panel|\brecommendations\s+(?:for|of|from|on)\b", "parameter", "panel",
        "recommendations")),
    (),
)
RCT_CUE = Cue(
    RCT,
    (_r(r"\brandomi[sz]ed\b", "randomi"),),
    (_r(r"\brandomly\s+(?:assigned|allocated|divided|distributed|selected to receive)", "randomly"),
     _r(r"\b(?:were|was)\s+(?:\w+\s+)?randomi[sz]ed\b|\brandomi[sz]ation\b|\brandomi[sz]ed\s+(?:in|into|to)\b|"
        r"\brandomi[sz]ed\s+(?:controlled|clinical|double|single|placebo|trial|study|crossover|cross-over|"
        r"prospective|comparative|open|multicent|parallel|pilot)", "randomi"),
     _r(r"\bat random\s+(?:to|into)\b|\bin (?:a )?random(?:i[sz]ed)? order\b", "random")),
)
_TRIAL = (_r(r"\bdouble[- ]blind", "blind"), _r(r"\bplacebo[- ]controlled", "placebo"),
          _r(r"\b(?:clinical|controlled) trial\b", "trial"),
          _r(r"\bphase\s+(?:I{1,3}|IV|[1-4])\s+(?:trial|study)\b", "phase"), _r(r"\bopen[- ]label\b", "label"))
TRIAL_CUE = Cue(CLINICAL_TRIAL, _TRIAL, _TRIAL)
CASE_CUE = Cue(
    CASE_REPORT,
    (_r(r"\bcase (?:reports?|series)\b", "case"),
     _r(r"\b(?:a|one|two|three|four|five|unusual|rare|single)\s+(?:\w+\s+){0,2}cases?\b(?! study| studies|-control)|"
        r"(?<!the )\bcase of\b", "case"),
     _r(r"\bin (?:a|an|one|two|three|identical|monozygotic)\s+(?:\w+[- ]){0,3}(?:patients?|m[ae]n|wom[ae]n|boys?|"
        r"girls?|infants?|child|neonates?|newborns?|brothers|sisters|siblings|family|twins|adults?|adolescents?)\b",
        "in a", "in an", "in one", "in two", "in three", "in identical", "in monozygotic"),
     _r(r"\ba\s+(?:\w+\s+)?(?:patient|man|woman|boy|girl|infant|child)\s+with\b", " with")),
    (_r(rf"\b(?:we|the authors?|this (?:paper|report|article))\s+(?:\w+\s+)?(?:report|describe|present|document)\w*"
        rf"\s+(?:\w+\s+){{0,3}}{_NUM}\s+(?:\w+\s+){{0,4}}{_PEOPLE}\b", "report", "describ", "present", "document"),
     _r(rf"\b{_NUM}\s+(?:[\w'-]+\s+){{0,4}}{_PEOPLE}\s+(?:[^.;]{{0,120}}?\s)?(?:is|are|was|were|has been|have been)\s+"
        rf"(?:\w+\s+)?(?:reported|described|presented|illustrated)\b", "reported", "described", "presented",
        "illustrated"),
     _r(r"\b(?:case|patient)\s+(?:is|was)\s+(?:reported|described|presented)|\bcase (?:reports?|presentation)\b",
        "case", "patient"),
     _r(rf"\b(?:a|an)\s+(?:[\w-]+\s+){{0,2}}{_AGE}\s+(?:\w+\s+)?(?:man|woman|boy|girl|male|female|patient|infant|child|neonate|"
        r"gentleman|lady|caucasian|white|black)\b", "old"),
     _r(rf"\b(?:is|are|was|were)\s+(?:reported|described|presented)\s+in\s+{_NUM}\s+(?:[\w-]+\s+){{0,2}}{_PEOPLE}\b",
        "reported in", "described in", "presented in"),
     _r(r"\b(?:a|an|one|this)\s+(?:\w+\s+){0,2}case\s+(?:of|with|in)\b", "case"),
     _r(r"^(?:One|Two|Three|Four|Five)\s+(?:[\w-]+\s+){0,3}(?:patients|cases|children|"
        r"infants|siblings|brothers|sisters|families|men|women|males|females|boys|girls)\b", "one", "two", "three",
        "four", "five"),
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
        "state of", "reappraisal", "perspective", "update")),
    (_r(r"\b(?:this|the present|in this)\s+(?:\w+\s+){0,2}(?:review|overview)\b", "review", "overview"),
     _r(r"\bwe\s+(?:\w+\s+)?(?:review|summari[sz]e)\b", "we "),
     _r(r"\b(?:this|the present) (?:paper|article|chapter|communication) (?:reviews|summari[sz]es)\b", "this",
        "present"),
     _r(r"\b(?:is|are)\s+(?:briefly\s+|also\s+|critically\s+)?(?:reviewed|summari[sz]ed|surveyed)\b", "reviewed",
        "summarized", "summarised", "surveyed"),
     _r(r"\breview(?:s|ed)?\s+(?:of\s+)?(?:the\s+)?(?:current|recent|available|published|pertinent|relevant)?\s*"
        r"literature|\bliterature\s+(?:is|was|has been)\s+reviewed", "literature"),
     _r(r"\b(?:here|herein|in this (?:article|paper|chapter|work))\s*,?\s*we\s+(?:briefly\s+)?(?:review|discuss|"
        r"summari[sz]e|highlight|outline|provide an? (?:\w+\s+)?(?:overview|update|summary|perspective))", "here",
        "in this"),
     _r(r"\bthis (?:article|paper|chapter|manuscript|work)\s+(?:briefly\s+)?(?:reviews|summari[sz]es|discusses|"
        r"highlights|outlines|provides an? (?:\w+\s+)?(?:overview|update|summary))", "this "),
     _r(r"\b(?:future|further) (?:directions|perspectives|research directions|prospects)\b", "future", "further"),
     _r(r"\brecent (?:advances|progress|developments)\b", "recent"),
     _r(r"\bwe (?:also )?discuss (?:the )?(?:current|recent|potential|future|emerging|latest)\b", "discuss")),
)
COHORT_CUE = Cue(
    COHORT,
    (_r(r"\bcohort\b|\bcase[- ]control\b", "cohort", "control"),
     _r(r"\b(?:prospective|retrospective|longitudinal|follow-up)\s+(?:\w+\s+)?(?:study|analysis|cohort|evaluation|"
        r"review)\b", "prospective", "retrospective", "longitudinal", "follow-up")),
    (_r(r"\bcohort\b|\bcase[- ]control\b", "cohort", "control"),
     _r(r"\b(?:prospective(?:ly)?|retrospective(?:ly)?|longitudinal)\s+(?:\w+\s+){0,2}(?:study|studied|analy[sz]\w+|"
        r"cohort|evaluat\w+|review\w*|collected|followed|enrolled|data)\b", "prospective", "retrospective",
        "longitudinal"),
     _r(r"\bhazard ratios?\b|\bpopulation-based\b|\bregistry\b", "hazard", "population-based", "registry")),
)
CROSS_CUE = Cue(
    CROSS_SECTIONAL,
    (_r(r"\bcross[- ]sectional\b", "sectional"),),
    (_r(r"\bcross[- ]sectional\b", "sectional"),),
)
#: the designs in order of precedence
DESIGN_CUES = (META_CUE, GUIDELINE_CUE, RCT_CUE, TRIAL_CUE, CASE_CUE, REVIEW_CUE, COHORT_CUE, CROSS_CUE)

_ANIMAL_WORDS = ("mice", "mouse", "murine", "rat", "rabbit", "dog", "canine", "cat", "feline", "pig", "porcine",
                 "swine", "sheep", "ovine", "cattle", "cow", "calves", "bovine", "horse", "equine", "monkey", "macaque",
                 "primate", "hamster", "chick", "zebrafish", "drosophila", "rodent", "ferret", "goat", "lamb",
                 "baboon", "xenopus", "frog", "elegans")
_ANIMALS = (r"(?:mice|mouse|murine|rats?|rabbits?|dogs?|canine|cats?|feline|pigs?|piglets?|porcine|swine|sheep|ovine|"
            r"cattle|cows?|calves|bovine|horses?|equine|monkeys?|macaques?|primates?|hamsters?|guinea[- ]pigs?|"
            r"chick(?:en)?s?|zebrafish|drosophila|rodents?|ferrets?|goats?|lambs?|baboons?|xenopus|frogs?|"
            r"c\. elegans|caenorhabditis)")
_ANIMAL_TOKENS = frozenset({
    "mice", "mouse", "murine", "rat", "rats", "rabbit", "rabbits", "dog", "dogs", "canine", "cat", "cats", "feline",
    "pig", "pigs", "piglets", "porcine", "swine", "sheep", "ovine", "cattle", "cow", "cows", "calves", "bovine",
    "horse", "horses", "equine", "monkey", "monkeys", "macaque", "macaques", "primates", "hamster", "hamsters",
    "chick", "chicks", "chicken", "chickens", "zebrafish", "drosophila", "rodent", "rodents", "ferret", "ferrets",
    "goat", "goats", "lamb", "lambs", "baboon", "baboons", "xenopus", "frog", "frogs", "elegans", "animals"})
ANIMAL_CUE = Cue(
    ANIMAL,
    (_r(rf"\b{_ANIMALS}\b", *_ANIMAL_WORDS), _r(r"\banimal\b(?! models?\b)|\bin vivo\b", "animal", "vivo")),
    (Words(_ANIMAL_TOKENS, 2), _r(r"\banimals\s+(?:were|was)\b", "animals")),
)
IN_VITRO_CUE = Cue(
    IN_VITRO,
    (_r(r"\bin vitro\b(?! fertili[sz]ation)", "vitro"), _r(r"\bcell (?:lines?|cultures?)\b|\bcultured\b", "cell",
                                                               "cultured")),
    (_r(r"\bin vitro\b(?! fertili[sz]ation)", "vitro"),
     _r(r"\bcell (?:lines?|cultures?)\b|\bcultured\s+(?:\w+\s+){0,2}cells\b|\bcells?\s+(?:were|was)\s+(?:\w+\s+)?"
        r"(?:treated|incubated|exposed|transfected|cultured|stimulated)", "cell"),
     _r(r"\b(?:HeLa|HEK\s?293\w*|MCF-?7|A549|HepG2|Caco-2|Jurkat|SH-SY5Y|PC12|THP-1|RAW\s?264\.7|U937|CHO|K562|HL-60)"
        r"\b", "hela", "hek", "mcf-7", "mcf7", "a549", "hepg2", "caco-2", "jurkat", "sh-sy5y", "pc12", "thp-1",
        "raw 264", "raw264", "u937", "cho cell", "cho-", "k562", "hl-60")),
)
_PEOPLE_WORDS = ("patient", "participant", "volunteer", " men", "women", "children", "infant", "adult",
                 "human subjects", "pregnan", "respondent", "healthy", "-old", " old")
HUMANS_CUE = Cue(
    HUMANS,
    (_r(r"\bpatients?\b|\bhumans?\b|\b(?:wo)?men\b|\bchildren\b|\binfants?\b|\bvolunteers?\b|\bpregnan|\bclinical\b|"
        r"\bcase reports?\b|\bcase of\b", "patient", "human", "men", "children", "infant", "volunteer", "pregnan",
        "clinical", "case"),),
    (_r(rf"\bpatients?\b|\bparticipants?\b|\bvolunteers?\b|\b(?:wo)?men\b|\bchildren\b|\binfants?\b|\badults?\b|"
        rf"\bhuman subjects\b|\bpregnan\w+ wom[ae]n\b|\brespondents\b|\bhealthy (?:subjects|controls|individuals)\b|"
        rf"\b{_AGE}\b", *_PEOPLE_WORDS),),
)
