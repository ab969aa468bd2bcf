# Replaced in each built wheel by demo/build_demo.py.
BUILD = "source"
DESCRIPTION = "running from the source tree"
