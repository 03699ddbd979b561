"""Figures and reports, rebuilt from result JSON alone."""
