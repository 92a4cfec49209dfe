"""tests: kcoord's test suites; tests.support is what their Python files share.

A regular package (not a namespace one), so that `tests.support` is this repository's even
where another package named `tests` is installed.
"""
