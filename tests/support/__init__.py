"""Helpers shared by test modules (never imported from a test module by another)."""
