"""Third-party variant provider plugins: run one in a child process and check its answer.

The command layer installs an allowed plugin into an isolated environment and hands its
interpreter down (:class:`~fitwheel.plugins.runner.PluginEnv`); this package only runs it
(:mod:`~fitwheel.plugins.runner`, through :mod:`fitwheel.proc`), checks the answer
(:mod:`~fitwheel.plugins.answer`), keeps it per boot (:mod:`~fitwheel.plugins.answers`), and
checks a plugin's files against the hashes pinned for it (:mod:`~fitwheel.plugins.trust`).
"""
