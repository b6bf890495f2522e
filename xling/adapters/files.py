"""The files of an adapter folder, named here without importing torch: what `xling push`, the cards and the
recipes look for as well as what saving writes.

xling's own names are not `adapter_config.json`: PEFT and AdapterHub both read that name, each with a schema of
its own, so a folder of xling's is never mistaken for theirs, nor theirs for xling's."""

CONFIG_FILE = "xling_adapter.json"
WEIGHTS_FILE = "xling_adapter.safetensors"
HEAD_CONFIG_FILE = "head_config.json"
HEAD_WEIGHTS_FILE = "head_model.safetensors"
FOREIGN_CONFIG_FILE = "adapter_config.json"  # PEFT's and AdapterHub's: read on import, written on export
