"""Subcommands of `rooflinectl`: the group is in main.py, each command in its own module."""
