"""The value types of a Lustre file system's props: version, compression, log level, metadata configuration."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from aws_cdk import aws_fsx as fsx

from .._validate import (
    check_count,
    check_enum,
    known,
)
from ..errors import FmValidationError

#: FileSystemTypeVersion. FSx API CreateFileSystem ``FileSystemTypeVersion``: 2.12 is not supported for PERSISTENT_2
#: with a metadata configuration; 2.15 is supported by every Lustre deployment type and recommended for new file
#: systems. That EFA-enabled file systems need 2.15 as well was not seen in that text (UNCONFIRMED).
LUSTRE_VERSION = "2.15"  # FSx API CreateFileSystem FileSystemTypeVersion (2.15: recommended, every deployment type)

_METADATA_IOPS_TIERS = (1500, 3000, 6000, 12000)
_METADATA_IOPS_STEP = 12000
_METADATA_IOPS_MAX = 192000


class LustreDataCompression(str, Enum):
    """``DataCompressionType``."""

    NONE = "NONE"
    LZ4 = "LZ4"


class LustreLogLevel(str, Enum):
    """``LogConfiguration.Level``: which data repository events FSx logs to CloudWatch Logs."""

    WARN_ERROR = "WARN_ERROR"
    WARN_ONLY = "WARN_ONLY"
    ERROR_ONLY = "ERROR_ONLY"
    DISABLED = "DISABLED"


class LustreMetadataMode(str, Enum):
    AUTOMATIC = "AUTOMATIC"
    USER_PROVISIONED = "USER_PROVISIONED"


def valid_metadata_iops(iops: int) -> bool:
    """1500, 3000, 6000, 12000, or a multiple of 12000 up to 192000."""
    if iops in _METADATA_IOPS_TIERS:
        return True
    return 0 < iops <= _METADATA_IOPS_MAX and iops % _METADATA_IOPS_STEP == 0


@dataclass(frozen=True)
class LustreMetadataConfiguration:
    """``MetadataConfiguration``: AUTOMATIC (FSx scales metadata IOPS with capacity) or USER_PROVISIONED IOPS."""

    mode: LustreMetadataMode
    iops: int | None = None

    @classmethod
    def automatic(cls) -> LustreMetadataConfiguration:
        return cls(LustreMetadataMode.AUTOMATIC)

    @classmethod
    def user_provisioned(cls, iops: int) -> LustreMetadataConfiguration:
        return cls(LustreMetadataMode.USER_PROVISIONED, iops)

    def __post_init__(self) -> None:
        """The direct constructor and both factories refuse a bad mode/IOPS combination at once (issue 18 section 5);
        the file system checks the deployment type."""
        self.validate()

    def validate(self) -> None:
        mode = check_enum("metadata_configuration.mode", self.mode, LustreMetadataMode)
        if mode is LustreMetadataMode.AUTOMATIC:
            if self.iops is not None:
                raise FmValidationError("metadata_configuration.iops", self.iops, "None in AUTOMATIC mode")
            return
        if self.iops is None:
            raise FmValidationError("metadata_configuration.iops", None, "set in USER_PROVISIONED mode")
        iops = check_count("metadata_configuration.iops", self.iops, minimum=1)
        if known(iops) and not valid_metadata_iops(iops):
            raise FmValidationError(
                "metadata_configuration.iops",
                self.iops,
                "1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000",
            )

    def to_cfn(self) -> fsx.CfnFileSystem.MetadataConfigurationProperty:
        return fsx.CfnFileSystem.MetadataConfigurationProperty(mode=self.mode.value, iops=self.iops)
