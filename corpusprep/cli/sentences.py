"""`corpusprep sentences` (owned by the splitter work; placeholder registration)."""
