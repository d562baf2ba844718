"""Node-side set-up, one way for every backend: steps (scripts, files, commands) collected from the library's parts
and the user, delivered inline in user data or as a content-addressed S3 asset with a small loader.

- :class:`NodeBootstrap`, :class:`BootstrapStep`, :class:`BootstrapDelivery`, :class:`NodeBootstrapLogs`
  (:mod:`.node_bootstrap`): the steps and their delivery; :meth:`NodeBootstrap.script_action` gives them as a
  :class:`ScriptAction` (a static loader's ``s3://`` URL and its arguments) for script-URL consumers such as
  ParallelCluster ``CustomActions``.
- :mod:`.loader`: the loader (user data, or a static file taking arguments) and the runner (in the archive).
- :mod:`.archive`: deterministic ``tar.gz`` archives and their base64 form in user data.
- :mod:`.size`: user-data size from the Python-side text, EC2's 16 KB limit.

Floor: below ``compute`` (GpuLaunchTemplate, fleets) and the backends (``pcs``, ``eks``), which all consume it.
"""

from .archive import deterministic_tar_gz, embedded_files_commands, lift_embedded_files, read_tar_gz
from .loader import LOG_DIR, STATE_DIR, render_loader, render_static_loader
from .node_bootstrap import (
    BUCKET_NAME_BYTES,
    FINALIZE_PRIORITY,
    BootstrapDelivery,
    BootstrapStep,
    NodeBootstrap,
    NodeBootstrapLogs,
    ScriptAction,
    default_bootstrap_name,
    step_name,
    synthesizer_publishes_file_assets,
    user_data_size_errors,
)
from .size import (
    MAX_USER_DATA_BYTES,
    REFERENCE_BYTES,
    check_user_data_size,
    estimated_size_bytes,
    text_size_bytes,
)

__all__ = [
    "BUCKET_NAME_BYTES",
    "FINALIZE_PRIORITY",
    "LOG_DIR",
    "MAX_USER_DATA_BYTES",
    "REFERENCE_BYTES",
    "STATE_DIR",
    "BootstrapDelivery",
    "BootstrapStep",
    "NodeBootstrap",
    "NodeBootstrapLogs",
    "ScriptAction",
    "check_user_data_size",
    "default_bootstrap_name",
    "deterministic_tar_gz",
    "embedded_files_commands",
    "estimated_size_bytes",
    "lift_embedded_files",
    "read_tar_gz",
    "render_loader",
    "render_static_loader",
    "step_name",
    "synthesizer_publishes_file_assets",
    "text_size_bytes",
    "user_data_size_errors",
]
