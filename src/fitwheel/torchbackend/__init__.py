"""PyTorch's per-backend indexes: which backend (cpu, cuXXX, rocmX.Y, xpu) fits a target, and the
routing of the torch-ecosystem projects to ``BASE/<backend>/``.

- :mod:`.table`: the bundled data (``fitwheel/data/torch_backends.json``): minimum drivers per
  CUDA backend, the architectures each backend's build of each torch release ships, platforms.
- :mod:`.choose`: pure: every backend checked against a target (under the multi-GPU policy),
  newest fitting first, each rejection with its reason.
- :mod:`.routing`: the project router the index finder consults: variant indexes first (for the
  projects they publish variants for), then the chosen backend's index for the torch projects.
- :mod:`.gpubuild`: the warning for a CUDA or ROCm build resolved for a target without the GPU.
- :mod:`.refresh`: rebuilds the table from an index (a maintainer's job, ``tools/``).
"""
