"""Bounded, in-process calls into vendor libraries (NVML, Level Zero) through ctypes.

Libraries are loaded by fixed soname or absolute path only (never ``ctypes.util.find_library``,
which spawns ``ldconfig``), CUDA itself is never initialised, and every query runs in a daemon
thread with a deadline, so a hung driver costs at most the deadline. Each library is reached
through a :class:`~fitwheel.platform.native.transport.Transport`, so tests replay recorded
answers (:mod:`fitwheel.platform.native.replay`) instead of needing the hardware.
"""
