"""The one error a plugin's failure becomes."""

from __future__ import annotations

from fitwheel.errors import InputError


class PluginError(InputError):
    """An allowed plugin that could not give an answer fitwheel can use (it hung, crashed,
    printed junk, answered out of grammar or for another namespace), or whose files differ
    from the hashes pinned for it. The message names the plugin and says what to do."""

    def __init__(self, plugin: str, problem: str, advice: str = "") -> None:
        self.plugin = plugin
        self.problem = problem
        advice = advice or (
            "nothing was installed; fix or update the plugin, or stop allowing it "
            "(remove --allow-plugin, or its [plugins.allow] table)"
        )
        super().__init__(f"variant provider plugin {plugin}: {problem.rstrip('.')}; {advice}.")
