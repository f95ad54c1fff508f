"""The memmap tests, a package so that their ``conftest.py`` does not shadow ``tests/conftest.py``.

Test modules here import the shared constants with ``from conftest import ...``;
without this file pytest would load ``tests/memmap/conftest.py`` under the same
module name and those imports would find the wrong one.
"""
