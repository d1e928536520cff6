"""Stackelberg Speaker: persuasive utterances for LLM agents in social deduction games."""

import signal

__version__ = "0.1.0"

#: the exit status of a command stopped by Ctrl-C: 128 + SIGINT, as a shell reports it
INTERRUPTED_STATUS = 128 + signal.SIGINT
