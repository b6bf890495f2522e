"""Running a right-padded batch whose rows differ much in length as several passes over rows of similar length,
each cut to its own width, where that costs less than one pass over the padding (`AdaptedModel.forward`'s
`split_rows`)."""

from __future__ import annotations

import torch

# What one pass of the encoder costs beside its tokens, in tokens, by device type and the dtype it computes in. fp32
# on 2 CPU cores (a Xeon without AMX): a task-adapter training step took 35 ms plus 0.51 ms a token, the token's
# cost growing with the width as (1 + width / 155) (attention), so 64. bf16 on 2 AMX cores, where a token costs
# less and a pass about as much: 1,024 (`bench/row_split.py`: its nine batches took 0.16 of one pass's time at
# 1,024 and 2,048, 0.21 at 64; the side-by-side benchmark's task-adapter step 0.27 s at 64, 0.22 s at 1,024 and
# in one pass). GPUs are not in the table: there a pass costs its kernel launches (about 20 ms on an H200)
# whatever its size, and one pass over the padded batch was the fastest on every batch of `bench/row_split.py`.
PASS_COST_TOKENS = {("cpu", torch.float32): 64, ("cpu", torch.bfloat16): 1024}
ATTENTION_WIDTH = 155


def pass_cost(device: torch.device) -> float | None:
    """What a pass costs on `device` in the dtype autocast computes in there now (fp32 where it is off); None on a
    device where one pass is the cheapest."""
    kind = device.type
    dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else torch.float32
    return PASS_COST_TOKENS.get((kind, dtype))


def row_groups(attention_mask: torch.Tensor, pass_cost: float) -> list[tuple[list[int], int]] | None:
    """The rows of a right-padded batch as groups of similar length, each with its width, that cost least
    under the cost model above (rows sorted by length, cut into runs by dynamic programming); None when one
    pass is cheapest or the padding is not all on the right."""
    lengths = attention_mask.sum(1)
    width = attention_mask.shape[1]
    positions = torch.arange(width, device=attention_mask.device)
    if int(lengths.sum()) * 1.25 >= len(lengths) * width or not torch.equal(
        attention_mask.bool(), positions < lengths[:, None]
    ):
        return None  # little padding, or padding a cut could not remove
    sizes = lengths.tolist()
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    ordered = [max(1, sizes[i]) for i in order]
    best, cut = [0.0] + [float("inf")] * len(order), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        row_cost = ordered[end - 1] * (1 + ordered[end - 1] / ATTENTION_WIDTH)
        for start in range(end):
            cost = best[start] + (end - start) * row_cost + pass_cost
            if cost < best[end]:
                best[end], cut[end] = cost, start
    groups, end = [], len(order)
    while end:
        groups.append((order[cut[end] : end], ordered[end - 1]))
        end = cut[end]
    return groups[::-1] if len(groups) > 1 else None
