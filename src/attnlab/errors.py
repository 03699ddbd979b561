"""Exceptions that carry a message meant for the user.

Library code raises these; the CLI turns them into one line on stderr and a
non-zero exit, without a traceback.
"""


class AttnlabError(Exception):
    """Base class: the message names the problem and what to do about it."""


class ConfigError(AttnlabError, ValueError):
    """An impossible or unknown configuration value."""


class CorpusError(AttnlabError):
    """A corpus that is missing, empty, not UTF-8 or too short."""


class CheckpointError(AttnlabError):
    """A checkpoint that is missing, corrupt or does not match the config."""


class UsageError(AttnlabError):
    """A command-line argument that argparse (or a check beside it) refused."""


class OutputError(AttnlabError, OSError):
    """An output path that cannot be written (missing permission, full disk, a file in the way)."""


class RunFolderError(AttnlabError):
    """A run folder that holds another run or is in use by another process."""


class RunFolderBusy(RunFolderError):
    """A run (or output) folder whose lock another live process holds; ``holder`` names it."""

    def __init__(self, message: str, holder: str = "another process"):
        super().__init__(message)
        self.holder = holder


class DataError(AttnlabError):
    """A JSON file given to a command that is missing, damaged, too large or too deeply nested."""
