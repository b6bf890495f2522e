"""Tagging schemes, all read into IOB2: IOB1, IOB2, IOE, BIOES (BILUO: U- and L- for S- and E-) and IO.

A data set's scheme is given or detected from the prefixes of its tags (`detect`): U- or L- say BILUO; S- or E-
with B- say BIOES, E- without B- IOE; B- and I- alone IOB1 or IOB2 (read alike: an I- that starts an entity
starts it); bare types (`LOC`) IO, where a run of one type is one entity. A tag that fits no scheme, or not the
one given, is refused, never turned into a type of its own (`U-LOC` is not a type `U-LOC`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from xling.errors import XlingError

UNJUDGED = "?"
SCHEMES = ("auto", "iob1", "iob2", "ioe", "bioes", "biluo", "io")
SCHEME_HELP = "Tagging scheme of the data: auto (detected), iob1, iob2, ioe, bioes, biluo or io; read as IOB2."
PREFIXED = re.compile(r"^([BIESLU])-(\S+)$")
BARE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")  # an IO tag: a type with no prefix
PREFIXES = {  # the prefixes each scheme writes: begin, inside, end, single
    "iob1": "BI",
    "iob2": "BI",
    "ioe": "IE",
    "bioes": "BIES",
    "biluo": "BILU",
}
MEANING = {"B": "begin", "I": "inside", "E": "end", "L": "end", "S": "single", "U": "single"}


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise XlingError(f"scheme must be one of {', '.join(SCHEMES)}, not {scheme!r}")
    return scheme


def parts(tag: str) -> tuple[str, str] | None:
    """(prefix, type) of a prefixed tag, ("", type) of a bare one, None for O and `?`."""
    if tag in ("O", UNJUDGED):
        return None
    if match := PREFIXED.match(tag):
        return match.group(1), match.group(2)
    return ("", tag) if BARE.match(tag) else ("?", tag)


def detect(tags: Iterable[str]) -> str:
    """The scheme a data set's tags are in (see the module's docstring); iob2 for one without entities."""
    prefixes = {found[0] for tag in tags if (found := parts(tag))}
    if "" in prefixes:
        return "io" if prefixes == {""} else "mixed"
    if prefixes & {"U", "L"}:
        return "biluo"
    if prefixes & {"S", "E"}:
        return "bioes" if prefixes & {"B", "S"} else "ioe"
    return "iob2"


def fits(tag: str, scheme: str) -> bool:
    found = parts(tag)
    if found is None:
        return True
    prefix, _ = found
    return prefix == "" if scheme == "io" else prefix in PREFIXES.get(scheme, "")


def unfit(tags: list[str], scheme: str) -> int | None:
    """The index of the first tag that does not fit `scheme` (with `mixed`, the first bare type); None if all fit."""
    if scheme == "mixed":
        return next((i for i, tag in enumerate(tags) if (found := parts(tag)) and found[0] == ""), None)
    return next((i for i, tag in enumerate(tags) if not fits(tag, scheme)), None)


def misfit(tag: str, scheme: str) -> str:
    """Why `tag` is refused."""
    if scheme == "mixed":
        return f"tag {tag!r} is a bare type beside prefixed tags, which no tagging scheme mixes"
    if (found := parts(tag)) and found[0] == "?":
        return f"{tag!r} is not a NER tag (O, a type with a prefix B-, I-, E-, S-, L- or U-, a bare type, or ?)"
    written = f"prefixes {', '.join(p + '-' for p in PREFIXES[scheme])}" if scheme in PREFIXES else "bare types"
    return f"tag {tag!r} is not {scheme.upper()}, which writes O and {written}"


def to_iob2(tags: list[str], scheme: str = "auto") -> list[str]:
    """One sentence's tags in IOB2, read as `scheme` (auto: detected from these tags alone; data sets are detected
    whole: `data_in_iob2`). A tag that does not fit is refused."""
    scheme = detect(tags) if scheme == "auto" else scheme
    if (bad := unfit(tags, scheme)) is not None:
        raise XlingError(misfit(tags[bad], scheme))
    return _converted(tags, scheme)


def data_in_iob2(
    tag_lists: list[list[str]], scheme: str, where: Callable[[int, int], str], names: list[str] | None = None
) -> list[list[str]]:
    """A data set's sentences' tags in IOB2, read as `scheme` or, with auto, as the scheme of all of them (of its
    label `names`, where it has them); the first tag that does not fit is refused in one line beginning with
    `where(sentence, tag)`, the place it is at."""
    found = detect(names or (tag for tags in tag_lists for tag in tags)) if scheme == "auto" else scheme
    for sentence, tags in enumerate(tag_lists):
        if (bad := unfit(tags, found)) is not None:
            raise XlingError(f"{where(sentence, bad)}: {misfit(tags[bad], found)}")
    return [_converted(tags, found) for tags in tag_lists]


def _converted(tags: list[str], scheme: str) -> list[str]:
    """IOB2 of tags that fit `scheme`."""
    out, open_type = [], None  # open_type: the type of an entity the next tag may continue
    for tag in tags:
        found = parts(tag)
        if found is None:
            out.append(tag)
            open_type = None
            continue
        prefix, kind = found
        meaning = "inside" if prefix == "" else MEANING[prefix]
        starts = meaning in ("begin", "single") or open_type != kind
        out.append(("B-" if starts else "I-") + kind)
        open_type = None if meaning in ("end", "single") else kind
    return out
