"""The experiments of the book, one file each: ``<chapter>/<stem>.py`` declares one experiment.

Each chapter is a package (``introduction``, ``stability``, ...) whose ``__init__`` holds what its
experiments share and re-exports them; :func:`companion.registry.registry` imports every module
under this package, so a new file joins by itself.
"""
