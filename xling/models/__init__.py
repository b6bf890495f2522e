"""Model loading: one function turns a model spec into `(model, tokenizer)`."""

from xling.models.loading import load_model, model_label, resolve_model_dir

__all__ = ["load_model", "resolve_model_dir", "model_label"]
