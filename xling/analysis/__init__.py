"""Analyses of the seed papers: fusion attention, layer ablations, parameter budgets."""
