"""Annotation projection (`xling project`): labels carried from a tagged translation to the words of the target
side they align to (`alignment.py`), written as CoNLL training and dev files (`project.py`; options in
`options.py`)."""
