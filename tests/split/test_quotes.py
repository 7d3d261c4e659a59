"""Quotation marks as sentence context, in every convention: French spaced guillemets (with spaces, no-break
spaces or narrow ones), German »…« „…“ ‚…‘, and the marks of other languages; real prose passages (public
domain: Maupassant's Bel-Ami, 1885; Fontane's Der Stechlin, 1898; Vischer's Auch Einer, 1879, as ELTeC
prints them) rather than single strings, and the invariants on quote-heavy random text."""

from __future__ import annotations

import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.split import get_splitter
from tests.split.test_rules import keeps_every_character

NBSP, NNBSP = "\u00a0", "\u202f"

# Bel-Ami: guillemets with spaces inside, "?" and "!" after a space; a quotation ends a sentence when a
# capital follows it, goes on when a lowercase word does.
BEL_AMI = [
    (
        "L'autre l'interrompit : « Allons, c'est bon. Encore un bock, n'est-ce pas ? » Et il cria : "
        "« Garçon, deux bocks ! »",
        ["L'autre l'interrompit : « Allons, c'est bon.", "Encore un bock, n'est-ce pas ? »",
         "Et il cria : « Garçon, deux bocks ! »"],
    ),
    (
        "Après un grand effort, il ajouta : « Elle est habitée en partie par des Arabes… » Puis il jeta sa "
        "plume sur la table et se leva.",
        ["Après un grand effort, il ajouta : « Elle est habitée en partie par des Arabes… »",
         "Puis il jeta sa plume sur la table et se leva."],
    ),
    (
        "Il pensa : « Que vais-je faire, maintenant ? » Et il se décida à aller à son bureau toucher son "
        "mois et donner sa démission. Il tressaillait d'avance de plaisir.",
        ["Il pensa : « Que vais-je faire, maintenant ? »",
         "Et il se décida à aller à son bureau toucher son mois et donner sa démission.",
         "Il tressaillait d'avance de plaisir."],
    ),
    (
        "Il avait envie d'ajouter : « Mais pas autant que vous. » Il n'osa point.",
        ["Il avait envie d'ajouter : « Mais pas autant que vous. »", "Il n'osa point."],
    ),
    (
        "Forestier demanda : « Où loge-t-il ? » Et comme il avait manqué son trente-septième coup, il ouvrit "
        "une armoire. « Qu'as-tu ? » répondit-il. « Rien ! » fit Duroy, « rien du tout. » Le garçon parut.",
        ["Forestier demanda : « Où loge-t-il ? »",
         "Et comme il avait manqué son trente-septième coup, il ouvrit une armoire.",
         "« Qu'as-tu ? » répondit-il.", "« Rien ! » fit Duroy, « rien du tout. »", "Le garçon parut."],
    ),
    (
        "Elle cria : « Jeannette ! » Puis rien. Il dit : « Vous ne doutez pas que je ne partage… ? » Elle se "
        "tut.",
        ["Elle cria : « Jeannette ! »", "Puis rien.", "Il dit : « Vous ne doutez pas que je ne partage… ? »",
         "Elle se tut."],
    ),
]


def _typeset(text: str, space: str) -> str:
    """French typography with another space inside guillemets and before ? ! : (what ELTeC's texts and
    typesetting software write)."""
    for mark in ("« ", " »", " ?", " !", " :"):
        text = text.replace(mark, mark.replace(" ", space))
    return text


@pytest.mark.parametrize("space", [" ", NBSP, NNBSP], ids=["space", "no-break", "narrow-no-break"])
@pytest.mark.parametrize(("text", "expected"), BEL_AMI, ids=range(len(BEL_AMI)))
def test_french_guillemets_stay_with_their_sentence(text, expected, space):
    split = get_splitter("default", "fr")
    assert split(_typeset(text, space)) == [_typeset(s, space) for s in expected]


def test_a_whole_french_dialogue_has_no_lone_guillemet():
    """Every paragraph above at once, in every spacing: no sentence is a lone » or starts with one."""
    split = get_splitter("default", "fr")
    for space in (" ", NBSP, NNBSP):
        text = "\n".join(_typeset(t, space) for t, _ in BEL_AMI)
        sentences = split(text)
        assert len(sentences) == sum(len(e) for _, e in BEL_AMI)
        assert not [s for s in sentences if s[0] == "»" or not any(c.isalpha() for c in s)]


# German novels: »…« (Fontane), „…“ and ‚…‘ (Vischer); the quotation's closing mark comes right after the
# sentence's last mark.
GERMAN = [
    (
        "Man hielt an, und jeder zählte. »Vier.« Kaum aber hatte die Uhr ausgeschlagen, so begann eine "
        "zweite.",
        ["Man hielt an, und jeder zählte.", "»Vier.«",
         "Kaum aber hatte die Uhr ausgeschlagen, so begann eine zweite."],
    ),
    (
        "Dubslav hatte nach Lorenzens Besuch eine gute Nacht. »Wenn man mal so was andres hört, wird einem "
        "gleich besser.« Aber auch der Katzenpfötchentee fuhr fort, seine Wirkung zu tun.",
        ["Dubslav hatte nach Lorenzens Besuch eine gute Nacht.",
         "»Wenn man mal so was andres hört, wird einem gleich besser.«",
         "Aber auch der Katzenpfötchentee fuhr fort, seine Wirkung zu tun."],
    ),
    (
        "»Ja«, sagte Imme, »das is unsrem Freund Hartwig seiner.« Hartwig selber aber rief: »Na, Rudolf, was "
        "gibt's? Du willst mich holen.« »Jana!« Dann ging er.",
        ["»Ja«, sagte Imme, »das is unsrem Freund Hartwig seiner.«", "Hartwig selber aber rief: »Na, Rudolf, "
         "was gibt's?", "Du willst mich holen.«", "»Jana!«", "Dann ging er."],
    ),
    (
        "Er rief heftig: „Wer das kann, der nimmt's auch noch mit manchem Jäger auf! Komm, Ryno, wir gehen!“ "
        "Und er war hinweg. „Komm herein.“ Dann schwieg er.",
        ["Er rief heftig: „Wer das kann, der nimmt's auch noch mit manchem Jäger auf!", "Komm, Ryno, wir "
         "gehen!“", "Und er war hinweg.", "„Komm herein.“", "Dann schwieg er."],
    ),
    (
        "Dann sagte er: ‚Armes, treues Thier, hast mir nicht helfen können.‘ Nach einer Pause stammelte "
        "er.",
        ["Dann sagte er: ‚Armes, treues Thier, hast mir nicht helfen können.‘",
         "Nach einer Pause stammelte er."],
    ),
    (
        # an abbreviation, a title or an initial ends the quotation it closes
        "Er sprach von Büchern, Bildern usw.“ Dann ging er. Sie sagte: »Ob ich's mag.« Der Lehrer nickte. "
        "Darauf stand: »Ein Gruß aus B.« Dahinter nichts.",
        ["Er sprach von Büchern, Bildern usw.“", "Dann ging er.", "Sie sagte: »Ob ich's mag.«",
         "Der Lehrer nickte.", "Darauf stand: »Ein Gruß aus B.«", "Dahinter nichts."],
    ),
    (
        # an interrupted quotation at a paragraph's end stays with its sentence; one that opens after a period
        # starts a sentence even in lowercase ("'s" is "es")
        "Sie sah mich groß an. »'s ist wohl nicht richtig?« fragte sie. »Wie kannst Du Dich unterstehen! –«",
        ["Sie sah mich groß an.", "»'s ist wohl nicht richtig?« fragte sie.",
         "»Wie kannst Du Dich unterstehen! –«"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), GERMAN, ids=range(len(GERMAN)))
def test_german_quotes_close_where_the_sentence_ends(text, expected):
    assert get_splitter("default", "de")(text) == expected


# Other conventions (short passages of the kind their novels and newspapers print).
OTHER_LANGUAGES = [
    ("ru", "Он сказал: «Я приду завтра.» Потом ушёл. «Куда ты?» — спросила она. «Домой!» Дверь закрылась.",
     ["Он сказал: «Я приду завтра.»", "Потом ушёл.", "«Куда ты?» — спросила она.", "«Домой!»",
      "Дверь закрылась."]),
    ("fr", "Le Conseil fédéral a dit : «Nous verrons.» Puis il a levé la séance. «Et après?» demanda-t-on.",
     ["Le Conseil fédéral a dit : «Nous verrons.»", "Puis il a levé la séance.",
      "«Et après?» demanda-t-on."]),  # Swiss French: no space inside
    ("pl", "Powiedział: „Przyjdę jutro.” Potem wyszedł. „Dokąd?” — zapytała. „Do domu!” Drzwi się zamknęły.",
     ["Powiedział: „Przyjdę jutro.”", "Potem wyszedł.", "„Dokąd?” — zapytała.", "„Do domu!”",
      "Drzwi się zamknęły."]),
    ("cs", "Řekl: „Přijdu zítra.“ Potom odešel. „Kam jdeš?“ zeptala se. „Domů!“ Dveře se zavřely.",
     ["Řekl: „Přijdu zítra.“", "Potom odešel.", "„Kam jdeš?“ zeptala se.", "„Domů!“", "Dveře se zavřely."]),
    ("sv", "Han sade: ”Jag kommer i morgon.” Sedan gick han. ”Vart går du?” frågade hon. »Hem!» Dörren slogs "
     "igen.",
     ["Han sade: ”Jag kommer i morgon.”", "Sedan gick han.", "”Vart går du?” frågade hon.", "»Hem!»",
      "Dörren slogs igen."]),
    ("fi", "Hän sanoi: ”Tulen huomenna.” Sitten hän lähti. »Minne menet?» kysyi tyttö. ”Kotiin!” Ovi "
     "sulkeutui.",
     ["Hän sanoi: ”Tulen huomenna.”", "Sitten hän lähti.", "»Minne menet?» kysyi tyttö.", "”Kotiin!”",
      "Ovi sulkeutui."]),
    ("da", "Han sagde: »Jeg kommer i morgen.« Så gik han. »Hvor skal du hen?« spurgte hun. »Hjem!« Døren "
     "smækkede.",
     ["Han sagde: »Jeg kommer i morgen.«", "Så gik han.", "»Hvor skal du hen?« spurgte hun.", "»Hjem!«",
      "Døren smækkede."]),
    ("es", "Dijo: «Vendré mañana.» Luego se fue. «¿Adónde vas?», preguntó ella. «¡A casa!» La puerta se "
     "cerró.",
     ["Dijo: «Vendré mañana.»", "Luego se fue.", "«¿Adónde vas?», preguntó ella.", "«¡A casa!»",
      "La puerta se cerró."]),
    ("ja", "彼は「明日来ます。」と言った。「どこへ？」彼女は聞いた。",
     ["彼は「明日来ます。」と言った。", "「どこへ？」", "彼女は聞いた。"]),
]


def test_every_quote_convention():
    """All at once (the ones that already worked guard the others' changes): each language's sentences."""
    got = {language: get_splitter("default", language)(text) for language, text, _ in OTHER_LANGUAGES}
    assert got == {language: expected for language, _, expected in OTHER_LANGUAGES}


# English kinds that used to break a sentence: a name written with "!", LaTeX's unresolved references "??",
# marks spaced out and repeated, a "?" in brackets.
ENGLISH = (
    "She joined Yahoo! Research in 2005 and left in 2009. The lab closed. As shown in Fig. ?? the loss falls "
    "with depth, and Section ?? explains why. The results are in Table ??. That is amazing ! ! ! I did not "
    "expect it. He was born in 1850 (?) in Paris, as [?] reports. I work at Yahoo! The pay is good."
)


def test_english_names_references_and_repeated_marks():
    assert get_splitter("default", "en")(ENGLISH) == [
        "She joined Yahoo! Research in 2005 and left in 2009.",
        "The lab closed.",
        "As shown in Fig. ?? the loss falls with depth, and Section ?? explains why.",
        "The results are in Table ??.",
        "That is amazing ! ! !",
        "I did not expect it.",
        "He was born in 1850 (?) in Paris, as [?] reports.",
        "I work at Yahoo!",
        "The pay is good.",
    ]
    # only the same mark repeated (or a mark after an ellipsis) is one mark: a stray "?" after a period is
    # a unit of its own, as UD English-EWT's gold has it
    assert get_splitter("default", "en")("It is in the Contract. ? Do call us.") == [
        "It is in the Contract.", "?", "Do call us."]


QUOTE_PIECES = [
    "Elle", "cria", "Puis", "rien", "Komm", "dann", "Fig.", "Section", "Yahoo", "?", "!", "??", ".", "…",
    "...", "«", "»", "„", "“", "”", "‚", "‘", "’", "‹", "›", '"', "'", "–", "—", ":", ",", "(", ")", "[",
    "]", "[?]", "(?)", "z.", "usw.", "B.", "3.", " ", " ", " ", NBSP, NNBSP, "\u2009", "\n", "'s",
]


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("language", ["fr", "de", "en", "sv"])
def test_quote_soup_loses_nothing(case, language):
    """Seeded random text of quotes, marks and every space French uses: sentences are stripped, non-empty,
    single-line, and keep every non-whitespace character in order."""
    split = get_splitter("default", language)
    keeps_every_character(split, QUOTE_PIECES, rng_for(0, "split", "quote-soup", case))
