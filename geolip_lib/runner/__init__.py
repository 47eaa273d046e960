"""Running a profile's jobs: planning, the local (parallel) executor and the Ray executor.

``run_all.py`` is the command line over this package.
"""
