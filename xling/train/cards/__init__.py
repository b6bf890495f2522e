"""Model cards: the `README.md` beside every adapter and encoder xling trains or exports (`adapter.py`,
`encoder.py`, `peft.py`), from its training report, with what they share (`common.py`)."""
