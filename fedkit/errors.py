"""Errors fedkit raises for bad input; the CLI prints their message without a traceback."""


class FedkitError(Exception):
    """Base class of every error caused by the user's input rather than by a bug."""


class ConfigError(FedkitError, ValueError):
    """An experiment configuration field has an invalid value."""


class DataNotFoundError(FedkitError, FileNotFoundError):
    """A data set is missing from the data root and may not (or could not) be downloaded."""


class DataFileError(FedkitError):
    """A data file exists but cannot be read (truncated, corrupt, wrong format); the message names it."""
