"""AdaptedModel: a frozen Hugging Face encoder with named adapters, fusions and heads.

Adapters attach through forward hooks on the encoder's own sub-modules (see `xling/models/families.py`), so the
modelling code is never copied: where in a layer, and with what arithmetic, is `xling/adapters/placement.py`'s,
for post- and pre-LayerNorm layers alike. LoRA's updates are added to the attention projections' outputs (to its
third of a fused query-key-value projection's).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import product

import torch
import torch.nn.functional as F
from torch import nn

from xling.adapters.composition import Fuse, Setup, Stack, adapter_names, as_stack, check_name, fusion_names
from xling.adapters.fusion import AdapterFusion, FusionConfig
from xling.adapters.placement import PLACEMENTS
from xling.adapters.registry import KINDS, kind_of
from xling.adapters.row_split import pass_cost, row_groups
from xling.adapters.weights import base_model_fingerprint
from xling.errors import XlingError
from xling.models.families import family_of

SITES = ("attn", "ffn")
PROJECTIONS = ("query", "key", "value")


@dataclass
class ParameterCount:
    trainable: int
    total: int

    def __str__(self) -> str:
        return f"{self.trainable:,} trainable of {self.total:,} parameters ({100 * self.trainable / self.total:.2f}%)"


class AdaptedModel(nn.Module):
    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.family = family_of(encoder.config)
        self.paths = self.family.paths
        base = encoder.base_model
        self._layers = base.get_submodule(self.paths.layers)
        self.adapters = nn.ModuleDict()
        self.fusions = nn.ModuleDict()
        self.heads = nn.ModuleDict()
        self.active: Stack | None = None
        self._sites: set[tuple[int, str]] = set()  # (layer, site) pairs the active setup touches
        self._plans: dict = {}  # (layer, site) -> what runs there, resolved once per activation
        self._reads_projection: set[tuple[int, str]] = set()  # sites where an adapter reads h (Houlsby)
        self._norms: dict = {}  # (layer, site) -> the adapter's own LayerNorm, where one applies
        self._invertible = None
        self._updates: dict = {}  # (layer, projection) -> the active adapters' updates added to its output
        self._hooked: set[tuple[int, str]] = set()  # projections with a hook
        self._removed_layers: frozenset[int] = frozenset()  # layers whose adapters are switched off
        self._captured: dict = {}
        # the projections each hooked Linear computes: one, or the three thirds of a fused one
        paths = {target: self.paths.projection(target) for target in PROJECTIONS}
        self._computes = {path: [t for t in PROJECTIONS if paths[t] == path] for path in paths.values()}
        # of the weights as loaded: training may later change how the frozen ones are stored
        self.fingerprint = base_model_fingerprint(encoder, len(self._layers))
        self._install_hooks(base)

    # ---- structure -------------------------------------------------------------

    @property
    def config(self):
        return self.encoder.config

    @property
    def hidden_size(self) -> int:
        return self.encoder.get_input_embeddings().embedding_dim

    @property
    def num_layers(self) -> int:
        return len(self._layers)

    def layer_norm_module(self, layer: int, site: str) -> nn.LayerNorm:
        """The LayerNorm after a sublayer (what `train_layer_norms` copies); a pre-LayerNorm family has none."""
        if self.paths.pre_norm:
            raise XlingError(
                f"{self.family.title} normalises before each sublayer: there is no LayerNorm after it for an adapter "
                "to train (train_layer_norms)"
            )
        return self._layers[layer].get_submodule(self.paths.site(site)[1])

    def projection_module(self, layer: int, target: str) -> nn.Linear:
        """The Linear that computes the attention's `query`, `key` or `value` projection of one layer."""
        return self._layers[layer].get_submodule(self.paths.projection(target))

    def projection_shape(self, layer: int, target: str) -> tuple[int, int]:
        """(in, out) features of one projection: of its third, where one Linear computes all three."""
        linear = self.projection_module(layer, target)
        return linear.in_features, linear.out_features // len(self._computes[self.paths.projection(target)])

    def add_adapter(self, name: str, config) -> nn.Module:
        """A new adapter of the kind `config` belongs to (see `registry.KINDS`)."""
        check_name(name)
        if name in self.adapters:
            raise XlingError(f"an adapter named {name!r} is already loaded")
        config.check_fits(self.hidden_size, self.num_layers)
        adapter = kind_of(config).build(config, self)
        self._hook_projections(adapter)
        self.adapters[name] = adapter.to(self._device_dtype()[0])
        return adapter

    def add_fusion(self, names: list[str] | tuple[str, ...], config: FusionConfig | None = None) -> AdapterFusion:
        fuse = Fuse(*names)
        missing = [n for n in fuse if n not in self.adapters]
        if missing:
            raise XlingError(f"cannot fuse adapters that are not loaded: {', '.join(missing)}")
        configs = [self.adapters[n].config for n in fuse]
        if unfusable := [(n, kind_of(c).name) for n, c in zip(fuse, configs) if not kind_of(c).fusable]:
            fusable = [kind.name for kind in KINDS.values() if kind.fusable]
            names = ", ".join(n for n, _ in unfusable)
            raise XlingError(
                f"AdapterFusion mixes {' and '.join(fusable)} adapters; {names} "
                f"{'is' if len(unfusable) == 1 else 'are'} {unfusable[0][1]}"
            )
        if len({self.adapters[n].fused_placement() for n in fuse}) > 1:
            raise XlingError("fused adapters must share placement and leave_out")
        first = self.adapters[fuse.children[0]]
        fusion = AdapterFusion(
            list(fuse), config or FusionConfig(), self.hidden_size, first.adapted_layers, first.block_sites()
        )
        self.fusions[fuse.name] = fusion.to(self._device_dtype()[0])
        return fusion

    def add_head(self, name: str, head: nn.Module) -> None:
        # a fusion's head is named after its adapters, "a,b"
        self.heads[",".join(check_name(part) for part in name.split(","))] = head.to(self._device_dtype()[0])

    def delete(self, name: str) -> None:
        """Remove an adapter (or fusion) and its head."""
        for store in (self.adapters, self.fusions, self.heads):
            if name in store:
                del store[name]

    @contextmanager
    def adding(self, name: str):
        """The block that loads the weights of adapter (or fusion) `name`, just added: on any failure it is
        deleted again, head and all, so that a refused file leaves the model as it was."""
        try:
            yield
        except BaseException:
            self.delete(name)
            raise

    def _device_dtype(self):
        param = next(self.encoder.parameters())
        return param.device, param.dtype

    # ---- activation and training ------------------------------------------------

    def set_active(self, setup: Setup | None) -> None:
        if setup is None:
            self.active = None
            self._sites, self._plans, self._norms, self._invertible = set(), {}, {}, None
            self._reads_projection, self._updates = set(), {}
            return
        stack = as_stack(setup)
        missing = [n for n in adapter_names(stack) if n not in self.adapters]
        missing += [f for f in fusion_names(stack) if f not in self.fusions]
        if missing:
            raise XlingError(
                f"not loaded: {', '.join(missing)} (loaded adapters: {', '.join(self.adapters) or 'none'})"
            )
        self.active = stack
        self._sites = {
            (i, site)
            for name in adapter_names(stack)
            for i in range(self.num_layers)
            for site in SITES
            if i not in self._removed_layers
            and (self.adapters[name].block(i, site) is not None or self.adapters[name].layer_norm(i, site) is not None)
        }
        self._plans = {key: self._plan(*key) for key in self._sites}
        self._reads_projection = {
            key for key, plan in self._plans.items() if any(not normalised for _, normalised, *_ in plan)
        }
        self._norms = {key: norm for key in self._sites if (norm := self._site_layer_norm(*key)) is not None}
        self._invertible = getattr(self.adapters[adapter_names(stack)[0]], "invertible", None)
        self._updates = {}  # LoRA's: what each projection's output gains
        for i, target in product(range(self.num_layers), PROJECTIONS):
            updates = [u for n in adapter_names(stack) if (u := self.adapters[n].projection(i, target)) is not None]
            if updates and i not in self._removed_layers:
                self._updates[(i, target)] = updates

    @contextmanager
    def activated(self, setup: Setup | None):
        previous = self.active
        self.set_active(setup)
        try:
            yield self
        finally:
            self.set_active(previous)

    @contextmanager
    def without_layers(self, layers):
        """Switch off every adapter (and fusion) in `layers`, e.g. for ablations; no retraining."""
        previous = self._removed_layers
        self._removed_layers = frozenset(layers)
        self.set_active(self.active)
        try:
            yield self
        finally:
            self._removed_layers = previous
            self.set_active(self.active)

    def train_adapter(self, setup: Setup, train: list[str]) -> ParameterCount:
        """Activate `setup`, freeze everything, then unfreeze the named adapters, fusions and heads."""
        self.set_active(setup)
        for param in self.parameters():
            param.requires_grad_(False)
        for name in train:
            found = False
            for store in (self.adapters, self.fusions, self.heads):
                if name in store:
                    store[name].requires_grad_(True)
                    found = True
            if not found:
                raise XlingError(f"nothing named {name!r} to train")
        self.train()
        return self.parameter_count()

    def parameter_count(self) -> ParameterCount:
        params = list(self.parameters())
        return ParameterCount(sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params))

    def fusion_penalty(self) -> torch.Tensor | float:
        """The L2 pull of the active fusions' value matrices towards identity."""
        if self.active is None:
            return 0.0
        return sum((self.fusions[f].value_penalty() for f in fusion_names(self.active)), 0.0)

    # ---- forward ------------------------------------------------------------------

    def forward(self, input_ids=None, attention_mask=None, split_rows: bool = True, **kwargs) -> torch.Tensor:
        """Last hidden states of the encoder with the active adapters (padding positions carry no meaning).

        With `split_rows`, on a device and in a dtype in `PASS_COST_TOKENS`, a right-padded batch whose rows
        differ much in length runs as several passes over rows of similar length, each cut to its own width
        (`row_groups`): the same numbers for the real tokens, without the work on padding."""
        cost = pass_cost(input_ids.device) if input_ids is not None else None
        groups = None
        if split_rows and cost is not None and attention_mask is not None and not kwargs:
            groups = row_groups(attention_mask, cost)
        if groups is None:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        width = input_ids.shape[1]
        parts, order = [], []
        for rows, row_width in groups:
            index = torch.tensor(rows, device=input_ids.device)
            hidden = self.encoder(
                input_ids=input_ids[index, :row_width], attention_mask=attention_mask[index, :row_width]
            ).last_hidden_state
            parts.append(F.pad(hidden, (0, 0, 0, width - row_width)))
            order += rows
        return torch.cat(parts).index_select(0, torch.tensor(order, device=input_ids.device).argsort())

    def invert_embeddings(self, hidden: torch.Tensor) -> torch.Tensor:
        """Undo the active invertible adapter (the bottom adapter's), e.g. before a language-model output layer."""
        return self._invertible.inverse(hidden) if self._invertible is not None else hidden

    # ---- hooks ----------------------------------------------------------------------

    def _install_hooks(self, base: nn.Module) -> None:
        base.get_submodule(self.paths.embeddings).register_forward_hook(self._after_embeddings)
        placement = PLACEMENTS[self.paths.pre_norm](self)
        for i, layer in enumerate(self._layers):
            for site in SITES:
                placement.install(layer, i, site)

    def _hook_projections(self, adapter: nn.Module) -> None:
        """Hooks on the attention projections `adapter` updates (LoRA's), each Linear hooked once: a projection no
        adapter updates pays nothing, and stays free to be replaced (int8 quantisation replaces the Linear modules
        it quantises, and keeps those that are hooked)."""
        for i, target in product(range(self.num_layers), PROJECTIONS):
            path = self.paths.projection(target)
            if adapter.projection(i, target) is not None and (i, path) not in self._hooked:
                self.projection_module(i, target).register_forward_hook(partial(self._after_projection, i, path))
                self._hooked.add((i, path))

    def _after_projection(self, i, path, module, args, output):
        """The Linear's output with the active updates of each projection it computes added (to its third)."""
        deltas = [
            sum(update(args[0]) for update in updates) if (updates := self._updates.get((i, target))) else None
            for target in self._computes[path]
        ]  # several LoRAs in a Stack add up
        if all(delta is None for delta in deltas):
            return None
        if len(deltas) == 1:
            return output + deltas[0]
        width = output.shape[-1] // len(deltas)
        return output + torch.cat(
            [output.new_zeros(*output.shape[:-1], width) if d is None else d for d in deltas], dim=-1
        )

    def _after_embeddings(self, module, args, output):
        return self._invertible(output) if self._invertible is not None else None

    def _site_layer_norm(self, i: int, site: str) -> nn.LayerNorm | None:
        """The adapter's own LayerNorm copy (train_layer_norms), last one in the setup wins."""
        override = None
        for name in adapter_names(self.active):
            norm = self.adapters[name].layer_norm(i, site)
            override = norm if norm is not None else override
        return override

    def _plan(self, i: int, site: str) -> list[tuple]:
        """The active composition at one site, bottom to top: adapters and fusions with their modules."""
        plan = []
        for child in self.active:
            if isinstance(child, Fuse):
                layer = self.fusions[child.name].layer(i, site)
                if layer is not None:
                    blocks = [self.adapters[n].block(i, site) for n in child]
                    plan.append(("fuse", self.adapters[child.children[-1]].reads_normalised, layer, blocks))
            elif (block := self.adapters[child].block(i, site)) is not None:
                plan.append(("adapter", self.adapters[child].reads_normalised, block, None))
        return plan
