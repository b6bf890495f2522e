"""Data: reading text corpora and CoNLL-style NER files."""
