"""The default splitter in other languages: every script's terminal marks, per-language abbreviations and
ordinals, and boundary F1 on the Universal Dependencies dev sets (skipped cleanly without ../shared)."""

from __future__ import annotations

import pytest

from corpusprep.split import get_splitter
from corpusprep.split.evaluate import load_ud_paragraphs, ud_score
from corpusprep.split.languages import LANGUAGES

# (language, text, sentences): each script's marks, with and without a space after them.
SCRIPT_MARKS = [
    (
        "zh",
        "我们走吧。他说：“好！”然后他们走了？真的吗",
        ["我们走吧。", "他说：“好！”", "然后他们走了？", "真的吗"],
    ),
    (
        "zh",
        "他问：“你来吗？”我说不。（这是注释。）结束",
        ["他问：“你来吗？”", "我说不。", "（这是注释。）", "结束"],
    ),
    ("ja", "今日は晴れです。明日は雨でしょう！本当？", ["今日は晴れです。", "明日は雨でしょう！", "本当？"]),
    (
        "ja",
        "「行こう！」と彼は言った。すごい!本当?うん",
        ["「行こう！」と彼は言った。", "すごい!", "本当?", "うん"],
    ),
    (
        "ja",
        "「おはよう。元気？」と彼は言った。「そうだ。」次。",
        ["「おはよう。元気？」と彼は言った。", "「そうだ。」", "次。"],
    ),
    ("ja", "半角も使う｡次の文", ["半角も使う｡", "次の文"]),
    (
        "hi",
        "वह घर गया। फिर वह सो गया॥ क्या तुम आओगे? हाँ।",
        ["वह घर गया।", "फिर वह सो गया॥", "क्या तुम आओगे?", "हाँ।"],
    ),
    ("hi", "डॉ. शर्मा आए। उन्होंने बी.सी. में पढ़ाई की।", ["डॉ. शर्मा आए।", "उन्होंने बी.सी. में पढ़ाई की।"]),
    ("bn", "আমি বাড়ি যাই। তুমি কোথায়?", ["আমি বাড়ি যাই।", "তুমি কোথায়?"]),
    ("ar", "هل أنت بخير؟ نعم، أنا بخير. شكرا!", ["هل أنت بخير؟", "نعم، أنا بخير.", "شكرا!"]),
    ("fa", "کجا هستی؟ من خانه هستم.", ["کجا هستی؟", "من خانه هستم."]),
    ("ur", "یہ میرا گھر ہے۔ آپ کہاں ہیں؟", ["یہ میرا گھر ہے۔", "آپ کہاں ہیں؟"]),
    ("hy", "Ես գնում եմ տուն։ Դու ո՞ւր ես։", ["Ես գնում եմ տուն։", "Դու ո՞ւր ես։"]),
    ("am", "ሰላም ነው። እንዴት ነህ፧ ደህና ነኝ።", ["ሰላም ነው።", "እንዴት ነህ፧", "ደህና ነኝ።"]),
    ("my", "ကျွန်တော် အိမ်ပြန်မယ်။ သူ လာမယ်။", ["ကျွန်တော် အိမ်ပြန်မယ်။", "သူ လာမယ်။"]),
    ("km", "ខ្ញុំទៅផ្ទះ។ គាត់មក។", ["ខ្ញុំទៅផ្ទះ។", "គាត់មក។"]),
    ("el", "Τι ώρα είναι; Είναι αργά. Πάμε!", ["Τι ώρα είναι;", "Είναι αργά.", "Πάμε!"]),
    (
        "ko",
        "나는 집에 간다. 너는 어디 가니? 학교에 간다.",
        ["나는 집에 간다.", "너는 어디 가니?", "학교에 간다."],
    ),
    ("ru", "Он пришёл домой. Что ты делаешь? Ничего!", ["Он пришёл домой.", "Что ты делаешь?", "Ничего!"]),
]


@pytest.mark.parametrize(("language", "text", "expected"), SCRIPT_MARKS)
def test_script_marks(language, text, expected):
    assert get_splitter("default", language)(text) == expected


@pytest.mark.parametrize(("language", "text", "expected"), [case for case in SCRIPT_MARKS if case[0] != "el"])
def test_script_marks_in_any_language(language, text, expected):
    """The marks belong to the script, not the language: English rules find them too (Greek ";" aside)."""
    if language == "hi" and "डॉ" in text:
        pytest.skip("Devanagari abbreviations before a period are Hindi knowledge")
    assert get_splitter("default", "en")(text) == expected


def test_cjk_numbers_and_full_width_periods():
    split = get_splitter("default", "zh")
    assert split("价格是３．５元。Ｕ．Ｓ．Ａ．很大。") == ["价格是３．５元。", "Ｕ．Ｓ．Ａ．很大。"]
    assert split("共有2008年。1956年，改革。") == ["共有2008年。", "1956年，改革。"]
    assert split("他说“谁会想听呢？”。然后走了。") == ["他说“谁会想听呢？”。", "然后走了。"]


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "de",
            "Wir treffen uns am 3. Oktober in Berlin. Kommst du?",
            ["Wir treffen uns am 3. Oktober in Berlin.", "Kommst du?"],
        ),
        (
            "de",
            "Der 2. Weltkrieg endete 1945. Danach kam der Wiederaufbau.",
            ["Der 2. Weltkrieg endete 1945.", "Danach kam der Wiederaufbau."],
        ),
        (
            "de",
            "Im 18. Jahrhundert, z. B. unter Ludwig XIV. König von Frankreich, war das so. Es blieb.",
            ["Im 18. Jahrhundert, z. B. unter Ludwig XIV. König von Frankreich, war das so.", "Es blieb."],
        ),
        (
            "de",
            "Das Büro liegt in der Hauptstr. 5 bzw. Bahnhofstr. Nord. Wir sind da.",
            ["Das Büro liegt in der Hauptstr. 5 bzw. Bahnhofstr. Nord.", "Wir sind da."],
        ),
        (
            "de",
            "Dr. Müller kam um 9 Uhr. Er ging usw. Die Sitzung endete.",
            ["Dr. Müller kam um 9 Uhr.", "Er ging usw.", "Die Sitzung endete."],
        ),
        (
            "fr",
            "M. Dupont est arrivé le 3 janv. 2020 à Paris. Il est reparti.",
            ["M. Dupont est arrivé le 3 janv. 2020 à Paris.", "Il est reparti."],
        ),
        (
            "fr",
            "Mme Curie et Mlle. Roux, cf. p. 12, etc. Le reste suit.",
            ["Mme Curie et Mlle. Roux, cf. p. 12, etc.", "Le reste suit."],
        ),
        (
            "es",
            "El Sr. García viajó a EE. UU. en enero. Volvió en marzo.",
            ["El Sr. García viajó a EE. UU. en enero.", "Volvió en marzo."],
        ),
        (
            "es",
            "Véase la pág. 23 y el núm. 4. Todo está allí.",
            ["Véase la pág. 23 y el núm. 4.", "Todo está allí."],
        ),
        (
            "pt",
            "O Sr. Silva e a Dra. Costa chegaram. Eles saíram.",
            ["O Sr. Silva e a Dra. Costa chegaram.", "Eles saíram."],
        ),
        (
            "it",
            "Il Sig. Rossi e il Dott. Bianchi, pag. 5, sono qui. Poi vanno.",
            ["Il Sig. Rossi e il Dott. Bianchi, pag. 5, sono qui.", "Poi vanno."],
        ),
        (
            "nl",
            "Dhr. Jansen kwam bijv. gisteren. Hij ging weer.",
            ["Dhr. Jansen kwam bijv. gisteren.", "Hij ging weer."],
        ),
        (
            "ru",
            "Он родился в г. Москва в 1990 г. в семье врачей. Потом уехал.",
            ["Он родился в г. Москва в 1990 г. в семье врачей.", "Потом уехал."],
        ),
        (
            "ru",
            "Проф. Иванов, т. е. наш декан, пришёл. Все встали.",
            ["Проф. Иванов, т. е. наш декан, пришёл.", "Все встали."],
        ),
        (
            "pl",
            "Stację otwarto w 2004 r. Stacja ma 2 perony. Dr Nowak, ul. Długa 5, np. tam.",
            ["Stację otwarto w 2004 r. Stacja ma 2 perony.", "Dr Nowak, ul. Długa 5, np. tam."],
        ),
        (
            "pl",
            "Zajął 3. miejsce w 2010 r. W Polsce padało.",
            ["Zajął 3. miejsce w 2010 r.", "W Polsce padało."],
        ),
        (
            "fi",
            "Hän syntyi 3. heinäkuuta 1990 esim. Helsingissä. Sitten hän muutti.",
            ["Hän syntyi 3. heinäkuuta 1990 esim. Helsingissä.", "Sitten hän muutti."],
        ),
        ("fi", "Kokous on klo 10. Se on tärkeä.", ["Kokous on klo 10.", "Se on tärkeä."]),
        (
            "sv",
            "Vi åt bl.a. fisk, t.ex. lax. Det var gott.",
            ["Vi åt bl.a. fisk, t.ex. lax.", "Det var gott."],
        ),
        (
            "tr",
            "19. yüzyıl ve 2. Dünya Savaşı vb. konular. Bu kitap güzel.",
            ["19. yüzyıl ve 2. Dünya Savaşı vb. konular.", "Bu kitap güzel."],
        ),
        (
            "id",
            "Ia tinggal di Jl. Merdeka no. 5 bersama Tn. Budi dll. Dia senang.",
            ["Ia tinggal di Jl. Merdeka no. 5 bersama Tn. Budi dll.", "Dia senang."],
        ),
        ("vi", "Họ về TP. HCM hôm qua . Chúng tôi ở lại .", ["Họ về TP. HCM hôm qua .", "Chúng tôi ở lại ."]),
        (
            "pt",
            "Tinha rosas sem espinhos... -- dizia ele. Depois saiu.",
            ["Tinha rosas sem espinhos... -- dizia ele.", "Depois saiu."],
        ),
        (
            "pt",
            "Está no livro «A Cidade» (pág. 51). O resto não.",
            ["Está no livro «A Cidade» (pág. 51).", "O resto não."],
        ),
        (
            "fi",
            "Ostimme maitoa, leipää jne. Kauppa oli kiinni.",
            ["Ostimme maitoa, leipää jne.", "Kauppa oli kiinni."],
        ),
        (
            "nl",
            "Hij was tevreden. ,,Het ging goed'', zei hij.",
            ["Hij was tevreden.", ",,Het ging goed'', zei hij."],
        ),
        (
            "nl",
            "Ik ben een twijfelaar. '' Gelanceerd door Spijker",
            ["Ik ben een twijfelaar. ''", "Gelanceerd door Spijker"],
        ),
    ],
)
def test_abbreviations_and_ordinals(language, text, expected):
    assert get_splitter("default", language)(text) == expected


def test_ordinals_are_per_language():
    # In English a number then a period ends a sentence: "in chapter 3. The" is not an ordinal.
    assert get_splitter("default", "en")("He read chapter 3. Then he slept.") == [
        "He read chapter 3.",
        "Then he slept.",
    ]
    assert get_splitter("default", "de")("Er las Kapitel 3. Danach schlief er.") == [
        "Er las Kapitel 3.",
        "Danach schlief er.",
    ]  # a sentence opener after the ordinal ends the sentence


def test_every_language_keeps_the_text():
    text = "Dr. A. Smith, z. B. 3. Oktober! 你好。 नमस्ते। Wait... what?! 1. item 2. item • bullet"
    for code in sorted(LANGUAGES):
        sentences = get_splitter("default", code)(text)
        assert all(s and s == s.strip() for s in sentences), code
        assert "".join("".join(sentences).split()) == "".join(text.split()), code


# Best peer's dev F1 per language (pySBD, sentencex or BlingFire; ../shared/sbd/ud/README.md): the target is
# at least that minus 0.01, and 0.95 for zh, ja, hi.
BEST_PEER = {
    "de": 0.964,
    "fr": 0.975,
    "es": 0.977,
    "pt": 0.882,
    "nl": 0.953,
    "ru": 0.976,
    "tr": 0.885,
    "fi": 0.908,
    "sv": 0.964,
    "zh": 0.990,
    "ja": 0.997,
    "ko": 1.000,
    "id": 0.936,
    "vi": 0.962,
    "it": 0.993,
    "pl": 0.977,
    "hi": 0.998,
    "ar": 0.997,
}


@pytest.fixture(scope="module")
def ud_f1(sbd_dir) -> dict[str, float]:
    scores = {}
    for lang in BEST_PEER:
        paragraphs = load_ud_paragraphs(sbd_dir / "ud" / f"{lang}_dev.jsonl", lang)
        scores[lang] = ud_score(get_splitter("default", lang), paragraphs).f1
    return scores


@pytest.mark.shared
@pytest.mark.parametrize("lang", sorted(BEST_PEER))
def test_ud_dev_f1(ud_f1, lang):
    floor = BEST_PEER[lang] - 0.01
    if lang in ("zh", "ja", "hi"):
        floor = max(floor, 0.95)
    assert ud_f1[lang] >= floor


@pytest.mark.shared
def test_ud_dev_macro_f1(ud_f1):
    assert sum(ud_f1.values()) / len(ud_f1) >= 0.96
