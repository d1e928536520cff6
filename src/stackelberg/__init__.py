"""Stackelberg Speaker: persuasive utterances for LLM agents in social deduction games."""

__version__ = "0.1.0"
