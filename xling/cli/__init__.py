"""The `xling` command line: thin wrappers that call plain functions of the package."""

from xling.cli.app import app, main

__all__ = ["app", "main"]
