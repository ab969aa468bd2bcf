"""A look-alike of a published Ascend variant provider plugin, for fitwheel's tests.

Same interface (variantlib 0.2: class methods on a class that is never instantiated) and the
same habits: it logs to stdout, answers empty value lists on a machine without the device, and
honours ``ASCEND_VARIANT_PROVIDER_FORCE_*`` overrides."""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class VariantFeatureConfig:
    name: str
    values: list
    multi_value: bool = False


def _forced(feature):
    value = os.environ.get(f"ASCEND_VARIANT_PROVIDER_FORCE_{feature.upper()}")
    return [value] if value else None


class AscendVariantPlugin:
    namespace = "ascend"
    dynamic = False

    @classmethod
    def get_supported_configs(cls, context=None):
        print("AscendEnvironment.from_system: failed to detect Ascend environment: no npu-smi")
        configs = []
        for feature in ("npu_type", "driver_version", "cann_version"):
            forced = _forced(feature)
            configs.append(VariantFeatureConfig(feature, forced or [], multi_value=not forced))
        return configs

    @classmethod
    def get_all_configs(cls, context=None):
        return cls.get_supported_configs()
