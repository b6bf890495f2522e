"""Where adapters join a layer: the hooks of each layer layout (`LayerPaths.pre_norm` of the family's record).

Per layer and site, the active composition adds its adapters' outputs o to what the sublayer's output h and its
residual input x make, s = h + x, as the AdapterHub `adapters` library computes it (so its adapters load and give
the same outputs):

- Houlsby placement: o = A(h) (h with the outputs below it), before the residual add and any LayerNorm;
- Pfeiffer placement: o = A(LN(s)), the block's normalised output, and the block's LayerNorm again on top;
- Stack applies these one after another; Fuse mixes several adapters' outputs.

Post-LayerNorm layers (BERT, RoBERTa, XLM-R, ELECTRA, DeBERTa, DistilBERT): the LayerNorm after each sublayer
receives s; a pre-hook hands it s + o, computed from the s the encoder formed (x is never needed; h is captured
only where a Houlsby adapter reads it).

Pre-LayerNorm layers (ModernBERT, XLM-R XL): no LayerNorm follows the sublayer, and the model adds h to the
stream x itself. A pre-hook on the LayerNorm before the sublayer keeps x; a hook on the sublayer's output hands
the model h + o, so that the stream holds x + h + o, what a LayerNorm after it would have received. A Pfeiffer
adapter reads s itself there, as the `adapters` library's adapters do where a block has no LayerNorm after it.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


def compose(plan: list[tuple], total: torch.Tensor, projection, norm: nn.Module | None) -> tuple:
    """`total` (s) and `projection` (h, where given) with each adapter's output added, bottom to top; an adapter
    reading the normalised block output reads `norm(total)`, or `total` itself where the layer has no `norm`."""
    for kind, reads_normalised, module, blocks in plan:
        if not reads_normalised:
            inputs = projection
        elif norm is None:
            inputs = total
        else:  # a functional call: calling the hooked LayerNorm module here would re-enter the hooks
            inputs = F.layer_norm(total, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
        if kind == "adapter":
            output = module(inputs)
        else:
            output = module(inputs, torch.stack([block(inputs) for block in blocks], dim=-2))
        total = total + output
        if projection is not None:
            projection = projection + output
    return total, projection


class Placement:
    """How adapters join the layers of one model: `install` hooks one site of one layer."""

    def __init__(self, model):
        self.model = model  # the AdaptedModel: its active sites, plans and captured tensors


class PostNorm(Placement):
    """Hooks for layers whose LayerNorm follows each sublayer: it receives s + o."""

    def install(self, layer: nn.Module, i: int, site: str) -> None:
        out_path, ln_path = self.model.paths.site(site)
        layer.get_submodule(out_path).register_forward_hook(partial(self.capture_projection, i, site))
        norm = layer.get_submodule(ln_path)
        norm.register_forward_pre_hook(partial(self.before_layer_norm, i, site))
        norm.register_forward_hook(partial(self.after_layer_norm, i, site))

    def capture_projection(self, i, site, module, args, output):
        if (i, site) in self.model._reads_projection:
            self.model._captured[(i, site)] = output

    def before_layer_norm(self, i, site, module, args):
        model = self.model
        if (i, site) not in model._sites:
            return None
        projection = model._captured.pop((i, site), None)
        norm = model._norms.get((i, site), module)
        return (compose(model._plans[(i, site)], args[0], projection, norm)[0],)

    def after_layer_norm(self, i, site, module, args, output):
        norm = self.model._norms.get((i, site))  # an adapter's own copy (`train_layer_norms`), where one applies
        return None if norm is None else norm(args[0])


class PreNorm(Placement):
    """Hooks for layers that normalise before each sublayer: its output h becomes h + o."""

    def install(self, layer: nn.Module, i: int, site: str) -> None:
        out_path, ln_path = self.model.paths.site(site)
        layer.get_submodule(ln_path).register_forward_pre_hook(partial(self.capture_residual, i, site))
        layer.get_submodule(out_path).register_forward_hook(partial(self.after_sublayer, i, site))

    def capture_residual(self, i, site, module, args):
        if (i, site) in self.model._sites:
            self.model._captured[(i, site)] = args[0]

    def after_sublayer(self, i, site, module, args, output):
        model = self.model
        if (i, site) not in model._sites:
            return None
        residual = model._captured.pop((i, site))
        return compose(model._plans[(i, site)], residual + output, output, None)[1]


PLACEMENTS = {False: PostNorm, True: PreNorm}  # by `LayerPaths.pre_norm`
