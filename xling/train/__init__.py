"""Training: one shared loop (`loop.py`) and one file per objective."""
