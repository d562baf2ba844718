"""The create-only properties of the storage resources fmconstructs writes: changing one replaces the resource.

Pure Python (no aws_cdk), so that the ``fmc`` command and tests can read it. Property paths are JSON pointers into the
resource's ``Properties`` (``LustreConfiguration/CopyTagsToBackups``).

Sources, read for this table (cfn-lint 1.58.0, aws-cdk CLI 2.1148.1, botocore 1.44.8):

- cfn-lint 1.58.0 ``cfnlint/data/schemas/resources/*.json`` (schema date 2026-10-20), ``createOnlyProperties``:
  AWS::FSx::FileSystem ``KmsKeyId``, ``SecurityGroupIds``, ``FileSystemType``, ``SubnetIds``, ``BackupId`` (its schema
  marks no nested ``LustreConfiguration`` property); AWS::FSx::DataRepositoryAssociation ``FileSystemId``,
  ``FileSystemPath``, ``DataRepositoryPath``, ``BatchImportMetaDataOnCreate``.
- aws-cdk CLI 2.1148.1 ``db.json.gz`` (@aws-cdk/aws-service-spec, what ``cdk diff`` uses to flag a replacement),
  ``causesReplacement: yes``: AWS::FSx::FileSystem also ``FileSystemTypeVersion`` and, in ``LustreConfiguration``,
  ``DeploymentType``, ``PerUnitStorageThroughput``, ``CopyTagsToBackups``, ``DriveCacheType``, ``ImportPath``,
  ``ExportPath``, ``ImportedFileChunkSize``.
- botocore 1.44.8 fsx 2018-03-01 ``UpdateFileSystemLustreConfiguration`` has no ``CopyTagsToBackups``,
  ``DeploymentType``, ``DriveCacheType``, ``EfaEnabled``, ``ExportPath``, ``ImportPath`` or ``ImportedFileChunkSize``:
  FSx cannot change them on an existing file system. ``EfaEnabled`` is marked by neither schema (UNCONFIRMED whether
  CloudFormation then replaces the file system or fails the update: both lose the deploy), so it is listed here as a
  create-time choice. ``PerUnitStorageThroughput`` is in the update API (PERSISTENT_2 throughput can change in place)
  but the spec still marks it as replacing: UNCONFIRMED which CloudFormation does; treat it as create-only.
"""

from __future__ import annotations

from collections.abc import Mapping

FILE_SYSTEM = "AWS::FSx::FileSystem"
DATA_REPOSITORY_ASSOCIATION = "AWS::FSx::DataRepositoryAssociation"

#: Per resource type, the properties whose change replaces the resource (or that FSx cannot change in place).
CREATE_ONLY_PROPERTIES: dict[str, tuple[str, ...]] = {
    FILE_SYSTEM: (
        "FileSystemType",
        "FileSystemTypeVersion",
        "SubnetIds",
        "SecurityGroupIds",
        "KmsKeyId",
        "BackupId",
        "LustreConfiguration/DeploymentType",
        "LustreConfiguration/PerUnitStorageThroughput",
        "LustreConfiguration/CopyTagsToBackups",
        "LustreConfiguration/EfaEnabled",
        "LustreConfiguration/DriveCacheType",
        "LustreConfiguration/ImportPath",
        "LustreConfiguration/ExportPath",
        "LustreConfiguration/ImportedFileChunkSize",
    ),
    DATA_REPOSITORY_ASSOCIATION: (
        "FileSystemId",
        "FileSystemPath",
        "DataRepositoryPath",
        "BatchImportMetaDataOnCreate",
    ),
}


def create_only_values(resource_type: str, properties: Mapping[str, object]) -> dict[str, object]:
    """The create-only properties of one resource's ``Properties`` that are present, by path (absent ones are left
    out: adding one later, even at its default value, is a change of the template)."""
    values: dict[str, object] = {}
    for path in CREATE_ONLY_PROPERTIES.get(resource_type, ()):
        node: object = properties
        for part in path.split("/"):
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is not _ABSENT:
            values[path] = node
    return values


_ABSENT = object()
