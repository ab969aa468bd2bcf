"""``fitwheel doctor``: prove that what is installed runs on this hardware.

:func:`diagnose` runs the static checks (:mod:`fitwheel.doctor.static`, from the installed
metadata and the builds' own files, importing nothing of the target) and, with ``run``, the
smoke tests (:mod:`fitwheel.doctor.smoke`, child processes of the target interpreter).
:func:`verify_installed` is the static half for the distributions an install or sync just wrote.
"""
