"""xling: named-entity recognition for low-resource languages with MAD-X adapters."""

__version__ = "0.1.0"


def __getattr__(name):
    # `from xling import Tagger` without importing torch for `xling --version`.
    if name == "Tagger":
        from xling.tagging.tagger import Tagger

        return Tagger
    raise AttributeError(name)
