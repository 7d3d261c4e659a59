"""Named end-to-end runs (demo.toml, wikipedia.toml, template.toml) and the runner behind `corpusprep run`:
config.py (TOML -> stage plan), runner.py (skip, resume, rerun), stages.py (what each stage calls), report.py.
"""
