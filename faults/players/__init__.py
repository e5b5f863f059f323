"""Scripted players of the season run and of tests: see :mod:`base`."""
