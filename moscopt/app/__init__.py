"""The one front door: open a project, build its parts, start, resume and evaluate runs."""
