"""The default splitter: rule-based sentence boundaries for any script, fast enough for whole corpora.

A compiled regex finds every candidate boundary after Latin-style marks (terminal punctuation, closing quotes
or brackets, space); a few dictionary lookups in the language's word lists decide each one from the word
before it and the word after it. A second regex finds the marks of other scripts (`。！？` `।` `؟` `۔` `։` `።`
`။` ...), which end a sentence with or without a space after them; it runs only on paragraphs that are not
pure ASCII. Numbered, lettered and bulleted list items are found by two more regexes, only in paragraphs that
can hold them.
"\\n" separates paragraphs and is always a boundary. Sentences are slices of the input, stripped, so no
non-whitespace character is ever lost or changed. Every step looks at a bounded window around a candidate, so
the time is linear in the length of a line.
"""

from __future__ import annotations

import re

from corpusprep.split.languages import CLOSING_QUOTES, ENGLISH, Language

OPENERS = "\"'“‘«‹([{¿¡„‚"
BULLETS = "•⁃‣◦▪●"
_CLOCK = frozenset(("a.m", "p.m"))
# A list or question label alone before the period ("1. The item", "Q. What is it?"), never a sentence.
_LABEL = re.compile(r"\s*[\"'“‘«(\[{¿¡•⁃‣◦▪●]*(?:\d{1,3}|[A-Za-z])\s*")
# Characters that never open a sentence: a candidate followed by one of them is not a boundary.
CONTINUERS = ",;:)]}.…%/"
_EMOTICON = re.compile(r"[:;=][-']?[()DPpO/\\|*]+(?=\s|$)")
# A list marker: "1." "2.)" "3)" "a." "b)" at the start of a word (or right after a bullet).
_MARKER = re.compile(r"(?<![^\s" + BULLETS + r"])(?P<label>\d{1,2}|[a-z])(?P<style>\.\)|\)|\.)(?=\s)")
# The same test, much faster as a first pass: it starts at "." or ")" and looks back at the label.
_MAYBE_MARKER = re.compile(
    r"[.)](?:(?<=[\s" + BULLETS + r"][0-9a-z].)|(?<=[\s" + BULLETS + r"]\d\d.)|(?<=^[0-9a-z].)|(?<=^\d\d.))"
    r"\)?(?=\s)"
)
_BULLET = re.compile(f"[{BULLETS}]")
_PART = re.compile(r"[-/–]")
# Abbreviations written with inner periods: "U.S", "e.g", "a.m", "Ph.D" (the final period is the candidate).
_DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_ROMAN = re.compile(r"[IVXLC]+")
_DASH_WORD = re.compile(r"[-–—]+\s*[^\W\d_]")
_ELLIPSES = ("…", "...")
_GUILLEMETS = "«»‹›„"  # opening quotation marks that are never apostrophes
_WINDOW = 64  # the longest word looked at before a candidate: longer ones are never abbreviations

# Marks of scripts other than Latin that end a sentence whether or not a space follows: CJK full- and
# half-width (and vertical, small) forms, Devanagari and related danda, Arabic question mark, Urdu full stop,
# Armenian, Ethiopic, Myanmar, Khmer, Mongolian, Syriac, Canadian syllabics, Ol Chiki, Vai, Lisu.
WIDE_MARKS = "。！？｡．︒︕︖﹒﹖﹗।॥؟۔։።፧፨။។៕᠃᠉܀܁܂᙮᱾᱿꘎꘏꓿"
_CLOSERS = "\"'”’»)\\]}」』）】〕〉》〗〙〛］｝｣〞〟"
_LATIN_MARKS = "!?‼⁇⁈⁉"
# One plain character class first keeps the scan fast; a run of Latin marks alone counts only when kana or
# ideographs follow it directly ("すごい!本当"), which _wide_cuts checks.
_WIDE = re.compile(rf"[{WIDE_MARKS}{_LATIN_MARKS}][{WIDE_MARKS}{_LATIN_MARKS}.…]*(?P<close>[{_CLOSERS}]*)")
# What never opens a sentence after a wide mark (the mark is inside a list, a quotation or a number).
_WIDE_CONTINUERS = frozenset(",，、;；:：.…%·・" + WIDE_MARKS)
# A CJK quotation of at most 100 characters (an unclosed quotation mark hides nothing).
_QUOTED = re.compile(r"「[^「」]{0,100}」|『[^『』]{0,100}』|“[^“”]{0,100}”")


def split_sentences(text: str, language: Language = ENGLISH) -> list[str]:
    """Split a document into sentences; "\\n" separates paragraphs and always ends a sentence."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        if paragraph and not paragraph.isspace():
            _split_paragraph(paragraph, sentences, language)
    return sentences


def _split_paragraph(para: str, out: list[str], lang: Language) -> None:
    cuts, skip = _list_cuts(para) if _may_hold_list(para) else ([], ())
    last = 0
    for match in lang.candidates.finditer(para):
        at = match.start()
        if at in skip or (at - last < 16 and _LABEL.fullmatch(para, last, at)):
            continue
        cut = _decide(para, match, lang)
        if cut >= 0:
            cuts.append(cut)
            last = cut
    if not para.isascii():
        cuts += _wide_cuts(para)
    if not cuts:
        out.append(para.strip())
        return
    if len(cuts) > 1:
        cuts = sorted(set(cuts))
    start = 0
    for cut in cuts:
        sentence = para[start:cut].strip()
        if sentence:
            out.append(sentence)
        start = cut
    sentence = para[start:].strip()
    if sentence:
        out.append(sentence)


def _wide_cuts(para: str) -> list[int]:
    """Cuts after the marks of other scripts (and after "!?" directly before kana or ideographs)."""
    cuts = []
    n = len(para)
    quoted = [m.span() for m in _QUOTED.finditer(para)] if any(q in para for q in "「『“") else []
    k = 0  # the first quotation that may hold the current mark
    for match in _WIDE.finditer(para):
        end = match.end()
        start = match.start()
        latin_only = para[start] in _LATIN_MARKS and not any(c in WIDE_MARKS for c in match.group(0))
        if latin_only and (end == n or not _no_space_script(para[end])):
            continue  # "Wow! Great" is the Latin candidates' business
        if para[start] == "．" and start and (para[start - 1].isascii() or "０" <= para[start - 1] <= "ｚ"):
            continue  # a full-width period after a letter or digit: "Ｕ．Ｓ．", "３．５"
        nxt = end
        while nxt < n and para[nxt].isspace():
            nxt += 1
        if nxt == n or para[nxt] in _WIDE_CONTINUERS:
            continue
        close = match.group("close")
        if close and nxt == end and "\u3040" <= para[nxt] <= "\u309f":
            continue  # 「行こう！」と言った: a hiragana particle after a quotation goes on with the sentence
        if quoted and not close:
            while k < len(quoted) and quoted[k][1] <= start:
                k += 1
            if k < len(quoted) and quoted[k][0] < start:
                continue  # 「おはよう。元気？」と言った: a mark inside a quotation ends no sentence
        cuts.append(end)
    return cuts


def _no_space_script(char: str) -> bool:
    """Kana and ideographs: scripts written without spaces between sentences."""
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _decide(para: str, match: re.Match, lang: Language) -> int:
    """Where to cut for this candidate (an index into `para`), or -1 when it is not a sentence boundary."""
    nxt = match.group("next")
    first = nxt[0]
    punct = match.group("punct")
    if first in CONTINUERS or (first in lang.terminals and (first == punct[-1] or punct.endswith(_ELLIPSES))):
        if first in ":;" and (emoticon := _EMOTICON.match(para, match.end())):
            return emoticon.end()  # "I love her. :) I have": the smiley belongs to the sentence it follows
        # Nothing opens a sentence with ",", ")" or ".": "affiliates. , 2000", "complex. . . .”"; a mark
        # spaced out and repeated is one mark ("amazing ! ! !", "partage… ? »"; but "Contract. ?" ends)
        return -1
    end = match.end("close")
    if punct.strip("?") == "" and _placeholder(para, match, lang):
        return -1  # "(?)", "[?]", "Fig. ??", "Section ??": an unknown or unresolved reference, not a question
    if first in "-–—":
        if (said := _DASH_WORD.match(para, match.end())) and said.group()[-1].islower():
            return -1  # "espinhos... -- dizia ele", "Où ? — demanda-t-il": a dash before the speaker goes on
        if len(para) - match.end() <= 8 and not any(c.isalnum() for c in para[match.end() :]):
            return -1  # "aufzuräumen! –«" at a paragraph's end: an interruption, part of its sentence
    if first.islower():
        if len(nxt) <= 3 and para.startswith(")", match.end("next")):
            return end  # a list label: "Hello world. (b) Hello world.", "the store. w) hello"
        if para[match.end()] in _GUILLEMETS and not match.group("close") and "." in punct[-1:]:
            return end  # a quotation opens the next sentence, whatever its case: "sah mich an. »'s ist wahr"
        # A lowercase word continues the sentence ("Yahoo! in", '"Great." she said', "Co. at noon") unless
        # informal text starts a sentence in lowercase ("really? they said", "lol. i think").
        return end if _lowercase_opens(para, match, punct, nxt, lang) else -1
    if punct == ".":
        if end > match.end("punct") and any(c in CLOSING_QUOTES for c in match.group("close")):
            return end  # a quotation ends with the period: "nicht mag.« Der", "u. s. w.“ Thun", "aus B.« Da"
        return end if _period_ends_sentence(para, match.start(), nxt, lang) else -1
    if punct == "!" and lang.exclamation_names and not match.group("close"):
        word = _word_before(para[_word_start(para, match.start()) : match.start()]).lower()
        if word in lang.exclamation_names:  # "Yahoo! Research": a name written with "!" goes on...
            return end if nxt.lower() in lang.starters else -1  # ...unless a sentence opener follows
    if "." not in punct and "…" not in punct:
        return end  # "!", "?", "?!", "!!"
    if "!" in punct or "?" in punct:
        return end  # "?.", "!..."
    return _ellipsis_cut(para, match, punct, nxt, end)


def _placeholder(para: str, match: re.Match, lang: Language) -> bool:
    """A run of "?" standing for a number or a name: in brackets ("born in 1850 (?) in", "shown in [?]"), or
    after a word that precedes numbers ("Fig. ??", "Section ?? shows", "Eq. (??)": LaTeX's unresolved
    references), never a question."""
    start, close = match.start(), match.group("close")
    if start and para[start - 1] in "([" and close[:1] in ")]":
        return True
    if para[start - 1 : start] != " ":
        return False
    word = _word_before(para[_word_start(para, start - 1) : start - 1]).rstrip(".~").lower()
    return word in lang.before_number or word in lang.references


def _word_start(para: str, at: int) -> int:
    """Start of the word that ends at `at`, looking back at most _WINDOW characters."""
    low = at - _WINDOW if at > _WINDOW else 0
    space = para.rfind(" ", low, at)
    return space + 1 if space >= 0 or not low else low


def _word_before(chunk: str) -> str:
    """The word without opening quotes or brackets, and after a bracket inside it ("montanha»(pág")."""
    if "(" in chunk:
        chunk = chunk.rpartition("(")[2]
    return chunk.lstrip(OPENERS + "»›")  # German quotes open with »


def _period_ends_sentence(para: str, at: int, nxt: str, lang: Language) -> bool:
    """A single period at `at` followed by whitespace and `nxt` (not lowercase)."""
    word_start = _word_start(para, at)
    word = _word_before(para[word_start:at])
    if (
        len(word) > 1 + lang.short_abbreviations
        and word.isalpha()
        and not nxt[0].isdigit()
        and word not in lang.listed
        and word.lower() not in lang.listed
        and not (lang.suffixes and word.lower().endswith(lang.suffixes))
        and not (lang.ordinals and word.isupper())
    ):
        return True  # the common case, answered early: a plain word that is in no list (speed)
    key = _lookup_key(word)
    dotted = "." in word and _DOTTED.fullmatch(word)
    if nxt[0].isdigit() or nxt[0] == "?":
        # "p. 55", "No. 5", "N°. 1026", "U.S. 1869" continue; "in 1990. 2000 people", "item. 2. The" end;
        # "??" is a number LaTeX could not resolve ("Fig. ??")
        short = len(word) <= 2 and word.lower() != word.upper()  # letters with case: not digits, not Hangul
        return not (_listed(word, key, lang.before_number, lang) or short or dotted)
    if key in lang.prepositive or word in lang.prepositive:
        return False  # "Mr. Smith", "Mt. Fuji"
    opener = nxt.lower() in lang.starters
    if lang.ordinals and (word.isdigit() and len(word) <= 3 or word.isupper() and _ROMAN.fullmatch(word)):
        return opener  # "am 3. Oktober", "der 2. Weltkrieg", "Ludwig XIV. König" are ordinals
    if lang.short_abbreviations and 0 < len(word.rpartition(".")[2]) <= lang.short_abbreviations:
        return opener  # Devanagari initials and short forms: "बी.सी.", "डॉ."
    if len(word) == 1 and word.lower() != word.upper():
        if word == "I" and word_start >= 2 and lang.code == "en":
            # The pronoun ends a sentence after a lowercase word ("you and I."); "Albert I. Jones" does not.
            before = para[_word_start(para, word_start - 1) : word_start - 1]
            if before[:1].islower():
                return True
        return opener  # an initial: "Jonas E. Smith", but "Plan B. The" ends
    if key in _CLOCK:
        return True  # "at 6 p.m. Travelers": a time ends clauses far more often than it precedes a name
    if dotted or _listed(word, key, lang.abbreviations, lang):
        return opener  # "U.S. How" ends, "U.S. Government" and "Inc. Jobs" do not
    return True


def _listed(word: str, key: str, words: frozenset[str], lang: Language) -> bool:
    """`word` is in the list: lowercased (`key`), as written (capitals: "EE", "TP"), or by its ending."""
    return key in words or word in words or (bool(lang.suffixes) and key.endswith(lang.suffixes))


def _lookup_key(word: str) -> str:
    """The form looked up in the word lists: lowercase, the last part of "July-Sept"; none for "MS", "CO"
    (capitals are acronyms, not the abbreviations "Ms." and "Co.")."""
    if len(word) > 1 and word.isupper() and "." not in word:
        return ""
    return _PART.split(word)[-1].lower() if "-" in word or "/" in word else word.lower()


def _lowercase_opens(para: str, match: re.Match, punct: str, nxt: str, lang: Language) -> bool:
    if match.group("close"):
        return False  # '"Great." she said', "(an engineer.) at the"
    if punct != ".":
        if "." in punct or "…" in punct:
            return False  # an ellipsis: "really ... well, what I mean"
        # After "?" a lowercase word starts a new sentence; after "!" only a common opener ("Yahoo! in").
        return ("?" in punct and lang.lowercase_after_question) or nxt in lang.after_exclamation
    word = _word_before(para[_word_start(para, match.start()) : match.start()])
    key = _lookup_key(word)
    if len(word) < 2 or _listed(word, key, lang.before_number, lang):
        return False
    if "." in word and _DOTTED.fullmatch(word):
        return False
    # A common opener after any other word, or any word after a plain lowercase word of four or more letters
    # (short unknown words may be abbreviations: "fl.", "ssp."); a lone letter ("years. s") is debris.
    plain = len(word) >= 4 and word.isalpha() and word.islower() and lang.lowercase_after_word
    return nxt in lang.lowercase_starters or (plain and len(nxt) > 1)


def _ellipsis_cut(para: str, match: re.Match, punct: str, nxt: str, end: int) -> int:
    start = match.start()
    if start and para[start - 1] in "[(" and match.group("close")[:1] in "])":
        return -1  # "[...]" or "(...)" marks an omission inside a quotation
    dots = punct.count(".") + 3 * punct.count("…")
    if dots >= 4:
        if " " in punct and start and not para[start - 1].isspace():
            # "compounds. . . . The": a period ends the sentence, the spaced ellipsis opens the next one.
            return start + 1
        return end  # a period plus an ellipsis: "that.... She", "period . . . . Next"
    # Three dots: an omission inside a sentence unless what follows clearly opens a new one (a capital).
    return end if nxt != "I" and not (nxt[0].isalpha() and not nxt[0].isupper()) else -1


def _may_hold_list(para: str) -> bool:
    # Cheap tests first; the consecutive-label check in _list_cuts runs only when one of these succeeds.
    return any(b in para for b in BULLETS) or _MAYBE_MARKER.search(para) is not None


def _list_cuts(para: str) -> tuple[list[int], set[int]]:
    """Cuts before list items, and the positions of the markers' own periods (which are not boundaries).

    A marker counts only inside a run of consecutive labels in one style ("1." "2." or "a)" "b)") that starts
    the paragraph or starts at 1 / a, so a stray "p. 55" or "scored 3) and 7)" is left to the other rules.
    Positions are compared with the paragraph's first non-space character, never by copying the text before
    them, so a long line costs linear time.
    """
    first_text = len(para) - len(para.lstrip())  # text before i is not blank exactly when i > first_text
    first_item = len(para) - len(para.lstrip(" " + BULLETS))
    cuts = [b.start() for b in _BULLET.finditer(para) if b.start() > first_text]
    by_style: dict[str, list[tuple[int, re.Match]]] = {}
    for m in _MARKER.finditer(para):
        label = m.group("label")
        value = int(label) if label.isdigit() else ord(label) - ord("a") + 1
        by_style.setdefault(m.group("style"), []).append((value, m))
    skip: set[int] = set()
    for markers in by_style.values():
        first = 0  # index of the first marker of the current run of consecutive labels
        for k, (value, m) in enumerate(markers):
            if k and markers[k - 1][0] != value - 1:
                first = k
            continues = k + 1 < len(markers) and markers[k + 1][0] == value + 1
            start_value, start = markers[first]
            if (k == first and not continues) or not (start_value == 1 or start.start() <= first_item):
                continue
            skip.add(m.start("style"))
            cut = m.start()
            before = cut - 1
            while before > first_text and para[before].isspace():
                before -= 1
            if before >= first_text and para[before] in BULLETS:
                cut = before  # "• 10. The item": the bullet starts the item
            if cut > first_text:
                cuts.append(cut)
    return cuts, skip
