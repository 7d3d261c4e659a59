"""Word lists behind the English splitter's decisions. All entries are lowercase; lookups lowercase the word.

Only abbreviations that are not also ordinary words belong here ("no", "in", "am", "fig" are words: a period
after them ends a sentence unless a number follows, which the digit rule handles). Units ("km", "kg", "ft")
are left out on purpose: written after a number with a period, they end the sentence.
"""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Titles and other abbreviations that precede a name: a period after them never ends a sentence.
PREPOSITIVE = _words(
    """
    adm amb atty brig capt cdr cmdr col cpl det dr drs fr gen gov hon insp lt maj messrs mlle mme mr
    mrs ms msgr mt pres prof pvt rep reps rev sen sens sgt st supt
    """
)

# Abbreviations that may end a sentence: after them a capitalised word starts a new sentence only when it is
# a common sentence opener ("Co. It closed" splits, "Co. Ltd" and "Inc. Jobs" do not).
ABBREVIATIONS = _words(
    """
    abbr al approx apr assn assoc aug av ave bldg blvd bros ca cf ch chap co corp ct dec dept diag
    dist div ed eds eg esp est etc eq eqs excl feb figs fri govt hwy ibid ie incl inc intl jan jr jul
    jun ltd mfg mgr misc mon nos nov oct op orig pp pron prop pt pub rd repr resp rte sep sept seq sq
    sr ssp sta subsp tel thu thurs trans tue tues univ viz vol vols vs
    """
)

# Abbreviations that precede a number ("No. 5", "p. 55", "Art. 3"); ordinary words among them are harmless
# because they only count when a number follows.
BEFORE_NUMBER = ABBREVIATIONS | _words(
    "alg app appx art cor def ex exs ext fig lem no nr nrs p para paras pl ref refs sec secs sect sects tab"
    " tbl thm"
)

# Capitalised words that usually open a sentence and rarely continue a name or an abbreviation.
SENTENCE_STARTERS = _words(
    """
    a after all also although an and another any are as at because before both but by can could did
    do does during each even every for from he her here his how however i if in instead is it its
    let many meanwhile more most my no not now of on once one only or our please she since so some
    such that the their then there these they this those though thus to today under unlike was we
    what when where whether which while who why will with within would yes yet you your
    """
)

# Lowercase words that open sentences in informal text ("lol. i think so", "wow! they said no"). After "!",
# or a period after a short or capitalised word, only these start a new sentence: "Yahoo! in" continues.
LOWERCASE_STARTERS = _words(
    """
    anyway are but can cant could did do does dont hi how i id if ill im is it its ive just lol
    maybe my no not now ok okay please plus she so thank thanks the then there they this those we
    what whatever when where which who why will would yes you your
    """
)

# After "!" a verb continues a brand name ("Yahoo! is back", "Jeopardy! can be"): only the other openers do.
AFTER_EXCLAMATION = LOWERCASE_STARTERS - _words("are can cant could did do does is will would")

# Names written with "!", which goes on with the sentence before a capital that is not an opener ("Yahoo!
# Research", "Jeopardy! Champion"); a sentence opener after them still starts a new one ("at Yahoo! The").
EXCLAMATION_NAMES = _words("yahoo jeopardy joomla wham")

# Nouns that name a numbered part of a text: a "??" after them stands for a number LaTeX could not resolve
# ("Section ?? shows", "Table ??."); abbreviated ones ("Fig.", "Sec.") are in BEFORE_NUMBER.
REFERENCES = _words(
    """
    algorithm appendix chapter chapters corollary definition equation equations figure figures footnote
    lemma line lines listing page pages part proposition section sections step table tables theorem
    """
)
