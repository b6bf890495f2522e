"""Tagging: sub-word alignment, windowing, batched prediction, valid BIO output."""
