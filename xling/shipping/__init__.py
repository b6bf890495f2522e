"""How xling's maintainers make what ships inside the package (`xling/pretrained/`), not a user's tool: the
adapters `recipes/pretrained.toml` trains, written by its last step (`run = "ship"`, `adapters.py`), and the
masked-LM head of the embedded encoder (`python -m xling.shipping.head WORKDIR`, `head.py`). `options.py` is
the ship step's options, light for recipe validation."""
