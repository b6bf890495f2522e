"""Analyses: fusion attention, layer ablations (the seed papers), the confidence of the tags, parameter budgets."""
