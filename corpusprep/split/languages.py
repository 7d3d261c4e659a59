"""Per-language knowledge for the default splitter: abbreviations, sentence openers and ordinals.

The lists are the common abbreviations of each language (style guides, dictionaries' abbreviation tables), not
words seen in an evaluation set. What each list means (all entries lowercase unless written in capitals, which
then match only in capitals, e.g. Spanish "EE. UU."):

- prepositive: titles and words that precede a name or a number: a period after them never ends a sentence.
- abbreviations: may end a sentence: after them a capitalised word starts a new sentence only when it is one
  of the language's common sentence openers (`starters`). Left out on purpose: the "etc." of each language
  (etc, usw, jne, itd, itp, ecc, osv, enz, dll, vb), which ends its sentence far more often than not, so
  that it is treated like a word (a capital after it starts a sentence, a lowercase word goes on).
- before_number: abbreviations that precede a number ("Nr. 5", "S. 12"), as well as the ones above.
- suffixes: abbreviated word endings ("Hauptstr.": German street names).
- ordinals: a number or Roman numeral with a period is an ordinal ("am 3. Oktober", "der 2. Weltkrieg",
  "19. yüzyıl") unless a sentence opener follows.

A language without data here uses the language-independent rules: every script's terminal marks, initials,
numbers and lists, and no word lists (so an abbreviation before a capital is kept in the sentence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corpusprep.split import lexicon


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Language:
    code: str
    prepositive: frozenset[str] = frozenset()
    abbreviations: frozenset[str] = frozenset()
    before_number: frozenset[str] = frozenset()
    starters: frozenset[str] = frozenset()
    lowercase_starters: frozenset[str] = frozenset()
    after_exclamation: frozenset[str] = frozenset()  # lowercase words that open a sentence after "!"
    exclamation_names: frozenset[str] = frozenset()  # names written with "!" ("Yahoo!"), lowercase
    references: frozenset[str] = frozenset()  # nouns before a number ("Section 3", "Table ??")
    suffixes: tuple[str, ...] = ()
    ordinals: bool = False
    terminals: str = ".!?…‽‼⁇⁈⁉"  # Latin-style marks: a boundary needs whitespace after them
    # "really? they said": informal English opens sentences in lowercase after "?"; edited text in other
    # languages goes on ("¿Qué? dijo", "make-maka? föräldrar-barn?")
    lowercase_after_question: bool = False
    lowercase_after_word: bool = True  # "great place. i loved it": informal text
    short_abbreviations: int = 0  # words this short before "." are abbreviations (Devanagari "डॉ.")
    candidates: re.Pattern = field(init=False, repr=False, compare=False)
    listed: frozenset[str] = field(init=False, repr=False, compare=False)  # in any list: the slow path

    def __post_init__(self) -> None:
        object.__setattr__(self, "before_number", self.before_number | self.abbreviations)
        object.__setattr__(self, "listed", self.before_number | self.prepositive)
        object.__setattr__(self, "candidates", candidate_regex(self.terminals))


# Quotation marks in every convention, as they may close a quotation right after a sentence's last mark, and
# as they may open one before a sentence's first word (» and › open in German and Danish, close in French);
# the spaces French typography puts inside guillemets (a space, a no-break space, a narrow no-break space);
# only typographic marks are taken as opening before a space ("« Où"): a straight quote there closes as often
CLOSING_QUOTES = "\"'”’»›“‘«‹"
OPENING_QUOTES = "\"'“‘«‹„‚»›"
SPACED_OPENERS = "«‹»›„“"
SPACES = " \u00a0\u202f\u2009"


def candidate_regex(terminals: str) -> re.Pattern:
    """Candidates after Latin-style marks: `terminals` are the language's sentence-final characters."""
    t = re.escape(terminals)
    return re.compile(
        # a run of terminal marks or a spaced ellipsis ". . ."; starting with a plain character class lets the
        # regex engine skip ahead quickly (an alternation here made the whole scan five times slower)
        rf"(?P<punct>[{t}](?:(?:[ ]\.){{2,}}|[{t}]*))"
        # closing quotes and brackets, footnote marks "[12]" and page marks ".:211" stay with the sentence,
        # and so does a tokenised closing quote " ''" (its opening twin is ``). Quotes close in every
        # convention: ” ’ » › (English, French, Swedish), “ ‘ « ‹ (German „…“ ‚…‘ »…«, Danish, Czech); a
        # closing mark that stands alone after a space closes too ("Jeannette ! » Puis": French spaces its
        # guillemets, with a space, a no-break space or a narrow one), but only » › ”, which never open
        # before a space (« and “ do: "« Où", "“ Hello")
        rf"(?P<close>(?:[{CLOSING_QUOTES})\]}}]|[{SPACES}]+[»›”](?=\s|$|\[)|\[\d{{1,3}}\]"
        r"|:\d{1,4}(?:[–-]\d{1,4})?(?=\s)|[ ]''(?=\s))*)"
        r"\s+"
        # the next word, kept for the decision, after opening quotes ("»Komm", "« Où"; ",," is a typed low
        # quote in Dutch)
        rf"(?=(?:[{SPACED_OPENERS}][{SPACES}]|[{OPENING_QUOTES}(\[{{¿¡]|,,)*"
        rf"(?P<next>[^\s{OPENING_QUOTES}(\[{{¿¡]\w*\.?))"
    )


# Titles and company abbreviations that other languages borrow from English ("Mr. Frost", "Warner Bros.").
_BORROWED_PREPOSITIVE = "mr mrs ms dr prof st rev"
_BORROWED_ABBREVIATIONS = "bros corp inc ltd vs ph"


def _lang(code: str, prepositive: str = "", abbreviations: str = "", before_number: str = "",
          starters: str = "", **options) -> Language:
    return Language(
        code,
        _words(prepositive + " " + _BORROWED_PREPOSITIVE),
        _words(abbreviations + " " + _BORROWED_ABBREVIATIONS),
        _words(before_number),
        _words(starters),
        **options,
    )


ENGLISH = Language(
    "en",
    prepositive=lexicon.PREPOSITIVE,
    abbreviations=lexicon.ABBREVIATIONS,
    before_number=lexicon.BEFORE_NUMBER,
    starters=lexicon.SENTENCE_STARTERS,
    lowercase_starters=lexicon.LOWERCASE_STARTERS,
    after_exclamation=lexicon.AFTER_EXCLAMATION,
    exclamation_names=lexicon.EXCLAMATION_NAMES,
    references=lexicon.REFERENCES,
    lowercase_after_word=True,
    lowercase_after_question=True,
)

_DE = _lang(
    "de",
    prepositive="dr prof hr hrn fr frl dipl ing st sr mag univ",
    abbreviations="""
    abb abk abs abt allg anh anm art aufl bd bde bearb bes betr bsp bspw bzgl bzw ca chr co dgl dipl ebd
    einschl engl entspr erg ev evtl exkl fa ff frz geb gebr gegr gem gest ggf ggfs hbf hg hl hrsg inkl
    insb
    jh jhd jhs jr kap kath kfm kgl lat lfd lt max mio min mind mrd mrz nachf nördl näml od orig östl pkt pl
    rd röm sog spr std stellv str südl tägl tel u v verf vgl vs westl wg zb zit zt zzgl zzt
    jan feb febr apr jun jul aug sep sept okt nov dez
    """,
    before_number="nr s abs art ziff tab fig bd kap no",
    starters="""
    der die das den dem des ein eine einer einem eines er sie es ich wir ihr man in im am an auf aus bei mit
    nach von vom vor zu zum zur für über unter um durch gegen ohne seit während wegen als wenn weil da dann
    doch aber und oder denn so auch nur noch schon nicht kein keine dies diese dieser dieses jener alle viele
    einige mein meine sein seine unser unsere wie was wer wo warum wann welche welcher welches hier dort heute
    gestern morgen nun jetzt damit deshalb daher trotzdem außerdem zudem ja nein bitte danke dabei dazu
    darüber dafür danach hierbei insgesamt allerdings jedoch also zwar bereits leider
    """,
    suffixes=("str",),
    ordinals=True,
)

_FR = _lang(
    "fr",
    prepositive="m mm mme mmes mlle mlles dr pr me mgr st ste sts stes vve",
    abbreviations="""
    apr av bd boul cf chap ch coll dép éd env ex fig hab janv févr avr juil sept oct nov déc lun mar mer
    jeu ven sam dim min max réf sq vol vs cie éts qqch qqn resp suiv tél hon
    """,
    before_number="n° no nos p pp t art al chap fig vol",
    starters="""
    le la les l un une des de du d il elle ils elles on je j nous vous ce c cette ces cet en dans à au aux
    pour par sur sous avec sans mais et ou donc car puis ensuite alors si s quand lorsque comme depuis après
    avant selon malgré pendant cependant toutefois pourtant ainsi enfin mon ma mes son sa ses leur leurs notre
    nos votre vos qui que qu quoi où comment pourquoi tout tous toute toutes y il ne n pas voici voilà
    aujourd hier demain oui non merci
    """,
)

_ES = _lang(
    "es",
    prepositive="sr sra srta sres sras d dña dn dr dra lic ing arq prof sto sta gral fr sor",
    abbreviations="""
    aprox avda av c cap cf cía col dept dpto ej fig ib ibid ed admón atte tel vol vols ene feb mar abr
    jun jul ago sep sept oct nov dic a.c d.c adj bco ud uds vd vds vda hnos izq dcha máx mín
    EE UU AA FF CC OO SS RR HH JJ
    """,
    before_number="n nº núm pág págs p pp art cap km",
    starters="""
    el la los las un una unos unas lo de del en con por para sin sobre entre desde hasta según durante tras
    ante él ella ellos ellas yo tú nosotros usted ustedes se su sus mi mis este esta estos estas ese esa eso
    esto aquel pero y o ni que como cuando donde si aunque porque pues además sin también tampoco no sí ya
    hoy ayer así luego después antes entonces al hay es fue era son está todo todos cada muchos algunos otro
    otra qué cómo cuándo dónde quién cuál muy me te nos les le gracias
    """,
)

_PT = _lang(
    "pt",
    prepositive="sr sra srs sras srta dr dra drs dras prof profa eng arq d sto sta s exmo exma pe",
    abbreviations="""
    av ap apto aprox cap cf cia dept ex fl fig jan fev mar abr jun jul ago set out nov dez séc tel vol
    obs ltda lda cx gov min dir adj
    """,
    before_number="n nº núm pág págs p pp art",
    starters="""
    o a os as um uma uns umas de do da dos das em no na nos nas por pelo pela para com sem sobre entre ele ela
    eles elas eu nós você vocês se seu sua seus suas meu minha este esta isto esse essa isso aquele aquela mas
    e ou que como quando onde porque porém também já não sim hoje ontem assim depois antes então há é foi era
    são está todo todos cada muitos alguns outro outra segundo após durante ao aos à às
    """,
)

_IT = _lang(
    "it",
    prepositive="sig sigg dott prof avv ing arch geom rag on mons s ss sen dr gent egr",
    abbreviations="""
    ca cfr es fig ed gen feb mar apr mag giu lug ago set ott nov dic tel vol ca ss sgg seg segg
    """,
    before_number="n nn pag pagg p pp art cap",
    starters="""
    il lo la i gli le l un uno una di del della dei degli delle in nel nella con per su sul tra fra da dal
    dalla a al alla lui lei loro io noi voi egli essa esso questo questa quello quella ma e o che come quando
    dove se perché però anche già non sì oggi ieri così dopo prima poi allora c è era sono tutto tutti ogni
    molti alcuni altro altra secondo durante inoltre tuttavia infatti quindi
    """,
)

_NL = _lang(
    "nl",
    prepositive="dhr mevr mr dr drs ir ing prof st jhr mgr",
    abbreviations="""
    adv afb afd alg bijv bv ca cf ct evt ex fig max min mln mld mrd pag resp sept tel vgl vnl zgn
    jan feb mrt apr jun jul aug sep okt nov dec
    """,
    before_number="nr nrs blz art p pp",
    starters="""
    de het een die dat deze dit er hij zij ze wij we jij je u ik men in op aan met van voor na bij door uit
    over onder om tot naar maar en of want dus toch ook nog niet geen al alle veel als wanneer toen omdat
    hoewel terwijl dan nu daar hier wat wie waar waarom hoe welke zo ja nee
    """,
)

_SV = _lang(
    "sv",
    prepositive="dr prof st",
    abbreviations="""
    dvs ca kl resp jfr enl inkl exkl bl fig tel vard äv f d jan feb apr jun jul aug sep sept okt nov
    dec fr tr
    """,
    before_number="nr s sid kap",
    starters="""
    den det de en ett han hon vi jag ni man i på av med till från för om under efter vid men och eller så
    som när då nu här där detta dessa denna vilket vad vem var hur varför alla många ingen inte också
    sedan dock därför enligt
    """,
)

_FI = _lang(
    "fi",
    prepositive="prof tri ht",
    abbreviations="""
    esim ns nk ks vrt mm n ts ko em huom klo kpl puh os v vs toim milj mrd ekr jkr eaa jaa
    tammik helmik maalisk huhtik toukok kesäk heinäk elok syysk lokak marrask jouluk
    engl ruots saks ransk lat kreik jap kiin ven ukr suom
    """,
    before_number="nro s",
    starters="""
    hän he se ne minä me te sinä tämä nämä mutta ja tai sekä kun jos koska vaikka että niin myös sitten nyt
    siksi lisäksi kuitenkin mikä kuka missä miksi miten kaikki jokainen monet ei en emme olen on oli ovat
    olivat vuonna siellä täällä tänään eilen
    """,
    # Ordinals are followed by an inflected lowercase word ("3. heinäkuuta"), which the lowercase rule keeps;
    # a capital after a number with a period ends the sentence far more often ("sijalle 13. Iglesias").
)

_RU = _lang(
    "ru",
    prepositive="им ул пр просп пер наб пл д кв св акад проф доц ген г",
    abbreviations="""
    т тт см стр рис табл гл изд род ок тыс млн млрд руб коп долл гг вв вв н э др пр ср напр обл р оз пос
    с о ст илл прим сокр англ нем франц лат греч
    """,
    before_number="№ с стр т рис табл гл",
    starters="""
    в во на с со к ко по из за от до для о об при без он она оно они я мы вы ты это этот эта эти тот та те
    но и а или однако также кроме после перед когда если хотя потому так что где кто почему все всё его её
    их ее там здесь тогда затем впоследствии сейчас сегодня вчера
    """,
)

_PL = _lang(
    "pl",
    prepositive="dr prof mgr inż ks św gen płk kpt im ppłk mjr por",
    abbreviations="""
    r w ul al pl os np tzn tj ok godz tys mln mld zł gr proc ds hab ang łac niem franc ros
    sty lut mar kwi cze lip sie wrz paź lis gru pn wt śr czw pt sob ndz tzw wg zob por jw
    """,
    before_number="nr s str poz art ust pkt tab rys",
    starters="""
    w we z ze na do od po przez dla o u przy za pod nad przed między jest był była było są to ten ta te ci
    tego jego jej ich on ona ono oni one ja my wy ty nie tak ale i a lub oraz czy że jak gdy kiedy jeśli
    choć chociaż jednak także również już według podczas dzięki tam tu teraz dziś wtedy potem następnie
    ponadto natomiast wszyscy każdy wiele niektóre
    """,
    # As in Finnish: "zajął 3. miejsce" is kept by the lowercase rule; a capital after "1990 r." is checked
    # against the sentence openers like any abbreviation.
)

_TR = _lang(
    "tr",
    prepositive="dr prof doç yrd av alb gen org hz sn sayın",
    abbreviations="""
    vs örn bkz yy s dr cad sok mah apt tel ltd şti bl kr mö ms oca şub mar nis haz tem ağu eyl eki kas
    ara
    """,
    before_number="no nr s sf",
    starters="""
    bu şu o ben sen biz siz onlar ama ve veya ile ne nasıl neden niçin kim nerede ancak fakat çünkü eğer bir
    her hiç daha en sonra önce şimdi bugün dün ayrıca yani böylece bunun bunlar onun
    """,
    ordinals=True,
)

_ID = _lang(
    "id",
    prepositive="tn ny nn sdr bpk dr drs dra ir prof h hj kh tb r rd st",
    abbreviations="""
    dkk yth tsb sbb spt hlm jl jln kab kec kel prov tgl thn th rp no dsn dk JL RS
    """,
    before_number="no hlm",
    starters="""
    ia dia mereka kami kita saya aku anda ini itu tetapi namun dan atau jika karena meskipun ketika saat
    setelah sebelum selain dengan di ke dari pada untuk dalam oleh yang ada tidak juga sudah akan bagi
    menurut sementara apa siapa bagaimana mengapa kenapa
    """,
)

_VI = _lang(
    "vi",
    prepositive="TP Tp tp Q P GS PGS TS ThS Ths BS KS TT ông bà",
    starters="",
)

_EL = _lang(
    "el",
    prepositive="κ κα δρ καθ",
    abbreviations="δηλ κλπ κτλ βλ σελ αρ χλμ εκ π.χ",
    terminals=".!?…;;",
)

# Scripts that end sentences with the danda "।": a period follows abbreviations ("डॉ.", "बी.सी.").
_INDIC = {code: _lang(code, short_abbreviations=3) for code in ("as", "bn", "hi", "mr", "ne", "pa", "sa")}

# Languages that write ordinals with a period ("3. května", "3. maj", "3. tammikuuta"): no other data yet.
_ORDINAL_ONLY = _words("bs cs da et eu fo hr hu is lv nb nn no sk sl sq sr")

_WITH_LISTS = (ENGLISH, _DE, _FR, _ES, _PT, _IT, _NL, _SV, _FI, _RU, _PL, _TR, _ID, _VI, _EL)
LANGUAGES: dict[str, Language] = {lang.code: lang for lang in _WITH_LISTS}
LANGUAGES |= _INDIC | {code: _lang(code, ordinals=True) for code in _ORDINAL_ONLY}
NEUTRAL = _lang("xx")  # the language-independent rules

# ISO 639-1: every code is accepted; those not in LANGUAGES use NEUTRAL (the script's marks still count).
ISO_639_1 = _words(
    """
    aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz
    ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik
    io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml
    mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd
    se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve
    vi vo wa wo xh yi yo za zh zu
    """
)


def base_code(code: str) -> str:
    """"pt-BR", "zh_Hant", "DE" -> "pt", "zh", "de"."""
    return code.replace("_", "-").split("-")[0].lower()


def find_language(code: str) -> Language | None:
    """The data for an ISO 639-1 code (see base_code), NEUTRAL for a code without data, None for something
    that is not a code."""
    base = base_code(code)
    if base in LANGUAGES:
        return LANGUAGES[base]
    return NEUTRAL if base in ISO_639_1 else None
