"""Entity-level scoring with seqeval (strict IOB2)."""

from xling.scoring.entities import score, scores_table

__all__ = ["score", "scores_table"]
