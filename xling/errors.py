"""The one error type the command line turns into a one-line message and a non-zero exit."""


class XlingError(Exception):
    """A problem the user can fix: bad input, missing files, mismatched adapters."""
