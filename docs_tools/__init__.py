"""The site's tooling: the page model, the checks of translations, the notebook and figure generators.

Imported from the repository root (``python -m …`` there, as ``dev.py`` runs everything); it may import
``attention_lib``, and nothing imports it but the hooks, ``dev.py`` and the tests (``tests/tooling/test_layers.py``).
The modules and what each owns: CONTRIBUTING.md, "Where things live".
"""
