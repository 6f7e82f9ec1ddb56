"""The exceptions of the twinscale Python API.

Each mirrors an error type of the C++ layers; its message is the one the `twinscale`
command prints after "twinscale: error: " (it names the file, key, option, rank or op and
says what would be valid). ``exit_code`` is the status the command exits with.

    Error                 every twinscale error
    ├── InputError        bad input (exit 1): twinscale::Error and its kinds below
    │   ├── ConfigError, JobError, ScheduleError, InputFileError, TopologyError,
    │   │   FaultError, SimError, BackendError, ChakraError, StoreError, DiagnoseError
    │   └── UsageError    an unknown option or sub-command, a value outside its choices (exit 2)
    └── InternalError     a broken invariant inside twinscale (exit 3): a bug to report
"""


class Error(Exception):
    """Every error raised by twinscale."""

    exit_code = 1


class InputError(Error):
    """Bad input: a file, key, option value, rank or op that cannot be used."""


class ConfigError(InputError):
    """A job, cluster, fault, recovery or calibration file or option that cannot be used."""


class JobError(InputError):
    """A job that cannot be lowered (divisibility, limits)."""


class ScheduleError(InputError):
    """A schedule that cannot run (validator: rank, op and reason)."""


class InputFileError(InputError):
    """A file that cannot be read as an input (missing, not a regular file, too large)."""


class TopologyError(InputError):
    """A fabric that cannot be built or a placement that does not fit it."""


class FaultError(InputError):
    """A fault plan, fault model or recovery policy that cannot be used."""


class SimError(InputError):
    """A simulation that cannot be set up or run."""


class BackendError(InputError):
    """The real backend (MPI, NCCL, CUDA) cannot run the schedule."""


class ChakraError(InputError):
    """A Chakra execution trace that cannot be mapped to a schedule."""


class StoreError(InputError):
    """A sweep's results store that cannot be opened or does not match its study."""


class DiagnoseError(InputError):
    """A trace, per-rank CSV or run directory that diagnose cannot read."""


class UsageError(InputError):
    """An unknown option or sub-command, or an option value outside its choices."""

    exit_code = 2


class InternalError(Error):
    """A broken invariant inside twinscale: a bug, not bad input."""

    exit_code = 3


__all__ = [
    "Error", "InputError", "ConfigError", "JobError", "ScheduleError", "InputFileError",
    "TopologyError", "FaultError", "SimError", "BackendError", "ChakraError", "StoreError",
    "DiagnoseError", "UsageError", "InternalError",
]
