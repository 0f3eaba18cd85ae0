"""The structure passes, one job each, run in order by ``structure.pipeline`` over one ``PageLayout``."""
