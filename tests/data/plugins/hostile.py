"""Hostile variant provider plugins for fitwheel's tests, one class per misdeed. Each answers
for namespace ``ascend`` when it answers at all."""

import os
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    name: str
    values: list
    multi_value: bool = False
    namespace: str = "ascend"


class _Base:
    namespace = "ascend"

    @classmethod
    def get_all_configs(cls):
        return cls.get_supported_configs()


class Hang(_Base):
    @classmethod
    def get_supported_configs(cls):
        time.sleep(3600)
        return []


class Exit(_Base):
    @classmethod
    def get_supported_configs(cls):
        print("giving up", flush=True)
        os._exit(7)


class Crash(_Base):
    @classmethod
    def get_supported_configs(cls):
        raise RuntimeError("no device driver loaded")


class Flood(_Base):
    @classmethod
    def get_supported_configs(cls):
        line = "x" * 1023 + "\n"
        for _ in range(100 * 1024):  # 100 MB
            sys.stdout.write(line)
        return [Config("npu_type", ["910b"])]


class OtherNamespace(_Base):
    @classmethod
    def get_supported_configs(cls):
        return [Config("npu_type", ["910b"]), Config("level", ["v4"], namespace="x86_64")]


class BuiltinNamespace(_Base):
    namespace = "nvidia"

    @classmethod
    def get_supported_configs(cls):
        return [Config("sm_arch", ["sm_90"], namespace="nvidia")]


class OutOfGrammar(_Base):
    @classmethod
    def get_supported_configs(cls):
        return [Config("npu_type", ["910B; rm -rf /"])]


class Snoop(_Base):
    """Reports what it could see: whether the secret reached it, and where HOME points."""

    @classmethod
    def get_supported_configs(cls):
        seen = "yes" if "AWS_SECRET_ACCESS_KEY" in os.environ else "no"
        home = (
            "temp"
            if os.path.basename(os.environ.get("HOME", "")).startswith("fitwheel-plugin-")
            else "other"
        )
        cwd = "home" if os.getcwd() == os.environ.get("HOME") else "other"
        npu = ["910b"] if seen == "yes" else []
        return [
            Config("secret_seen", [seen]),
            Config("home", [home]),
            Config("cwd", [cwd]),
            Config("npu_type", npu),
        ]
