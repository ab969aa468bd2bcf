"""Source builds: the one sdist reader, PEP 517/518/660 backends through pyproject-hooks, and the
builder that turns sdists into cached wheels in isolated build environments."""
