"""Normalisation and filtering rules applied to every pair, whatever its source,
plus the markup stripper the gettext extractor uses.

`clean_pair` returns the cleaned pair or the name of the rule that rejected it,
so that the manifest can count drops per reason instead of losing them silently.
"""

import html
import re
import unicodedata

MIN_WORDS = 1
MAX_WORDS = 250
# Bound on the character-length ratio. German runs ~10-30% longer than English;
# 3x after smoothing only rejects misalignments, not verbose translations.
MAX_LENGTH_RATIO = 3.0
# Added to both lengths before the ratio so that "Tab" / "Registerkarte" passes.
RATIO_SMOOTHING = 10

# Only these element names count as markup. A generic <...> pattern would eat
# placeholders such as <filename> or #include <stdio.h> that belong to the text.
MARKUP_TAGS = (
    "a abbr ahelp alt b big bookmark_value br caption case code default del "
    "div em embedvar emph font h1 h2 h3 h4 h5 h6 i image img ins item kbd "
    "keycode li link literal menuitem ol p quote s samp small span strong sub "
    "sup switchinline tt u ul var"
).split()
_TAG_RE = re.compile(
    r"</?(%s)(?:\s+[^<>]*)?\s*/?>" % "|".join(MARKUP_TAGS), re.IGNORECASE)
# Tags that break a line keep a word boundary; inline ones (<b>F</b>ile) must not.
_BLOCK_TAGS = frozenset("br div h1 h2 h3 h4 h5 h6 li ol p ul".split())

_WHITESPACE_RE = re.compile(r"\s+")
# Invisible format characters (soft hyphen, zero-width space/joiners,
# direction marks and embeddings, word joiner, BOM, interlinear annotation):
# they would make otherwise equal segments differ.
_INVISIBLE_RE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb]")
# What no segment may contain after normalisation: C0/C1 controls, surrogates
# (undecodable bytes smuggled through), private-use characters.
_CONTROL_RE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\ue000-\uf8ff"
    "\U000f0000-\U0010ffff]")
_LETTER_RE = re.compile(r"[^\W\d_]")


def strip_markup(text: str) -> str:
    """Remove known HTML/Pango tags and decode character entities."""
    text = _TAG_RE.sub(
        lambda m: " " if m.group(1).lower() in _BLOCK_TAGS else "", text)
    if "&" in text:
        text = html.unescape(text)
    return text


def normalise(text: str) -> str:
    """NFC, no invisible characters, every whitespace run turned into one space."""
    text = unicodedata.normalize("NFC", text)
    text = _INVISIBLE_RE.sub("", text)
    return _WHITESPACE_RE.sub(" ", text).strip()


def _has_control(text: str) -> bool:
    return _CONTROL_RE.search(text) is not None


def _valid_utf8(text: str) -> bool:
    if "\ufffd" in text:  # a decoder already replaced invalid bytes
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from surrogateescape decoding
        return False
    return True


def reject_reason(en: str, de: str) -> str | None:
    """Name of the first rule the (already normalised) pair breaks, or None."""
    if not en or not de:
        return "empty"
    if not (_valid_utf8(en) and _valid_utf8(de)):
        return "invalid-utf8"
    if _has_control(en) or _has_control(de):
        return "control-char"
    if _TAG_RE.search(en) or _TAG_RE.search(de):
        return "markup"
    if not (_LETTER_RE.search(en) and _LETTER_RE.search(de)):
        return "no-letters"
    n_en, n_de = len(en.split()), len(de.split())
    if min(n_en, n_de) < MIN_WORDS or max(n_en, n_de) > MAX_WORDS:
        return "word-count"
    longer, shorter = max(len(en), len(de)), min(len(en), len(de))
    if (longer + RATIO_SMOOTHING) / (shorter + RATIO_SMOOTHING) > MAX_LENGTH_RATIO:
        return "length-ratio"
    if en.casefold() == de.casefold():
        return "untranslated"
    return None


def clean_pair(en: str, de: str) -> tuple[str, str, str | None]:
    """Return (en, de, None) when the pair is kept, or ("", "", reason).

    Each extractor removes the markup of its own format (HTML, roff, Pango);
    markup left over here means the extractor missed something, so the pair
    is dropped and counted rather than guessed at.
    """
    en = normalise(en)
    de = normalise(de)
    reason = reject_reason(en, de)
    if reason:
        return "", "", reason
    return en, de, None


_KEY_RE = re.compile(r"[^\W_]+")


def english_key(en: str) -> str:
    """Loose identity of an English segment, used to keep dev/test unseen.

    Case, punctuation and spacing differences do not make a sentence new, so
    'Click OK.' in test and 'click OK' in train count as the same segment.
    """
    return " ".join(_KEY_RE.findall(en.casefold()))
