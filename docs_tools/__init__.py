"""The site's tooling: the page model, the checks of translations, the notebook and figure generators.

A project of its own (``pyproject.toml`` here, never published) that ``python3 dev.py`` installs, editable, into
``.venv``, so that MkDocs' own ``mkdocs serve`` and ``mkdocs build`` find it, as the hooks need; it may import
``attention_lib``, and nothing imports it but the hooks, ``dev.py`` and the tests (``tests/tooling/test_layers.py``).
The modules and what each owns: CONTRIBUTING.md, "Where things live".
"""
