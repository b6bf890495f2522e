"""xling: named-entity recognition for low-resource languages with MAD-X adapters."""

__version__ = "0.1.0"
