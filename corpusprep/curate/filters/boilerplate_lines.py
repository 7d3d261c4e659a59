"""C4's boilerplate rules (Raffel et al. 2020, section 2.2): lines naming JavaScript or a policy notice
("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies") are
taken out; a page holding "lorem ipsum" is removed, and so is one with no line left."""

from corpusprep.curate.filters.base import KEEP, Doc, Filter, Verdict

LINE_PHRASES = ("javascript", "terms of use", "privacy policy", "cookie policy", "uses cookies",
                "use of cookies", "use cookies")
PAGE_PHRASES = ("lorem ipsum",)


class BoilerplateLines(Filter):
    def apply(self, doc: Doc) -> Verdict:
        lowered = doc.text.lower()
        if any(phrase in lowered for phrase in PAGE_PHRASES):
            return Verdict("holds 'lorem ipsum'")
        if not any(phrase in lowered for phrase in LINE_PHRASES):
            return KEEP
        kept = [line for line in doc.text.split("\n") if not any(p in line.lower() for p in LINE_PHRASES)]
        if not any(line.strip() for line in kept):
            return Verdict("every line is boilerplate")
        return Verdict(text="\n".join(kept))


FILTER = BoilerplateLines("boilerplate-lines", "C4 (Raffel et al. 2020, 2.2)",
                          {"line_phrases": LINE_PHRASES, "page_phrases": PAGE_PHRASES})
