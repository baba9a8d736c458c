"""The versions of attention_lib and PyTorch that this build ran with, for the footer of every page.

The test suite runs every example on the pages in the same environment that builds the site, so these
are the versions the examples were verified with. They are read from the installed distributions'
metadata (``importlib.metadata``), which needs no import of torch. ``overrides/partials/copyright.html``
shows them with the words of ``extra.ui.verified_with``, which each language overrides in its i18n entry.
"""

from __future__ import annotations

from importlib.metadata import version

from jinja2 import Environment
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files


def on_env(env: Environment, config: MkDocsConfig, files: Files) -> Environment:
    # A template global rather than an entry of config.extra: mkdocs-static-i18n rebuilds config.extra for
    # each language from mkdocs.yml, while every language's build gets this environment hook again.
    env.globals["verified_with"] = {"attention_lib": version("attention_lib"), "torch": version("torch")}
    return env
