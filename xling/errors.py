"""The one error type the command line turns into a one-line message and a non-zero exit."""

import errno
import re
from contextlib import contextmanager

# The HTTP clients under huggingface_hub and datasets (httpx before huggingface_hub 2, httpx2 after).
NETWORK_MODULES = ("httpx", "httpx2", "httpcore", "requests", "urllib3", "aiohttp")


class XlingError(Exception):
    """A problem the user can fix: bad input, missing files, mismatched adapters."""


# torch's CPU allocator, CUDA's, numpy's, Rust's and the system's words for a request the machine cannot meet
ALLOCATION = re.compile(
    r"can(no|')t allocate memory|out of memory|Unable to allocate|not enough memory|memory allocation .*failed",
    re.IGNORECASE,
)


def is_out_of_memory(err: BaseException) -> bool:
    """Memory ran short, whoever said so (an allocator's words, ENOMEM, MemoryError)."""
    return (
        isinstance(err, MemoryError) or getattr(err, "errno", None) == errno.ENOMEM or bool(ALLOCATION.search(str(err)))
    )


def first_line(err: BaseException) -> str:
    """The first line of what an error says, or its type's name where it says nothing: for a one-line message."""
    return (str(err).splitlines() or [type(err).__name__])[0]


def is_network_error(err: BaseException) -> bool:
    """A failure to reach a server (refused, timed out, no route), whichever HTTP client raised it."""
    return type(err).__module__.split(".")[0] in NETWORK_MODULES


@contextmanager
def naming(where: str):
    """An XlingError raised in the block names `where` (the file being loaded), if it does not already."""
    try:
        yield
    except XlingError as err:
        if where in str(err):
            raise
        raise XlingError(f"{where}: {err}") from None
