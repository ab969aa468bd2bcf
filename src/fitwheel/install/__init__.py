"""Downloads, the unpacked-wheel cache, and the all-or-nothing environment writer."""
