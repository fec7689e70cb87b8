"""What a question asks and what it is about: its BioASQ type by rules, and its key concepts.

- :func:`question_type`: ``yesno`` when the question opens with an auxiliary verb ("Is", "Does", "Can", ...),
  also after a leading clause ending in a comma ("In adults with X, does Y ...") or a title clause ("Title: does
  X matter?", "X - are they ...?", "X. Do they work?"), or ends "yes or no?", or is any other question with no
  wh-word that asks for nothing to be listed or described ("Necrotizing fasciitis: an indication for hyperbaric
  oxygen?", the form of many article titles); ``list``
  for "List ...", "Which ... are ...", "What are the ...s"; ``factoid`` for the other wh-questions (what,
  which, who, where, when, how many ...); ``summary`` otherwise. On the 1,502 BioASQ 7b-11b dev questions:
  99.75 % of yes/no questions found, 74.8 % four-way accuracy (benchmarks/bench_offline_answer.py measures it);
  all 651 PubMedQA dev questions (yes/no questions written as article titles) found, 599 before the title-clause
  rules.
- :func:`key_concepts`: the rare content words and phrases of a question, the words a relevant article must
  contain. Rare is a Zipf frequency under 3.0 in general English (wordfreq; Speer et al. 2018), or a token
  that looks like a name: digits, inner hyphens or capitals ("BRCA1", "IL-6", "HercepTest").
- :func:`subject`: what the question is about, the words a sentence or its article's title must name to support
  an answer (the topic guard): for a yes/no question the noun phrase after its auxiliary verb ("Are **COVID-19
  survivors** at risk ...", "Does **relaxation** therapy lower ...": generic heads such as "therapy", "levels"
  left out) with the key concepts in it, every word of which a sentence must name; for the others the names among
  the key concepts (a digit or two capitals: "LAMA1", "AML"), every one, else one key-concept word
  (:func:`guard_words`). A study of nurses is no support for a question about survivors, one of
  lithium none for a question about perampanel.
- :func:`missing_concepts`: the key concepts no retrieved article mentions (a typo within a difflib ratio of
  0.85 still counts as a mention), or that the index holds no document for. A question about something the
  corpus never mentions is answered with an abstention, not with sentences that share its common words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..registry import require

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..types import Hit

QUESTION_TYPES = ("yesno", "factoid", "list", "summary")
RARE_ZIPF = 3.0
TYPO_RATIO = 0.85

_AUX = ("is|are|am|was|were|does|do|did|can|could|has|have|had|should|would|will|shall|may|might|must")
_YESNO = re.compile(rf"^(?:{_AUX})\b", re.IGNORECASE)
_YESNO_AFTER_CLAUSE = re.compile(rf",\s*(?:{_AUX})\b\s+\w", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\b(?:yes or no|true or false)\W*$", re.IGNORECASE)
# a title clause before the question proper ("Quality of life in lung cancer: does socioeconomic status matter?",
# "Fast foods - are they a risk factor for asthma?", "Multidisciplinary clinics. Do they work?")
_CLAUSE_BREAK = re.compile(r"\s*(?::|\s[-\u2013\u2014]+\s|--|\.\s|\?\s|;)\s*")
_WH = re.compile(r"\b(?:what|which|who|whom|whose|where|when|why|how)\b", re.IGNORECASE)
_IMPERATIVE = re.compile(r"^(?:please\b|list\b|name\b|describe\b|explain\b|summari[sz]e\b|give\b|tell\b|"
                         r"compare\b|enumerate\b)", re.IGNORECASE)
_LIST = re.compile(
    r"^(?:list\b|name\b.*\b(?:genes|proteins|drugs|types|members|features)\b|enumerate\b|"
    r"which\b[^?]*?\b(?:are|were|have been)\b|what\s+are\s+(?:the\s+)?(?:\w+\s+){0,4}?\w+s\b)",
    re.IGNORECASE)
_LIST_NOT = re.compile(r"^what\s+are\s+(?:the\s+)?(?:\w+\s+)?(?:effects?|differences?|roles?|functions?|"
                       r"mechanisms?|advantages?|benefits?|implications?|characteristics?|uses?)\b",
                       re.IGNORECASE)
_FACTOID = re.compile(r"^(?:what|which|who|whom|whose|where|when|how\s+(?:many|much|long|often|old|large)|"
                      r"name|in\s+which|to\s+which|from\s+which|at\s+what|by\s+which|through\s+which)\b",
                      re.IGNORECASE)
_SUMMARY = re.compile(r"^(?:what\s+(?:is|are)\s+(?:the\s+)?(?:role|function|mechanism|effect|difference|"
                      r"association|relationship|impact|use|purpose)|how\s+(?:does|do|is|are|can)|why|describe|"
                      r"explain|summari[sz]e)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019\-\u2010-\u2014/+.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_DOUBLE_DASH = re.compile(r"-{2,}")
_NAME_LIKE = re.compile(r"[a-z]-?[A-Z]|[A-Z][^-]*-|-.*[A-Z]|^[A-Z]{2,}")
_STOP = frozenset(
    "a an the of in on for to and or is are was were be been being by with as at from that this these those which "
    "what who whom whose how why when where does do did can could should would may might will shall must has have "
    "had it its their there than not no any all some such into about between within via per versus vs used use "
    "using patients patient human humans people adult adults children child treatment treated disease diseases "
    "effect effects role associated association risk case cases study studies list name describe explain".split())


def question_type(question: str) -> str:
    """``yesno``, ``factoid``, ``list`` or ``summary`` by the rules of the module doc."""
    q = " ".join(question.split()).strip()
    if _YESNO.match(q) or _YES_OR_NO.search(q):
        return "yesno"
    parts = _clauses(q)
    if len(parts) > 1 and _WH.match(parts[-1]):
        return question_type(parts[-1] + "?")  # "Scurvy in adults: what are its first signs?"
    head = q.split("?")[0]
    if "," in head and _YESNO_AFTER_CLAUSE.search(head) and not _FACTOID.match(q) and not _LIST.match(q):
        return "yesno"
    if _question_clause(q) is not None:
        return "yesno"
    if (q.endswith("?") and not _WH.search(q) and not _IMPERATIVE.match(q) and not _LIST.match(q)
            and not _SUMMARY.match(q)):
        return "yesno"  # a question with no wh-word that asks nothing to be listed: "X: a risk factor for Y?"
    if _LIST.match(q) and not _LIST_NOT.match(q):
        return "list"
    if _SUMMARY.match(q):
        return "summary"
    if _FACTOID.match(q):
        return "factoid"
    return "summary"


def _clauses(q: str) -> list[str]:
    """The question's clauses: a title clause, then the question proper ("Title: does X matter?")."""
    return [p for p in _CLAUSE_BREAK.split(q.rstrip("?").strip()) if p.strip()]


def _question_clause(q: str) -> str | None:
    """The yes/no question after a title clause ("Title: does X matter?" -> "does X matter"), else None."""
    parts = _clauses(q)
    if len(parts) > 1:
        last = parts[-1].lstrip("\"'\u201c\u2018 ")
        if _YESNO.match(last):
            return last
    return None


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """Zipf frequency of ``word`` in general English (0 for a word wordfreq has never seen)."""
    wordfreq = require("wordfreq", "evidence", "key concepts of a question (word rarity)")
    return float(wordfreq.zipf_frequency(word.lower(), "en"))


def tokens(text: str) -> list[str]:
    """The word tokens of ``text``; a dash written as two hyphens parts words ("CLASS--Is" is two)."""
    return _TOKEN.findall(_DOUBLE_DASH.sub(" ", text))


def is_rare(token: str, threshold: float = RARE_ZIPF) -> bool:
    """A name-like token (digits, inner hyphen or capitals) or a word rare in general English."""
    if token.lower() in _STOP or len(token) < 2:
        return False
    if token.isalpha() and token.islower() and len(token) <= 4:
        return False  # a short lower-case word is a typo or a common word ("tye"); short names are capitals
    if any(c.isdigit() for c in token) or (_NAME_LIKE.search(token) and not token.isupper()):
        return True  # BRCA1, IL-6, HercepTest; an all-capitals acronym is rare only by its frequency (not FDA)
    parts = [p for p in re.split(r"[-/]", token) if p]
    return any(zipf(p) < threshold for p in parts if len(p) > 2)


def key_concepts(question: str, threshold: float = RARE_ZIPF) -> list[str]:
    """The rare words of the question (see the module doc), adjacent ones joined into one phrase, in order."""
    out: list[str] = []
    first = True
    for segment in re.split(r"[()\[\]]", question):  # a parenthesis ends a phrase: "HYDIN (hydrocephalus ...)"
        run: list[str] = []
        for tok in tokens(segment):
            rare = is_rare(tok, threshold) and not (first and tok.lower() in _STOP)
            first = False
            if rare:
                run.append(tok)
                continue
            if run:
                out.append(" ".join(run))
                run = []
        if run:
            out.append(" ".join(run))
    return list(dict.fromkeys(out))


#: words that end the subject of a yes/no question: prepositions, articles, and the verbs and predicate adjectives
#: that follow a subject ("Does X *reduce* ...", "Is X *effective* ...")
_SUBJECT_END = frozenset(
    "a an the in at on for to with by from than as into via versus vs among during after before within without "
    "between against and or but if when while that which who whose because since not also still ever really "
    "reduce reduces lower increase raise improve prevent cause affect treat protect lead induce inhibit promote "
    "help decrease predict bind interact regulate alter worsen change influence modulate contribute result have "
    "play carry confer delay slow mediate enhance impair trigger target cross require need cure relieve alleviate "
    "extend shorten exist occur work act show correlate respond suppress activate block stimulate decrease elevate "
    "remain differ depend undergo form localize localise express encode produce contain share cause exhibit "
    "reverse stop halt restore rescue kill enter reach penetrate lengthen boost benefit harm bind recruit "
    "effective efficacious safe useful able present necessary required common rare more less higher lower better "
    "worse superior inferior linked related responsible essential important beneficial harmful toxic possible "
    "likely approved recommended sufficient indicated available there considered known thought found expressed "
    "correlated associated involved implicated used located mutated elevated reduced increased decreased "
    "upregulated downregulated altered caused approved".split())
#: heads of a subject phrase that name no subject of their own ("relaxation *therapy*", "vitamin D *levels*")
_GENERIC_HEAD = frozenset(
    "level levels expression use usage administration treatment treatments therapy therapies supplementation intake "
    "exposure presence absence loss deficiency activity activation inhibition type types form forms dose doses "
    "patient patients people individuals subjects number amount rate rates concentration concentrations status "
    "any some all each most many addition combination role roles change changes alteration alterations effect "
    "effects impact influence only".split())
#: prepositions a yes/no subject runs on through while it names nothing yet ("*changes in* coding regions *of*
#: MEF2C", "*treatment with* X"): the name after them is the subject
_SUBJECT_PREPOSITIONS = frozenset("of in with on for from".split())


_PARENTHETICAL = re.compile(r"(\S+)\s*\(([^()]{2,80})\)")
#: separates the other names of one subject word ("HYDIN | Hydrocephalus-inducing protein homolog"): a text names
#: it when it names every word of one of them
ALTERNATIVES = " | "


def _parentheticals(question: str) -> tuple[str, dict[str, str]]:
    """``question`` without its parenthesised glosses, and each glossed word's gloss ("HYDIN (Hydrocephalus-inducing
    protein homolog)" -> "HYDIN", {"HYDIN": "Hydrocephalus-inducing protein homolog"})."""
    glosses: dict[str, str] = {}

    def keep(m: re.Match[str]) -> str:
        glosses[m.group(1).strip(",;:")] = " ".join(m.group(2).split())
        return m.group(1)

    return _PARENTHETICAL.sub(keep, question), glosses


def subject_phrase(question: str) -> list[str] | None:
    """A yes/no question's subject words (module doc): the rare words of the noun phrase after its auxiliary verb
    and the phrase's head (its only word, or its last when that looks like a noun); None when the question has no
    such phrase. A word the question glosses in parentheses may be named either way ("HYDIN (Hydrocephalus-inducing
    protein homolog)": :data:`ALTERNATIVES`)."""
    question, glosses = _parentheticals(question)
    words = _subject_words(question)
    if words is None:
        return None
    return [f"{w}{ALTERNATIVES}{glosses[w]}" if w in glosses else w for w in words]


def _subject_words(question: str) -> list[str] | None:
    q = " ".join(question.split()).strip()
    if question_type(q) != "yesno":
        return None
    toks = tokens(q)
    # the auxiliary opens the question, or follows a leading clause ("In adults with X, does Y ...")
    start = 1 if toks and re.fullmatch(_AUX, toks[0], re.IGNORECASE) else None
    clause = _question_clause(q) if start is None else None
    if clause is not None:  # after a title clause: "Title: does X matter?"
        toks, start = tokens(clause), 1
    if start is None and "," in q:
        after = tokens(q.split(",", 1)[1])
        if after and re.fullmatch(_AUX, after[0], re.IGNORECASE):
            toks, start = after, 1
    if start is None or start >= len(toks) or toks[start].lower() in _PRONOUN:
        return None  # "Are there drugs for X?", "yes or no?" endings: the key concepts say what it is about
    copula = toks[0].lower() in ("is", "are", "was", "were", "am")
    span: list[str] = []
    for tok in toks[start:]:
        low = tok.lower()
        if low in ("the", "a", "an", "only") and not span:
            continue
        # a subject that names nothing yet runs on through a preposition to the name ("changes in ... of MEF2C")
        named = any(is_rare(t) for t in span)
        if span and low in _SUBJECT_PREPOSITIONS and not named and all(t.lower() in _GENERIC_HEAD or not
                                                                       is_rare(t) for t in span):
            span.append(tok)
            continue
        if span and (low in _SUBJECT_END or (low.endswith("ed") and len(low) > 5 and not is_rare(tok))
                     or (not copula and tok.islower() and _VERB_END.search(low))
                     or (copula and tok.islower() and _ADJECTIVE_END.search(low))):
            break  # a verb ("participate") or, after "Is", a predicate ("antimicrobial", "abundant")
        span.append(tok)
        if len(span) >= 10:
            break
    if not span:
        return None
    concepts = key_concepts(" ".join(span))
    rare = [c for c in concepts if c.lower() not in _GENERIC_HEAD]
    # the head: the last word naming something before "of" ("disruption of immune regulation" -> disruption;
    # "relaxation therapy" -> relaxation, "therapy" being generic), kept when it looks like a noun
    before_of = span[: next((i for i, t in enumerate(span) if t.lower() in _SUBJECT_PREPOSITIONS), len(span))]
    words = [t for t in before_of if t.lower() not in _STOP and t.lower() not in _GENERIC_HEAD and len(t) > 1
             and not t.isdigit()]
    head = [w for w in words[-1:] if not any(w in c.split() for c in rare)
            and (len(words) == 1 or _looks_like_noun(w))] if clause is None else []
    # after a title clause the title names the topic: the clause's common words ("does socioeconomic status
    # matter") are no subject, the key concepts of the whole question are
    return list(dict.fromkeys(rare + head)) or None


_PARTICIPLE_END = re.compile(r"(?:ed|able|ible)$")
_PRONOUN = frozenset("there it this that they these those we you he she one".split())
_VERB_END = re.compile(r"(?:ate|ize|ise|ify)$")
_ADJECTIVE_END = re.compile(r"(?:ant|ent|ial|ical|ic|ous|ive|ible|able|ary|ful|less)$")
_NOUN_END = re.compile(r"(?:tion|sion|ment|ness|ity|ism|ist|ance|ence|ure|age|ogy|er|or|ors|ers|ts|ns|rs|ls|ds|ks|"
                       r"ms|ps|gs|cs|ys|es)$")


def _looks_like_noun(word: str) -> bool:
    """A name, or a word with a noun ending ("survivors", "relaxation", "smoking" is not one)."""
    return is_rare(word) or bool(_NOUN_END.search(word.lower()))


def subject(question: str) -> list[str]:
    """The words an answer sentence (or its article's title) must name to be about the question (module doc):
    the yes/no subject phrase when there is one, else the key concepts."""
    phrase = subject_phrase(question)
    return phrase if phrase is not None else key_concepts(" ".join(question.split()))


def key_entity(question: str) -> list[str]:
    """The question's key entity: the names a relevant article must all mention for the corpus to hold anything
    on it. The yes/no subject's names (its words with a digit or two capitals, else its rare words); else the
    name-like key concepts; else the rarest key-concept word that is no participle or -able adjective (an
    "underrecognized cause" names no entity). Empty when the question names nothing rare."""
    phrase = subject_phrase(question)
    if phrase:
        rare = [w for w in phrase if ALTERNATIVES in w or is_rare(w.split()[0])]
        names = [w for w in rare if ALTERNATIVES in w or any(ch.isdigit() for ch in w) or
                 sum(ch.isupper() for ch in w) >= 2]
        if names or rare:
            return names or rare
    words = [w for c in key_concepts(" ".join(question.split())) for w in c.split()]
    names = [w for w in words if any(ch.isdigit() for ch in w) or sum(ch.isupper() for ch in w) >= 2]
    if names:
        return names
    # the rarest word that is no participle or -able adjective ("underrecognized", "modifiable" name no entity;
    # "oxaliplatin-induced" names oxaliplatin)
    nouns = [w.rsplit("-", 1)[0] if "-" in w and _PARTICIPLE_END.search(w.lower()) else w for w in words]
    nouns = [w for w in nouns if not _PARTICIPLE_END.search(w.lower())]
    return [min(nouns or words, key=zipf)] if words else []


def predicate_words(question: str) -> list[str]:
    """The content words of a question besides its subject: what it asks about the subject ("Is hemoglobin
    antimicrobial?" -> antimicrobial; "Are COVID-19 survivors at risk of anxiety and depression?" -> anxiety,
    depression)."""
    about = {w.lower() for c in subject(question) for w in c.split()}
    out = []
    for tok in tokens(question):
        low = tok.lower()
        if (low in _STOP or low in about or low in _PRONOUN or len(low) < 3 or low.isdigit()
                or re.fullmatch(_AUX, low)):
            continue
        if low in ("yes", "true", "false", "risk", "any"):
            continue
        out.append(tok)
    return list(dict.fromkeys(out))


def content_words(question: str) -> list[str]:
    """The question's content words, its subject's included (no stop words, auxiliaries or numbers)."""
    out = []
    for tok in tokens(question):
        low = tok.lower()
        if low in _STOP or len(low) < 3 or low.isdigit() or re.fullmatch(_AUX, low):
            continue
        out.append(tok)
    return list(dict.fromkeys(out))


def coverage(words: Sequence[str], text: str) -> float:
    """The share of ``words`` that ``text`` names (1.0 for no words)."""
    if not words:
        return 1.0
    vocabulary = _norm_tokens(text)
    return sum(mentions(w, vocabulary) for w in words) / len(words)


def rarity_coverage(words: Sequence[str], text: str) -> float:
    """The share of ``words`` that ``text`` names, each word weighted by its rarity in English (7 minus its Zipf
    frequency, at least 0.5): naming "psychomotor" counts more than naming "increase" (1.0 for no words)."""
    if not words:
        return 1.0
    vocabulary = _norm_tokens(text)
    weights = [max(0.5, 7.0 - zipf(w.split()[-1])) for w in words]
    named = sum(wt for w, wt in zip(words, weights, strict=True) if mentions(w, vocabulary))
    return named / sum(weights)


def guard_words(question: str) -> tuple[list[str], bool]:
    """What a sentence (with its article's title) must name to be about ``question``, and whether every one of
    them: the yes/no subject phrase (every word); else the names among the key concepts, words with a digit or
    two capitals ("LAMA1", "CD38", "AML": every one); else any one word of the key concepts."""
    phrase = subject_phrase(question)
    if phrase is not None:
        return phrase, True
    words = list(dict.fromkeys(w for c in key_concepts(" ".join(question.split())) for w in c.split()))
    names = [w for w in words if any(ch.isdigit() for ch in w) or sum(ch.isupper() for ch in w) >= 2]
    return (names, True) if names else (words, False)


def on_topic(words: Sequence[str], *texts: str, every: bool = True) -> bool:
    """Whether ``texts`` together (a sentence and its article's title) name every one of ``words`` (``every``
    False: at least one; no words: True)."""
    if not words:
        return True
    vocabulary: set[str] = set()
    for text in texts:
        vocabulary |= _norm_tokens(text)
    found = (mentions(w, vocabulary) for w in words)
    return all(found) if every else any(found)


def _clean(token: str) -> str:
    return _POSSESSIVE.sub("", token.lower()).strip(".'\u2019")


def _norm_tokens(text: str) -> set[str]:
    """Lower-cased tokens, possessive and edge punctuation removed ("Ewing's" -> "ewing"); a compound also
    gives its parts and its closed form ("long-COVID" -> "long-covid", "long", "covid", "longcovid")."""
    out: set[str] = set()
    toks = tokens(text)
    for i, raw in enumerate(toks):
        t = _clean(raw)
        out.add(t)
        out.add(_canon(raw))
        parts = [p for p in _COMPOUND.split(t) if p]
        if len(parts) > 1:
            out.update(parts)
            out.add("".join(parts))
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if nxt in _ROMAN or (nxt.isdigit() and len(nxt) <= 2):  # "topoisomerase II" is "topoisomerase2"
            out.add(_canon(raw) + _ROMAN.get(nxt, nxt))
    return out


_COMPOUND = re.compile(r"[-/\u2010-\u2014]")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_SUFFIX = re.compile(r"(?:ations?|ating|ated|ates?|ions?|ings?|ed|es|al|s)$")


def _stem(word: str) -> str:
    """``word`` without an inflectional suffix when at least 5 letters remain ("modulated" -> "modulat")."""
    stem = _SUFFIX.sub("", word)
    return stem if len(stem) >= 5 else word


def _word_in(word: str, vocabulary: set[str]) -> bool:
    if word in vocabulary:
        return True
    if len(word) < 5:  # short names ("IL6", "MDS") must match exactly: one letter changes what they name
        return False
    # an inflection ("methylate" / "methylation") shares a stem: the word without an inflectional suffix
    stem = _stem(word)
    if stem != word and any(v.startswith(stem) for v in vocabulary):
        return True
    close = difflib.get_close_matches(word, [v for v in vocabulary if abs(len(v) - len(word)) <= 2],
                                      n=1, cutoff=TYPO_RATIO)
    return bool(close)


def mentions(concept: str, vocabulary: set[str]) -> bool:
    """Whether every word of ``concept`` is in ``vocabulary`` (lower-cased tokens): exactly, as an inflection
    of the same stem, in another spelling of the same name ("topoisomeraseII", "topoisomerase II",
    "topoisomerase-2"), or within a difflib ratio of :data:`TYPO_RATIO` (a misspelt drug name still matches).
    A concept with :data:`ALTERNATIVES` is mentioned when one of its names is."""
    if ALTERNATIVES in concept:
        return any(mentions(alt, vocabulary) for alt in concept.split(ALTERNATIVES) if alt.strip())
    return all(_word_in(_clean(word), vocabulary) or _parts_in(_clean(word), vocabulary) or _canon(word) in vocabulary
               for word in _concept_words(concept, keep_case=True))


def _concept_words(concept: str, keep_case: bool = False) -> list[str]:
    return [_POSSESSIVE.sub("", t).strip(".'\u2019") if keep_case else _clean(t) for t in tokens(concept)]


_ROMAN = {"I": "1", "II": "2", "III": "3", "IV": "4", "V": "5", "VI": "6", "VII": "7", "VIII": "8", "IX": "9"}
_TRAILING_ROMAN = re.compile(r"(?<=[a-z])(VIII|VII|VI|IV|IX|V|III|II|I)$|(?<=[-/])(VIII|VII|VI|IV|IX|V|III|II|I)$")


def _canon(token: str) -> str:
    """One spelling of a name: lower case, no hyphens or slashes, a trailing Roman numeral as a number
    ("topoisomeraseII", "topoisomerase-II", "Topoisomerase-2" -> "topoisomerase2")."""
    m = _TRAILING_ROMAN.search(token)
    if m:
        token = token[: m.start()] + _ROMAN[m.group(0)]
    return _COMPOUND.sub("", _POSSESSIVE.sub("", token).strip(".'\u2019")).lower()


#: the last part of a compound that says how its head acts, not what it is ("FTO-guided", "TNF-induced"): the
#: compound names its head, so an article that says "FTO-mediated" or "FTO" names it too
_RELATION_PART = frozenset(
    "guided mediated induced dependent independent driven associated related based derived regulated activated "
    "dependant triggered stimulated targeted specific".split())


def _parts_in(word: str, vocabulary: set[str]) -> bool:
    """A compound ("angiotensin-converting-enzyme") is mentioned when each of its parts is; one that ends in a
    relation word (:data:`_RELATION_PART`: "FTO-guided") when the parts before it are."""
    parts = [p for p in _COMPOUND.split(word) if p]
    if len(parts) < 2:
        return False
    head = parts[:-1] if parts[-1] in _RELATION_PART else parts
    return all(_word_in(p, vocabulary) for p in head)


def missing_concepts(concepts: Sequence[str], texts: Iterable[str],
                     in_corpus: Callable[[str], bool] | None = None) -> list[str]:
    """The words of ``concepts`` (each word of a phrase on its own) that none of ``texts`` (the retrieved
    articles) mentions; with ``in_corpus`` (whether any document of the corpus mentions a word, e.g. by a
    search of the BM25 index) only those the corpus lacks too, so a word retrieval missed is not reported."""
    vocabulary: set[str] = set()
    for text in texts:
        vocabulary |= _norm_tokens(text)
    out = []
    for concept in concepts:
        for word in concept.split():
            if not is_rare(word) or mentions(word, vocabulary):
                continue
            if in_corpus is None or not in_corpus(word):
                out.append(word)
    return list(dict.fromkeys(out))


def search_forms(word: str) -> list[str]:
    """``word`` and, for a name with a numeral glued on, its spaced spellings ("topoisomeraseII" ->
    "topoisomerase II", "topoisomerase 2"): what an index that splits words on spaces can find."""
    out = [word]
    m = _TRAILING_ROMAN.search(word) or re.search(r"(?<=[A-Za-z])\d{1,2}$", word)
    if m and m.start() > 2:
        stem, tail = word[: m.start()].rstrip("-/"), m.group(0)
        out += [f"{stem} {tail}", f"{stem} {_ROMAN.get(tail, tail)}"]
    return list(dict.fromkeys(out))


def corpus_lookup(ctx: BuildContext | None, index: str | None, k: int = 50) -> Callable[[str], bool] | None:
    """``word -> whether the corpus mentions it``: a search of the index ``index`` of the build context for the
    word, its top ``k`` articles read for a mention (None without a context, a store or such an index). ``k`` is
    large because a stemming index ranks other forms alongside ("modified", "modify" for "modifiable")."""
    if ctx is None or index is None or ctx.store is None or ctx.index_config(index) is None:
        return None
    store = ctx.store

    @lru_cache(maxsize=4096)
    def in_corpus(word: str) -> bool:
        for form in search_forms(word):
            hits: list[Hit] = ctx.index(index).search(form, k)
            found = store.get_many([h.pmid for h in hits])
            if any(mentions(word, _norm_tokens(a.text)) for a in found.values()):
                return True
        return False

    return in_corpus
