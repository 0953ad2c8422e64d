"""Shared by every stage: the check of each stage's declared variables."""
