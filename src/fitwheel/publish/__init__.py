"""Variant wheels from plain wheels, and static variant indexes."""
