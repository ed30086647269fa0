"""Brute-force oracle and hypothesis property tests of the windowing engine."""
